"""Typed reads of one TOML table, reporting every problem instead of stopping at the first.

A ``Reader`` reads a table whose *logical* path (``services.api.processes.web``) may differ
from where its keys sit in the file: with per-environment overrides merged in, a key may come
from ``services.api.environments.production.processes.web``. ``locate`` maps one to the other
so that problems point at the line the user wrote.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from datetime import date, datetime, time
from typing import Any

from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems, dotted

Locate = Callable[[Path], Path]

SLUG = re.compile(r"^[a-z](?:[a-z0-9-]{0,38}[a-z0-9])?\Z")  # \Z: "$" would take "api\n"
SIZE = re.compile(r"^[1-9][0-9]*(Ki|Mi|Gi|Ti)$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_SLUGS = frozenset({"secret", "host"})


def type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, datetime | date | time):
        return "a date/time"
    return type(value).__name__


def identity(path: Path) -> Path:
    return path


class Reader:
    """Reads keys of ``table`` at logical ``path``; unknown keys are reported on creation."""

    def __init__(
        self,
        problems: Problems,
        table: dict[str, Any],
        path: Path,
        allowed: Iterable[str],
        *,
        locate: Locate = identity,
    ) -> None:
        self.problems = problems
        self.table = table
        self.path = path
        self.locate = locate
        allowed = tuple(allowed)
        # A known key not written here -> the unknown key written in its place (``typ`` for
        # ``type``): the typo is the one error; ``missing`` says nothing more about that key.
        self.misspelt: dict[str, str] = {}
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                if close and close[0] not in table:
                    self.misspelt.setdefault(close[0], key)
                hint = f"did you mean '{close[0]}'? " if close else ""
                self.problems.add(
                    self.locate((*path, key)),
                    Code.UNKNOWN_KEY,
                    f"unknown key '{key}' in [{dotted(path) or 'top level'}]",
                    f"{hint}allowed here: {', '.join(allowed)}",
                    key=True,
                )

    def where(self, key: str | int, *rest: str | int) -> Path:
        return self.locate((*self.path, key, *rest))

    def error(
        self, key: str | int, code: Code, message: str, hint: str = "", *, index: int | None = None
    ) -> None:
        where = self.where(key) if index is None else self.where(key, index)
        self.problems.add(where, code, message, hint)

    def _wrong(self, key: str, expected: str, example: str) -> None:
        value = self.table[key]
        self.error(
            key,
            Code.WRONG_TYPE,
            f"{dotted((*self.path, key))} must be {expected}, not {type_name(value)}",
            f"write it as {key} = {example}",
        )

    def missing(self, key: str, example: str) -> None:
        """A required key is not there; unless an unknown key close to it is (already
        reported as the typo it is: one mistake, one error)."""
        if key in self.misspelt:
            return
        self.problems.add(
            self.locate(self.path),
            Code.MISSING_KEY,
            f"[{dotted(self.path)}] is missing the required key '{key}'",
            f"add {key} = {example}",
            key=True,
        )

    def has(self, key: str) -> bool:
        return key in self.table

    def meant(self, key: str) -> bool:
        """``key`` is written, or misspelt (so a check for its absence would repeat the typo)."""
        return key in self.table or key in self.misspelt

    def string(self, key: str, default: str | None = None, *, example: str = '"..."') -> str | None:
        if key not in self.table:
            return default
        value = self.table[key]
        if not isinstance(value, str):
            self._wrong(key, "a string", example)
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self.table:
            return default
        value = self.table[key]
        if not isinstance(value, bool):
            self._wrong(key, "true or false", "true")
            return default
        return value

    def integer(
        self, key: str, default: int | None, *, minimum: int = 0, maximum: int | None = None
    ) -> int | None:
        if key not in self.table:
            return default
        value = self.table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            # "8080" -> port = 8080: the fix for a quoted number is the number itself.
            digits = value.strip() if isinstance(value, str) else ""
            quoted = digits.isascii() and digits.isdigit()
            self._wrong(key, "an integer", digits if quoted else str(default or minimum))
            return default
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and {maximum}" if maximum is not None else ""
            bound = f"between {minimum}{upper}" if maximum is not None else f"at least {minimum}"
            self.error(
                key,
                Code.INVALID_VALUE,
                f"{dotted((*self.path, key))} is {value}; it must be {bound}",
                f"set {key} to a number {bound}",
            )
            return default
        return value

    def strings(self, key: str, *, example: str = '["..."]') -> tuple[str, ...] | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, list):
            self._wrong(key, "an array of strings", example)
            return None
        out: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.error(
                    key,
                    Code.WRONG_TYPE,
                    f"{dotted((*self.path, key, index))} must be a string, not {type_name(item)}",
                    f"quote every entry, as in {key} = {example}",
                    index=index,
                )
                continue
            out.append(item)
        return tuple(out)

    def table_of(self, key: str) -> dict[str, Any] | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, dict):
            self._wrong(key, "a table", f"{{ ... }} or a [{dotted((*self.path, key))}] section")
            return None
        return value

    def choice(
        self, key: str, choices: Iterable[str], default: str | None, code: Code
    ) -> str | None:
        options = tuple(choices)
        value = self.string(key, None, example=f'"{options[0]}"')
        if value is None:
            return default
        if value not in options:
            close = difflib.get_close_matches(value, options, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            self.error(
                key,
                code,
                f"{dotted((*self.path, key))} is '{value}', which is not one of: "
                f"{', '.join(options)}",
                f"{hint}use one of: {', '.join(options)}",
            )
            return default
        return value

    def size(self, key: str, default: str | None) -> str | None:
        value = self.string(key, None, example='"5Gi"')
        if value is None:
            return default
        if not SIZE.match(value):
            self.error(
                key,
                Code.MALFORMED_SIZE,
                f"{dotted((*self.path, key))} is '{value}', which is not a size",
                'write a whole number and a unit: Ki, Mi, Gi or Ti, e.g. "5Gi"',
            )
            return default
        return value


def not_a_table(
    problems: Problems, path: Path, value: object, *, locate: Locate = identity
) -> None:
    """A named section (a service, process, volume, override) written as a plain value."""
    problems.add(
        locate(path),
        Code.WRONG_TYPE,
        f"{dotted(path)} must be a table, not {type_name(value)}",
        f"write it as a section: [{dotted(path)}]",
    )


def check_slug(
    problems: Problems, path: Path, name: str, what: str, *, locate: Locate = identity
) -> bool:
    if SLUG.match(name) and name not in RESERVED_SLUGS:
        return True
    reason = (
        f"'{name}' is reserved in references"
        if name in RESERVED_SLUGS
        else f"'{name}' is not a valid {what} name"
    )
    problems.add(
        locate(path),
        Code.INVALID_SLUG,
        f"invalid {what} name: {reason}",
        "use lowercase letters, digits and '-', starting with a letter and ending with a letter "
        "or digit, at most 40 characters (e.g. 'web-api')",
        key=True,
    )
    return False
