"""How every command talks back: JSON documents on stdout; on stderr, an error or a warning as
one line (``error: ...``, ``warning: ...``), followed by one ``hint: ...`` line when there is one.

Exit codes (interfaces.md): 0 ok, 1 a refused or invalid request, 2 bad usage.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from enum import Enum
from typing import Any

from reconciler.clock import utc

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


def _default(value: object) -> object:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"cannot serialise {type(value).__name__}")


def iso(value: datetime | None) -> str | None:
    """ISO 8601 UTC with a ``Z``, as the JSON contract says."""
    if value is None:
        return None
    return utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def print_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=_default) + "\n")


def error(message: str, hint: str | None = None) -> None:
    sys.stderr.write(f"error: {message}\n" + (f"hint: {hint}\n" if hint else ""))


def warning(message: str, hint: str | None = None) -> None:
    """Something the command goes on despite (an unknown setting)."""
    sys.stderr.write(f"warning: {message}\n" + (f"hint: {hint}\n" if hint else ""))


def table(rows: list[list[str]], headers: list[str]) -> str:
    """A plain aligned table, like kubectl get."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.upper().ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    return "\n".join(lines)
