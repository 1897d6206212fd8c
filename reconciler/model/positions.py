"""Where each key and value of a TOML document starts, as (line, column), 1-based.

tomlkit parses and round-trips the file but keeps no positions, so this scanner walks the
same text (already known to be valid TOML, since tomlkit accepted it) and records the start
of every key path and every value. Paths are tuples of keys and array indexes, e.g.
``("services", "api", "processes", "web", "port")`` or ``("services", "api", "deploy",
"depends_on", 0)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

Path = tuple[str | int, ...]


@dataclass
class Positions:
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def key(self, path: Path) -> tuple[int, int]:
        """The key's position, else the nearest enclosing key's, else the file start."""
        for end in range(len(path), 0, -1):
            if (found := self.keys.get(path[:end])) is not None:
                return found
        return (1, 1)

    def value(self, path: Path) -> tuple[int, int]:
        return self.values.get(path) or self.key(path)


_BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.line_start = 0
        self.found = Positions()
        self.aot_counts: dict[Path, int] = {}
        self.last_key = (1, 1)

    # -- position bookkeeping -------------------------------------------------------------
    def here(self) -> tuple[int, int]:
        return (self.line, self.i - self.line_start + 1)

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.i < len(self.text) and self.text[self.i] == "\n":
                self.line += 1
                self.line_start = self.i + 1
            self.i += 1

    def peek(self, n: int = 1) -> str:
        return self.text[self.i : self.i + n]

    def skip_blank(self, newlines: bool) -> None:
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.advance()
            elif ch == "#":
                while self.i < len(self.text) and self.text[self.i] != "\n":
                    self.advance()
            else:
                return

    # -- grammar ----------------------------------------------------------------------------
    def document(self) -> Positions:
        table: Path = ()
        while True:
            self.skip_blank(newlines=True)
            if self.i >= len(self.text):
                return self.found
            if self.peek(2) == "[[":
                self.advance(2)
                parts = self.dotted_key((), header=True)
                self.skip_blank(False)
                self.advance(2)
                index = self.aot_counts.get(parts, 0)
                self.aot_counts[parts] = index + 1
                table = (*parts, index)
                self.found.keys.setdefault(table, self.last_key)  # this element's own header
            elif self.peek() == "[":
                self.advance()
                table = self.dotted_key((), header=True)
                self.skip_blank(False)
                self.advance()
            else:
                self.key_value(table)

    def key_value(self, table: Path) -> None:
        path = self.dotted_key(table)
        self.skip_blank(False)
        self.advance()  # '='
        self.skip_blank(False)
        self.value(path)

    def dotted_key(self, prefix: Path, *, header: bool = False) -> Path:
        """In a header, a key leading to an array of tables means its latest element:
        after ``[[a]]``, ``[a.b]`` is ``("a", 0, "b")``."""
        path = prefix
        while True:
            self.skip_blank(False)
            start = self.last_key = self.here()
            path = (*path, self.simple_key())
            self.found.keys.setdefault(path, start)
            self.skip_blank(False)
            if self.peek() != ".":
                return path
            self.advance()
            if header and path in self.aot_counts:
                path = (*path, self.aot_counts[path] - 1)

    def simple_key(self) -> str:
        ch = self.peek()
        if ch == '"':
            return self.basic_string()
        if ch == "'":
            return self.literal_string()
        start = self.i
        while self.i < len(self.text) and self.text[self.i] in _BARE:
            self.advance()
        return self.text[start : self.i]

    def value(self, path: Path) -> None:
        self.found.values.setdefault(path, self.here())
        if self.peek(3) in ('"""', "'''"):
            self.multiline_string(self.peek(3))
        elif self.peek() == '"':
            self.basic_string()
        elif self.peek() == "'":
            self.literal_string()
        elif self.peek() == "[":
            self.array(path)
        elif self.peek() == "{":
            self.inline_table(path)
        else:
            while self.i < len(self.text) and self.text[self.i] not in ",]}\n#":
                self.advance()

    def array(self, path: Path) -> None:
        self.advance()
        index = 0
        while True:
            self.skip_blank(newlines=True)
            if self.peek() in ("]", ""):
                self.advance()
                return
            self.value((*path, index))
            index += 1
            self.skip_blank(newlines=True)
            if self.peek() == ",":
                self.advance()

    def inline_table(self, path: Path) -> None:
        self.advance()
        while True:
            self.skip_blank(newlines=True)
            if self.peek() in ("}", ""):
                self.advance()
                return
            self.key_value(path)
            self.skip_blank(newlines=True)
            if self.peek() == ",":
                self.advance()

    def basic_string(self) -> str:
        start = self.i
        self.advance()
        while self.i < len(self.text) and self.text[self.i] != '"':
            self.advance(2 if self.text[self.i] == "\\" else 1)
        self.advance()
        raw = self.text[start : self.i]
        try:
            return str(json.loads(raw, strict=False))  # TOML allows a raw tab in a string
        except ValueError:
            return raw[1:-1]

    def literal_string(self) -> str:
        start = self.i + 1
        self.advance()
        while self.i < len(self.text) and self.text[self.i] != "'":
            self.advance()
        self.advance()
        return self.text[start : self.i - 1]

    def multiline_string(self, quote: str) -> None:
        self.advance(3)
        while self.i < len(self.text) and self.peek(3) != quote:
            self.advance(2 if quote == '"""' and self.text[self.i] == "\\" else 1)
        self.advance(3)
        while self.peek() == quote[0]:  # up to two quotes may close the content
            self.advance()


def scan(text: str) -> Positions:
    """Positions of every key and value in ``text``, which must be valid TOML."""
    return _Scanner(text).document()
