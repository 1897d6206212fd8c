"""Numbers as people and programs write them: ids and counts in ASCII digits, sizes in bytes.

``str.isdigit`` says yes to ``²`` (which ``int`` then refuses) and to ``٣`` (which ``int``
reads as 3), so every id, count and size Nebula reads from outside goes through here: ASCII
digits only, at most 18 of them (a 64-bit column holds them all).
"""

from __future__ import annotations

import re

from reconciler.errors import ConfigurationError, NotFoundError, shown

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

_WHOLE = re.compile(r"[0-9]{1,18}")
_SIZE = re.compile(r"([0-9]{1,15})\s*(b|kib|mib|gib)?", re.IGNORECASE)
_UNITS = {None: 1, "b": 1, "kib": KIB, "mib": MIB, "gib": GIB}


def whole(text: str) -> int | None:
    """``text`` (spaces around it allowed) as a whole number, or None unless it is one."""
    raw = text.strip()
    return int(raw) if _WHOLE.fullmatch(raw) else None


def parse_id(text: str, what: str) -> int:
    """An id given on the command line, in a URL or in a Slack button: a number, or nothing
    by that name (``NotFoundError``, so a path with a bad id is a 404, like a missing one)."""
    number = whole(text)
    if number is None:
        raise NotFoundError(f"No {what} {shown(text, 40)}: {what} ids are numbers")
    return number


def parse_size(text: str, *, setting: str = "size") -> int:
    """``'1MiB'`` -> 1048576. A bare number is bytes; units are B, KiB, MiB and GiB."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ConfigurationError(
            f"{setting}: {shown(text)} is not a size",
            hint="write a number of bytes, or a number and a unit: 512KiB, 1MiB, 2GiB",
        )
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _UNITS[unit]


def format_size(size: int) -> str:
    """``1048576`` -> ``1 MiB``, ``1572864`` -> ``1.5 MiB``, ``900`` -> ``900 bytes``."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit:
            if size >= 1024 * GIB:
                return f"{size // GIB} GiB"
            value = size / unit
            return f"{value:.0f} {name}" if size % unit == 0 else f"{value:.1f} {name}"
    return f"{size} byte{'s' if size != 1 else ''}"
