"""Listings as tables, like ``kubectl get``: upper-case headers, columns two spaces apart, no
borders.

A printer declares its columns once (a header, the field it shows, whether it is free text,
whether only ``-o wide`` shows it), so adding a field to a listing is one line. Free text
(a message, a note) is never cut: on a terminal it wraps within its column (at spaces; a word
longer than the column folds); in a pipe the table is as wide as it needs (one row per line,
for grep), and ``-o wide`` never wraps.

Styles (bold headers) only on a terminal, and none when ``NO_COLOR`` is set.

Drawn here rather than by a table library: the layout (how wide each column is) was always
ours, what is left is padding and ``textwrap``, and rich cost a remote ``nebula status`` more
CPU than everything else it does (a third of a second's import and drawing for a few
screens of rows).
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler import numbers
from reconciler.cli import output

Row = Mapping[str, Any]
_UNLIMITED = 10_000  # a pipe's width: no wrapping at all


@dataclass(frozen=True)
class Column:
    header: str
    field: str | Callable[[Row], object]  # a key of the row, or how to compute the cell
    text: bool = False  # free text: wraps on a terminal instead of pushing the table wider
    only_wide: bool = False  # shown under ``-o wide`` only
    indent: int = 0

    def cell(self, row: Row) -> str:
        value = self.field(row) if callable(self.field) else row.get(self.field)
        return (" " * self.indent) + shown(value)


def shown(value: object) -> str:
    """A cell: ``-`` for nothing, ``true``/``false``, text with its control characters and
    line breaks escaped (a cell is one logical line)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    return output.escape(str(value)).replace("\n", "\\n")


def short_commit(value: object) -> str | None:
    return str(value)[:7] if value else None


def short_image(value: object) -> str | None:
    """``reg/web@sha256:98180510e6eb`` (12 hex digits of a 64-digit digest; ``-o wide`` and
    ``-o json`` give the whole reference)."""
    if not value:
        return None
    text = str(value)
    if output.wide():
        return text
    name, at, digest = text.partition("@")
    if at and ":" in digest:
        algorithm, _, hexdigits = digest.partition(":")
        return f"{name}@{algorithm}:{hexdigits[:12]}"
    return text


def _width(stream: Any) -> int:
    columns = numbers.whole(os.environ.get("COLUMNS", ""))  # COLUMNS=² passes isdigit()
    if columns is not None:
        return columns
    isatty = getattr(stream, "isatty", None)
    if output.wide() or not (isatty and isatty()):
        return _UNLIMITED
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100


_GAP = 2  # spaces between two columns
_MIN_TEXT = 24  # a free-text column is never squeezed narrower than this


def _layout(cells: list[list[str]], columns: Sequence[Column], width: int) -> list[int | None]:
    """Each column's width (None: its natural one).

    Fixed columns keep their natural width; free text gets what is left of the terminal, at
    least ``_MIN_TEXT`` (the table then grows past the terminal rather than drop a column)."""
    natural = [
        max([len(column.header), *(len(row[i]) for row in cells)])
        for i, column in enumerate(columns)
    ]
    wrapping = [c.text and not output.wide() for c in columns]
    fixed = sum(n for n, w in zip(natural, wrapping, strict=True) if not w)
    fixed += _GAP * (len(columns) - 1)
    count = sum(wrapping)
    share = max(_MIN_TEXT, (width - fixed) // count) if count else 0
    return [min(n, share) if w else None for n, w in zip(natural, wrapping, strict=True)]


_BOLD, _PLAIN = "\x1b[1m", "\x1b[0m"


def _wrapped(cell: str, width: int | None) -> list[str]:
    if width is None or len(cell) <= width:
        return [cell]
    return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]


def render(rows: Sequence[Row], columns: Sequence[Column], *, stream: Any = None) -> str:
    """The table as text (with a bold header only for a terminal)."""
    target = output.raw(stream or sys.stdout)
    isatty = getattr(target, "isatty", None)
    # Styles only on a terminal, and none at all under NO_COLOR (https://no-color.org).
    terminal = bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
    shown_columns = [c for c in columns if output.wide() or not c.only_wide]
    headers = [column.header.upper() for column in shown_columns]
    cells = [[column.cell(row) for column in shown_columns] for row in rows]
    widths = _layout(cells, shown_columns, _width(target))
    sizes = [
        width if width is not None else max([len(header), *(len(row[i]) for row in cells)])
        for i, (header, width) in enumerate(zip(headers, widths, strict=True))
    ]
    gap = " " * _GAP
    head = gap.join(header.ljust(size) for header, size in zip(headers, sizes, strict=True))
    lines = [f"{_BOLD}{head.rstrip()}{_PLAIN}" if terminal else head.rstrip()]
    for row in cells:
        parts = [_wrapped(cell, width) for cell, width in zip(row, widths, strict=True)]
        for at in range(max(len(part) for part in parts)):
            line = gap.join(
                (part[at] if at < len(part) else "").ljust(size)
                for part, size in zip(parts, sizes, strict=True)
            )
            lines.append(line.rstrip())
    return "\n".join(lines)


def show(rows: Sequence[Row], columns: Sequence[Column]) -> None:
    """Print a listing: its table (the header alone when there are no rows)."""
    text = render(rows, columns)
    output.raw(sys.stdout).write(text + "\n")
