"""Weekly freeze windows in a time zone (behaviour.md, "Approvals and policies": a freeze refuses
production deployments at once, with the end of the freeze).

Every expected instant is written out by hand in UTC; the calendar: 2026-01-05 is a Monday,
Europe/Berlin is UTC+1 in winter and UTC+2 from Sun 2026-03-29 02:00 to Sun 2026-10-25 03:00.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from reconciler.core import freezes, messages
from reconciler.core.freezes import FreezeWindow
from reconciler.errors import ConfigurationError

BERLIN = "Europe/Berlin"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def window(days: str, start: str, end: str, zone: str = BERLIN) -> FreezeWindow:
    return freezes.parse_window(days, start, end, zone)


# -- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "days", "start", "end", "described"),
    [
        (("sat,sun", "00:00", "24:00", BERLIN), {5, 6}, time(0), None,
         "sat,sun 00:00-24:00 Europe/Berlin"),
        (("Saturday, SUN", "18:00", "06:00", "UTC"), {5, 6}, time(18), time(6),
         "sat,sun 18:00-06:00 UTC"),
        (("fri,mon", " 9:30", "17:45", "America/New_York"), {0, 4}, time(9, 30), time(17, 45),
         "mon,fri 09:30-17:45 America/New_York"),
        (("mon,tue,wed,thu,fri,sat,sun", "00:00", "24:00", "UTC"), set(range(7)), time(0), None,
         "mon,tue,wed,thu,fri,sat,sun 00:00-24:00 UTC"),
    ],
    ids=["weekend", "names-and-case", "sorted-days", "every-day"],
)  # fmt: skip
def test_a_window_is_parsed_and_described_as_it_was_set(
    args: tuple[str, str, str, str],
    days: set[int],
    start: time,
    end: time | None,
    described: str,
) -> None:
    parsed = freezes.parse_window(*args)
    assert parsed == FreezeWindow(frozenset(days), start, end, args[3])
    assert parsed.describe() == described


HINTS = {
    "--days": "write e.g. --days sat,sun (mon tue wed thu fri sat sun, or the full names)",
    "--tz": "use an IANA name such as Europe/Berlin or UTC",
    "--from": "write HH:MM, e.g. 18:00",
    "--to": "write HH:MM, e.g. 18:00",
    "--from and --to": "give a different end; for whole days write --from 00:00 --to 24:00",
}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("", "00:00", "24:00", "UTC"), "--days '' is not a list of weekdays"),
        (("sat,xyz", "00:00", "24:00", "UTC"), "--days 'sat,xyz' is not a list of weekdays"),
        (("sat", "00:00", "24:00", "Mars/Olympus"), "--tz 'Mars/Olympus' is not a time zone"),
        (("sat", "25:00", "24:00", "UTC"), "--from '25:00' is not a time of day"),
        (("sat", "9", "24:00", "UTC"), "--from '9' is not a time of day"),
        (("sat", "00:00", "18:60", "UTC"), "--to '18:60' is not a time of day"),
        # Only whole day names or their abbreviations: the first three letters are not enough.
        (("saturnalia", "00:00", "24:00", "UTC"), "--days 'saturnalia' is not a list of weekdays"),
        (("sun,mond", "00:00", "24:00", "UTC"), "--days 'sun,mond' is not a list of weekdays"),
        # A zone is a place: not the server's own zone, whatever that is, nor tzdata's "Factory".
        (("sat", "00:00", "24:00", "localtime"), "--tz 'localtime' is not a time zone"),
        (("sat", "00:00", "24:00", "Factory"), "--tz 'Factory' is not a time zone"),
        (("sat", "00:00", "24:00", "../etc/passwd"), "--tz '../etc/passwd' is not a time zone"),
        # ASCII digits only (int() would read these).
        (("sat", "\u0661\u0660:00", "24:00", "UTC"), "--from '\u0661\u0660:00' is not a time of day"),
        # From a time to the same time is no window (it used to mean 24 hours).
        (("sat", "10:00", "10:00", "UTC"),
         "--from and --to are both 10:00: the window would be empty"),
        # A value with a newline is shown on one line.
        (("sat\nsun", "00:00", "24:00", "UTC"), "--days 'sat\\nsun' is not a list of weekdays"),
    ],
    ids=["no-days", "unknown-day", "unknown-zone", "hour-25", "no-minutes", "minute-60",
         "saturnalia", "partial-name", "localtime", "factory", "a-path", "arabic-digits",
         "same-time", "newline"],
)  # fmt: skip
def test_a_window_that_cannot_be_parsed_says_what_to_write(
    args: tuple[str, str, str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        freezes.parse_window(*args)
    flag = "--from and --to" if message.startswith("--from and --to") else message.split()[0]
    assert (str(refused.value), refused.value.hint) == (message, HINTS[flag])
    assert "\n" not in str(refused.value)


# -- inside or outside, and until when -------------------------------------------------------

WEEKEND = window("sat,sun", "00:00", "24:00")  # Berlin
FRIDAY_NIGHT = window("fri", "22:00", "06:00", "UTC")  # past midnight into Saturday
SUNDAY_NIGHT = window("sun", "20:00", "02:00", "UTC")  # past midnight into next week's Monday
SUNDAY_AND_MONDAY = window("sun,mon", "00:00", "24:00", "UTC")  # across the week's end
SUNDAY = window("sun", "00:00", "24:00")  # Berlin: 23 hours in March, 25 in October
SATURDAY_NIGHT = window("sat", "22:00", "06:00")  # Berlin, through the night the clocks change


@pytest.mark.parametrize(
    ("windows", "now", "ends_at"),
    [
        # Saturday and Sunday are back to back: one freeze from Sat 00:00 to Mon 00:00 Berlin.
        ([WEEKEND], "2026-01-09T22:59:59", None),
        ([WEEKEND], "2026-01-09T23:00:00", "2026-01-11T23:00:00"),
        ([WEEKEND], "2026-01-10T12:00:00", "2026-01-11T23:00:00"),
        ([WEEKEND], "2026-01-11T22:59:59", "2026-01-11T23:00:00"),
        ([WEEKEND], "2026-01-11T23:00:00", None),
        ([WEEKEND], "2026-01-07T12:00:00", None),
        # An end before the start runs past midnight, into the next day only.
        ([FRIDAY_NIGHT], "2026-01-09T21:59:00", None),
        ([FRIDAY_NIGHT], "2026-01-09T22:00:00", "2026-01-10T06:00:00"),
        ([FRIDAY_NIGHT], "2026-01-10T03:00:00", "2026-01-10T06:00:00"),
        ([FRIDAY_NIGHT], "2026-01-10T06:00:00", None),
        ([FRIDAY_NIGHT], "2026-01-08T23:00:00", None),
        # The week wraps: Sunday night runs into Monday, Sunday and Monday make one freeze.
        ([SUNDAY_NIGHT], "2026-01-12T01:00:00", "2026-01-12T02:00:00"),
        ([SUNDAY_NIGHT], "2026-01-11T19:59:00", None),
        ([SUNDAY_AND_MONDAY], "2026-01-11T12:00:00", "2026-01-13T00:00:00"),
        ([SUNDAY_AND_MONDAY], "2026-01-12T23:59:00", "2026-01-13T00:00:00"),
        # Days the clocks change: a local day is 23 or 25 hours long.
        ([SUNDAY], "2026-03-28T23:00:00", "2026-03-29T22:00:00"),
        ([SUNDAY], "2026-03-29T21:59:00", "2026-03-29T22:00:00"),
        ([SUNDAY], "2026-03-29T22:00:00", None),
        ([SUNDAY], "2026-10-24T22:00:00", "2026-10-25T23:00:00"),
        ([SUNDAY], "2026-10-25T22:30:00", "2026-10-25T23:00:00"),
        ([SUNDAY], "2026-10-24T21:59:00", None),
        ([SATURDAY_NIGHT], "2026-03-29T00:30:00", "2026-03-29T04:00:00"),
        ([SATURDAY_NIGHT], "2026-03-29T04:00:00", None),
        ([SATURDAY_NIGHT], "2026-10-25T04:30:00", "2026-10-25T05:00:00"),
        ([SATURDAY_NIGHT], "2026-10-24T19:59:00", None),
        # Several windows: back to back or overlapping make one freeze, a gap does not.
        ([window("sat", "00:00", "24:00"), window("sun", "00:00", "24:00")],
         "2026-01-10T08:00:00", "2026-01-11T23:00:00"),
        ([window("fri", "18:00", "24:00", "UTC"), window("fri", "20:00", "02:00", "UTC")],
         "2026-01-09T19:00:00", "2026-01-10T02:00:00"),
        ([window("sat", "00:00", "12:00", "UTC"), window("sat", "13:00", "14:00", "UTC")],
         "2026-01-10T11:00:00", "2026-01-10T12:00:00"),
        ([window("sat", "00:00", "12:00", "UTC"), window("sat", "13:00", "14:00", "UTC")],
         "2026-01-10T12:30:00", None),
        ([], "2026-01-10T12:00:00", None),
    ],
)  # fmt: skip
def test_a_moment_is_inside_or_outside_and_the_freeze_ends_at(
    windows: list[FreezeWindow], now: str, ends_at: str | None
) -> None:
    active = freezes.active_freeze(windows, utc(now))
    assert (active.ends_at if active else None) == (utc(ends_at) if ends_at else None)


@pytest.mark.parametrize(
    ("windows", "now", "refusal"),
    [
        ([WEEKEND], "2026-01-10T12:00:00",
         "Deploys to protected environments are frozen until Mon 2026-01-12 00:00 (Europe/Berlin)."),
        ([FRIDAY_NIGHT], "2026-01-09T23:00:00",
         "Deploys to protected environments are frozen until Sat 2026-01-10 06:00 (UTC)."),
        ([SUNDAY], "2026-03-29T12:00:00",
         "Deploys to protected environments are frozen until Mon 2026-03-30 00:00 (Europe/Berlin)."),
        ([SATURDAY_NIGHT], "2026-10-25T04:30:00",
         "Deploys to protected environments are frozen until Sun 2026-10-25 06:00 (Europe/Berlin)."),
        ([window("sun", "20:00", "02:00", "Asia/Kolkata")], "2026-01-11T20:00:00",
         "Deploys to protected environments are frozen until Mon 2026-01-12 02:00 (Asia/Kolkata)."),
    ],
    ids=["weekend", "past-midnight", "spring-forward", "fall-back", "half-hour-zone"],
)  # fmt: skip
def test_a_refused_request_is_told_the_end_in_the_window_s_time_zone(
    windows: list[FreezeWindow], now: str, refusal: str
) -> None:
    active = freezes.active_freeze(windows, utc(now))
    assert active is not None
    assert active.window is windows[0]
    assert messages.frozen_until(active.ends_local, active.window.zone) == refusal
