"""How every command talks back: documents (``-o json|yaml``) and tables on stdout; on stderr,
an error or a warning as one line (``error: ...``, ``warning: ...``), followed by one
``hint: ...`` line when there is one.

Everything a command writes to the terminal passes through :func:`escaping`: control
characters that came from data (a commit message with ESC or BEL in it, a variable's value)
are shown escaped (``\\x1b``), never sent raw, whichever printer wrote them.

Exit codes (interfaces.md): 0 ok, 1 a refused or invalid request, 2 bad usage; ``wait``
adds 3, timed out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any, TextIO

from reconciler.clock import utc
from reconciler.lazy import Part

YAML = Part("yaml", "safe_dump")  # only for -o yaml
EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3


class Format(StrEnum):
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"


_STATE: dict[str, Format] = {"format": Format.TABLE}

# Every character of Unicode's categories Cc (control: C0 but newline and tab, DEL, C1) and Cf
# (format: zero-width spaces and joiners, the bidirectional marks and overrides that make a
# terminal show text in another order than it is, the soft hyphen, tags): none is shown as
# itself. Written out rather than built from unicodedata at start (a scan of every code point
# costs a tenth of a second); tests/cli/test_output.py checks it against unicodedata.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2"
    "\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` with every control character shown as an escape (newline and tab kept)."""
    return _CONTROL.sub(_escape_one, text)


class _Escaping:
    """A text stream that escapes control characters before they reach the real one."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(escape(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw(stream: TextIO) -> TextIO:
    """The stream under the escaping layer: for the table library's own colour codes and for
    ``--watch`` redrawing the screen (what they write was escaped before)."""
    return stream.raw if isinstance(stream, _Escaping) else stream


@contextmanager
def escaping() -> Iterator[None]:
    """For one command: stdout and stderr escape control characters (``main`` wraps each
    command in this, so no printer can forget)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _Escaping(sys.stdout)
    sys.stderr = _Escaping(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


# -- formats -----------------------------------------------------------------------------


def add_output(parser: argparse.ArgumentParser) -> None:
    """``-o json|yaml|wide`` and ``--json`` (the same as ``-o json``) on a listing."""
    parser.add_argument(
        "-o",
        "--output",
        choices=[Format.JSON.value, Format.YAML.value, Format.WIDE.value],
        help="json or yaml: one document; wide: more columns, messages never shortened",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document (the same as -o json)"
    )


def configure(args: argparse.Namespace) -> None:
    """Read ``-o``/``--json`` once per command; ``args.json`` is true for any document format,
    so a printer asks ``if args.json: output.print_json(...)`` and gets YAML under ``-o yaml``."""
    chosen = getattr(args, "output", None)
    if getattr(args, "json", False) and chosen not in (None, Format.JSON.value):
        raise SystemExit(_usage(f"--json and -o {chosen} contradict each other"))
    fmt = Format(chosen) if chosen else (Format.JSON if getattr(args, "json", False) else None)
    _STATE["format"] = fmt or Format.TABLE
    if hasattr(args, "json"):
        args.json = _STATE["format"] in (Format.JSON, Format.YAML)


def _usage(message: str) -> int:
    error(message)
    return EXIT_USAGE


def current() -> Format:
    return _STATE["format"]


def wide() -> bool:
    return _STATE["format"] is Format.WIDE


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
    """The command's one document: JSON, or YAML under ``-o yaml`` (the same fields)."""
    text = json.dumps(document, indent=2, default=_default)
    if _STATE["format"] is Format.YAML:
        text = YAML.get()(json.loads(text), sort_keys=False, allow_unicode=False).rstrip()
    sys.stdout.write(text + "\n")


def echo(text: str = "") -> None:
    """One line (or several) of human output."""
    sys.stdout.write(text + "\n")


def error(message: str, hint: str | None = None) -> None:
    sys.stderr.write(escape(f"error: {message}\n" + (f"hint: {hint}\n" if hint else "")))


def warning(message: str, hint: str | None = None) -> None:
    """Something the command goes on despite (an unknown setting)."""
    sys.stderr.write(escape(f"warning: {message}\n" + (f"hint: {hint}\n" if hint else "")))
