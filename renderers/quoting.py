"""Values as YAML scalars that cannot change a manifest's structure.

Every value from nebula.toml reaches a manifest as a *double-quoted* scalar on one line: the
only characters special inside one are ``"`` and ``\\``, and a raw line break would be folded,
so those, every control character and everything outside printable ASCII are escaped. The
result is a JSON string, except that characters beyond the Basic Multilingual Plane use YAML's
``\\UXXXXXXXX`` escape: libyaml (and Kubernetes' go-yaml) reject JSON's surrogate pairs.

``Scalar`` marks text produced here; the template environment refuses to output anything else.
"""

from __future__ import annotations

import re

# Printable ASCII other than the quote and the backslash needs no escape.
_PLAIN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


class Scalar(str):
    """A quoted scalar or a number, safe to place after ``key: `` or ``- `` in YAML."""

    __slots__ = ()


def quote(value: str) -> Scalar:
    if type(value) is not str:
        raise TypeError(f"only text is quoted, not {type(value).__name__}")
    if _PLAIN.fullmatch(value):
        return Scalar(f'"{value}"')
    return Scalar(f'"{"".join(_escape(c) for c in value)}"')


def _escape(char: str) -> str:
    if (short := _SHORT.get(char)) is not None:
        return short
    code = ord(char)
    if 0x20 <= code < 0x7F:
        return char
    if 0xD800 <= code < 0xE000:
        raise ValueError("text contains a lone surrogate, which no YAML document can carry")
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def number(value: int) -> Scalar:
    """An integer we emit as a YAML number (replicas, ports, timeouts): never a bool."""
    if type(value) is not int:
        raise TypeError(f"a number was expected, not {type(value).__name__}")
    return Scalar(str(value))


def kube_literal(text: str) -> str:
    """``text`` as Kubernetes must receive it in ``command`` or ``env[].value`` to run unchanged.

    Kubernetes expands ``$(NAME)`` in those fields and turns ``$$`` into ``$``; doubling every
    ``$`` makes the expansion give back exactly ``text`` (``$(`` included).
    """
    return text.replace("$", "$$")
