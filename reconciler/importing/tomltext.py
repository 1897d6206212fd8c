"""Nested tables -> nebula.toml text, with tomlkit (already a dependency) doing the quoting.

A table whose values are all tables (``environments``, ``services``, a service's
``processes``) is written as a super-table, so the file reads ``[services.web.processes.web]``
rather than nesting inline tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tomlkit
from tomlkit.items import Table


def dumps(tables: Mapping[str, Any], header: list[str]) -> str:
    document = tomlkit.document()
    for line in header:
        document.add(tomlkit.comment(line))
    for key, value in tables.items():
        document[key] = _table(value)
    return tomlkit.dumps(document)


def _table(values: Mapping[str, Any]) -> Table:
    nested = bool(values) and all(isinstance(v, Mapping) for v in values.values())
    table = tomlkit.table(is_super_table=nested)
    for key, value in values.items():
        table[key] = _table(value) if isinstance(value, Mapping) else value
    return table
