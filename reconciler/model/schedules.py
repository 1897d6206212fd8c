"""Five-field cron schedules, as a Kubernetes CronJob accepts them.

croniter alone is too lenient for us: it also takes ``L``, ``W``, ``#``, ``R`` and a day of
week of 7, which the CronJob controller rejects, so a file would validate and then fail at
apply time. Each field is first checked against the grammar Kubernetes understands (numbers,
``*``, ``?``, ranges, steps, lists, and three-letter month and weekday names), then croniter
checks what is left.
"""

from __future__ import annotations

import re

from croniter import croniter

HINT = 'five fields: minute hour day-of-month month day-of-week, e.g. "0 3 * * *"'

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names allowed in place of numbers)
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _WEEKDAYS),
)
_TOKEN = re.compile(
    r"^(?:\*|\?|(?P<low>[0-9A-Za-z]+)(?:-(?P<high>[0-9A-Za-z]+))?)(?:/(?P<step>[0-9]+))?$"
)


def problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a valid schedule, or None when it is."""
    fields = schedule.split()
    if len(fields) != 5:
        return f"it has {len(fields)} field{'s' if len(fields) != 1 else ''}, not 5"
    for text, (what, low, high, names) in zip(fields, _FIELDS, strict=True):
        for token in text.split(","):
            match = _TOKEN.match(token)
            if match is None:
                return f"the {what} field '{text}' is not a number, range, list or step"
            written = [b for b in (match["low"], match["high"]) if b]
            bounds = [n for b in written if (n := _number(b, low, names)) is not None]
            if len(bounds) != len(written) or not all(low <= b <= high for b in bounds):
                return f"the {what} field '{text}' must be within {low}-{high}"
            if len(bounds) == 2 and bounds[0] > bounds[1]:
                return f"the {what} field '{text}' has a range that ends before it starts"
            if match["step"] is not None and int(match["step"]) == 0:
                return f"the {what} field '{text}' has a step of 0"
    if not croniter.is_valid(schedule):
        return "it is not a schedule cron can read"
    return None


def _number(text: str, first: int, names: tuple[str, ...]) -> int | None:
    """A field value as a number: digits, or a month/weekday name counted from ``first``."""
    if text.lower() in names:
        return names.index(text.lower()) + first
    return int(text) if text.isascii() and text.isdigit() else None
