"""``${{ ... }}`` references inside variable values.

A value is parsed into segments: literal text and references. ``$${{`` is a literal ``${{``.

- ``${{ svc.KEY }}``   another service's variable: resolved when the release is created; orders deploys
- ``${{ db.KEY }}``    a database export: orders deploys; credentials render as secretKeyRef
- ``${{ host(svc) }}`` the stable in-cluster address: no deploy ordering
- ``${{ secret.NAME }}`` a server-side secret of this project and environment
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class RefKind(StrEnum):
    VARIABLE = "variable"  # svc.KEY or db.KEY, told apart once the file's units are known
    HOST = "host"
    SECRET = "secret"


@dataclass(frozen=True)
class Literal:
    text: str


@dataclass(frozen=True)
class Reference:
    kind: RefKind
    target: str  # service/database slug, or the secret's name
    key: str = ""  # the variable or export for VARIABLE

    def __str__(self) -> str:
        if self.kind is RefKind.HOST:
            return f"${{{{ host({self.target}) }}}}"
        if self.kind is RefKind.SECRET:
            return f"${{{{ secret.{self.target} }}}}"
        return f"${{{{ {self.target}.{self.key} }}}}"


Segment = Literal | Reference


class ReferenceSyntaxError(ValueError):
    def __init__(self, message: str, offset: int, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.hint = hint


_SLUG = r"[a-z][a-z0-9-]*"
_VAR = re.compile(rf"^({_SLUG})\.([A-Za-z_][A-Za-z0-9_]*)$")
_HOST = re.compile(rf"^host\(\s*({_SLUG})\s*\)$")
_SECRET = re.compile(r"^secret\.([A-Za-z_][A-Za-z0-9_]*)$")
_HINT = (
    "a reference is ${{ service.KEY }}, ${{ database.KEY }}, ${{ host(service) }} or "
    "${{ secret.NAME }}; write $${{ for a literal ${{"
)


def parse(value: str) -> tuple[Segment, ...]:
    """Split a variable value into literal text and references, merging adjacent literals."""
    segments: list[Segment] = []
    text: list[str] = []
    i = 0
    while i < len(value):
        if value.startswith("$${{", i):
            text.append("${{")
            i += 4
            continue
        if value.startswith("${{", i):
            end = value.find("}}", i + 3)
            if end < 0:
                raise ReferenceSyntaxError(
                    f"unterminated reference {value[i : i + 20]!r}", i, "close it with }}"
                )
            if text:
                segments.append(Literal("".join(text)))
                text = []
            segments.append(_reference(value[i + 3 : end].strip(), i))
            i = end + 2
            continue
        text.append(value[i])
        i += 1
    if text:
        segments.append(Literal("".join(text)))
    return tuple(segments)


def _reference(body: str, offset: int) -> Reference:
    if match := _SECRET.match(body):
        return Reference(RefKind.SECRET, match.group(1))
    if match := _HOST.match(body):
        return Reference(RefKind.HOST, match.group(1))
    if match := _VAR.match(body):
        return Reference(RefKind.VARIABLE, match.group(1), match.group(2))
    raise ReferenceSyntaxError(f"unknown reference '${{{{ {body} }}}}'", offset, _HINT)


def references(value: str) -> tuple[Reference, ...]:
    return tuple(s for s in parse(value) if isinstance(s, Reference))


def escape(text: str) -> str:
    """The inverse of literal parsing: a value that reads back as ``text``."""
    return text.replace("${{", "$${{")


def is_exactly(segments: tuple[Segment, ...]) -> Reference | None:
    """The single reference a value consists of, e.g. ``${{ db.DATABASE_URL }}``."""
    if len(segments) == 1 and isinstance(segments[0], Reference):
        return segments[0]
    return None
