"""An ``env_file``'s lines as variables, each with its line and column in that file.

The format Compose reads: ``KEY=VALUE``, ``export KEY=VALUE``, ``KEY`` alone (the shell's
value), ``#`` comments, values in single quotes (taken as written) or double quotes (``\\n``,
``\\"`` and ``\\\\`` escapes), and a `` #`` comment after an unquoted value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reconciler.importing.yamltree import At

_LINE = re.compile(r"^(?P<indent>\s*)(?:export\s+)?(?P<key>[^=\s#]+)\s*(?:=(?P<value>.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "$": "$"}


@dataclass(frozen=True)
class Line:
    key: str
    value: str | None
    at: At


def parse(text: str) -> tuple[list[Line], list[At]]:
    """The variables, and where a line could not be read."""
    out: list[Line] = []
    bad: list[At] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = _LINE.match(raw)
        if match is None:
            bad.append(At(number, len(raw) - len(raw.lstrip()) + 1))
            continue
        at = At(number, len(match.group("indent")) + 1)
        value = match.group("value")
        out.append(Line(match.group("key"), None if value is None else _value(value), at))
    return out, bad


def _value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    if len(text) >= 2 and text[0] == '"' and text.rfind('"') > 0:
        inner = text[1 : text.rfind('"')]
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), inner)
    return re.split(r"\s+#", text, maxsplit=1)[0].strip()
