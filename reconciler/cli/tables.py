"""Listings as tables, drawn by rich, like ``kubectl get``: upper-case headers, columns two
spaces apart, no borders.

A printer declares its columns once (a header, the field it shows, whether it is free text,
whether only ``-o wide`` shows it), so adding a field to a listing is one line. Free text
(a message, a note) is never cut without saying so: on a terminal it wraps within its column;
in a pipe the table is as wide as it needs (one row per line, for grep); any cell rich must
still shorten ends in ``…``, and ``-o wide`` never shortens.

Styles (bold headers) only on a terminal, and none when ``NO_COLOR`` is set.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler import numbers
from reconciler.cli import output
from reconciler.lazy import Part

# rich draws the tables; loaded when the first one is drawn (``nebula --help`` draws none).
CONSOLE = Part("rich.console", "Console")
TABLE = Part("rich.table", "Table")
TEXT = Part("rich.text", "Text")

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


def _layout(
    cells: list[list[str]], columns: Sequence[Column], width: int
) -> tuple[list[int | None], int]:
    """Each column's width (None: its natural one) and the console width that holds them.

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
    widths: list[int | None] = [
        min(n, share) if w else None for n, w in zip(natural, wrapping, strict=True)
    ]
    total = fixed + sum(min(n, share) for n, w in zip(natural, wrapping, strict=True) if w)
    return widths, max(total, 1)


def render(rows: Sequence[Row], columns: Sequence[Column], *, stream: Any = None) -> str:
    """The table as text (with colour codes only for a terminal)."""
    target = output.raw(stream or sys.stdout)
    isatty = getattr(target, "isatty", None)
    # Styles only on a terminal, and none at all under NO_COLOR (https://no-color.org).
    terminal = bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
    shown_columns = [c for c in columns if output.wide() or not c.only_wide]
    cells = [[column.cell(row) for column in shown_columns] for row in rows]
    widths, total = _layout(cells, shown_columns, _width(target))
    text = TEXT.get()
    table = TABLE.get()(
        box=None,
        show_edge=False,
        pad_edge=False,
        padding=(0, _GAP, 0, 0),
        header_style="bold" if terminal else "",
        collapse_padding=True,
    )
    for column, width in zip(shown_columns, widths, strict=True):
        table.add_column(
            column.header.upper(),
            no_wrap=width is None,
            overflow="fold" if width is not None else "ellipsis",
            width=width,
        )
    for row_cells in cells:
        table.add_row(*(text(cell) for cell in row_cells))
    buffer = io.StringIO()
    console = CONSOLE.get()(
        file=buffer,
        width=total + _GAP,
        force_terminal=terminal,
        color_system="auto" if terminal else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
    )
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))


def show(rows: Sequence[Row], columns: Sequence[Column]) -> None:
    """Print a listing: its table (the header alone when there are no rows)."""
    text = render(rows, columns)
    output.raw(sys.stdout).write(text + "\n")
