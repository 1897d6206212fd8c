"""Durations as people write them in settings: ``90s``, ``5m``, ``24h``, ``2d``."""

from __future__ import annotations

import re
from datetime import timedelta

from reconciler.errors import ConfigurationError

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
# The longest duration Nebula takes anywhere (a setting, nebula.toml, an option): what it
# adds one to (a poll's time, a token's creation) then stays a date.
LONGEST = timedelta(days=3650)
LONGER_HINT = "give a shorter one, e.g. 30d"
# What ``parse_duration`` reads, as the API's parameters declare it (a 422 for anything else):
# whether it is in range is the act's to say, in its own words, whichever door it came by.
PATTERN = r"^\s*(([0-9]+(\.[0-9]+)?(ms|s|m|h|d))+|[0-9]+(\.[0-9]+)?)\s*$"
TEXT_LONGEST = 100
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")  # ASCII digits: \d takes ٣ too


def parse_duration(
    text: str, *, setting: str = "duration", longest: timedelta | None = LONGEST
) -> timedelta:
    """``'1h30m'`` -> 5400 s. A bare number means seconds, as in ``--interval 60``.
    ``longest=None``: no limit, for a stretch back in time (``--since``), where "further
    back than anything" means everything (``OverflowError`` past what a timedelta holds)."""
    seconds = _seconds(text, setting)
    if longest is None:
        return timedelta(seconds=seconds)
    if seconds > longest.total_seconds():
        raise ConfigurationError(
            f"{setting}: {text.strip()[:40]!r} is longer than 10 years, the longest duration "
            "Nebula takes",
            hint=LONGER_HINT,
        )
    return timedelta(seconds=seconds)


def _seconds(text: str, setting: str) -> float:
    raw = text.strip()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", raw):
        return float(raw)
    pos, total = 0, 0.0
    for match in _PART.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(raw) or not raw:
        raise ConfigurationError(
            f"{setting}: {text!r} is not a duration",
            hint="write it as a number and a unit, e.g. 90s, 5m, 24h",
        )
    return total


def format_duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    if seconds % 3600 == 0 and seconds:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0 and seconds:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def format_age(value: timedelta) -> str:
    """How long ago, roughly, as people say it: ``45s``, ``12m``, ``3h``, ``2d``."""
    seconds = max(0, int(value.total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
