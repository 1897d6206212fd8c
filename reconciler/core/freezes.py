"""Weekly deploy-freeze windows in a chosen time zone.

A window covers, on each listed weekday, local ``start`` to ``end`` (``24:00`` means the end
of that day; an ``end`` before ``start`` runs past midnight into the next day). Back-to-back
windows (Saturday all day, then Sunday all day) make one freeze, and its end is the end of
the last of them: that is the time a refused request is told.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from reconciler.errors import ConfigurationError, shown

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class FreezeWindow:
    days: frozenset[int]  # 0 = Monday
    start: time
    end: time | None  # None: 24:00
    zone: str

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    def describe(self) -> str:
        days = ",".join(DAYS[d] for d in sorted(self.days))
        end = "24:00" if self.end is None else self.end.strftime("%H:%M")
        return f"{days} {self.start.strftime('%H:%M')}-{end} {self.zone}"

    def intervals_around(self, moment: datetime) -> list[tuple[datetime, datetime]]:
        """The window's concrete intervals (UTC) from two days before to nine days after."""
        local = moment.astimezone(self.tz)
        out = []
        for offset in range(-2, 10):
            day = (local + timedelta(days=offset)).date()
            if day.weekday() not in self.days:
                continue
            begin = datetime.combine(day, self.start, self.tz)
            if self.end is None:
                finish = datetime.combine(day + timedelta(days=1), time(0), self.tz)
            elif self.end <= self.start:
                finish = datetime.combine(day + timedelta(days=1), self.end, self.tz)
            else:
                finish = datetime.combine(day, self.end, self.tz)
            out.append((begin.astimezone(UTC), finish.astimezone(UTC)))
        return out


def parse_window(days: str, start: str, end: str, zone: str) -> FreezeWindow:
    """A window as a person gives it (``freeze add``): every part checked, nothing guessed.

    Days are weekday names or their three-letter abbreviations (``saturnalia`` is not
    Saturday); the zone is an IANA name (``localtime`` would mean whatever zone the server
    happens to run in); a window from a time to the same time is refused rather than taken as
    24 hours (``--from 00:00 --to 24:00`` says a whole day)."""
    names = [d.strip().lower() for d in days.split(",") if d.strip()]
    bad = [d for d in names if d not in _DAY_NAMES]
    if not names or bad:
        raise ConfigurationError(
            f"--days {shown(days)} is not a list of weekdays",
            hint="write e.g. --days sat,sun (mon tue wed thu fri sat sun, or the full names)",
        )
    if zone not in _zones():
        raise ConfigurationError(
            f"--tz {shown(zone)} is not a time zone",
            hint="use an IANA name such as Europe/Berlin or UTC",
        )
    begin = _clock(start, "--from")
    finish = None if end.strip() == "24:00" else _clock(end, "--to")
    if finish == begin:
        raise ConfigurationError(
            f"--from and --to are both {begin.strftime('%H:%M')}: the window would be empty",
            hint="give a different end; for whole days write --from 00:00 --to 24:00",
        )
    return FreezeWindow(frozenset(_DAY_NAMES[d] for d in names), begin, finish, zone)


def stored_window(days: str, start: str, end: str, zone: str) -> FreezeWindow:
    """A window as ``parse_window`` stored it (``days`` normalised): read back as it was
    taken, so a rule tightened later never makes a stored window unreadable."""
    begin = _clock(start, "from")
    finish = None if end.strip() == "24:00" else _clock(end, "to")
    indexes = frozenset(DAYS.index(d) for d in days.split(",") if d in DAYS)
    return FreezeWindow(indexes, begin, finish, zone)


_DAY_NAMES = {
    **{name: i for i, name in enumerate(DAYS)},
    **{name: i for i, name in enumerate(FULL_DAYS)},
}
_NOT_ZONES = {"localtime", "posixrules", "Factory"}  # files in the zone directory, not places
_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})")


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones() - _NOT_ZONES)


def _clock(text: str, flag: str) -> time:
    match = _TIME.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError(text)
        return time(int(match.group(1)), int(match.group(2)))
    except ValueError:
        raise ConfigurationError(
            f"{flag} {shown(text)} is not a time of day", hint="write HH:MM, e.g. 18:00"
        ) from None


@dataclass(frozen=True)
class ActiveFreeze:
    window: FreezeWindow
    ends_at: datetime  # UTC

    @property
    def ends_local(self) -> datetime:
        return self.ends_at.astimezone(self.window.tz)


def active_freeze(windows: list[FreezeWindow], now: datetime) -> ActiveFreeze | None:
    """The freeze ``now`` falls in, with the end of the whole contiguous frozen period."""
    intervals = sorted(
        ((b, e, w) for w in windows for b, e in w.intervals_around(now)), key=lambda x: x[0]
    )
    current = next(((b, e, w) for b, e, w in intervals if b <= now < e), None)
    if current is None:
        return None
    _, end, window = current
    extended = True
    while extended:  # back-to-back or overlapping windows make one freeze
        extended = False
        for b, e, _ in intervals:
            if b <= end < e:
                end, extended = e, True
    return ActiveFreeze(window, end)
