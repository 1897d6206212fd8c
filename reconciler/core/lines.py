"""How a change-set line's values read, for people: the command line's tables, the demo."""

from __future__ import annotations

import json


def shown_value(value: object) -> str:
    """A line's before or after: ``(none)`` for nothing (a first deploy), text as written,
    anything else as JSON."""
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value)
