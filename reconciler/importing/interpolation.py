"""Compose's ``${VAR}`` interpolation, read without a shell to take values from.

Compose fills ``$VAR``, ``${VAR}``, ``${VAR:-default}`` ... from the shell and ``.env`` when it
runs. An import has neither (and would not want a developer's shell in a team's file): a
variable with a default takes its default, one without stays unknown, and the caller says
what becomes of it (an environment value becomes a secret; an image is refused).
``$$`` is a literal ``$``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\$\$"
    r"|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


@dataclass(frozen=True)
class Expanded:
    text: str  # defaults filled in; an unknown variable left as written
    unknown: tuple[str, ...] = ()  # variables with no default: only the shell knows them
    defaulted: tuple[str, ...] = ()  # variables that took their default

    @property
    def known(self) -> bool:
        return not self.unknown

    @property
    def whole_variable(self) -> str | None:
        """The variable a value consists of (``${TOKEN}``), else None."""
        if len(self.unknown) == 1 and self.text in (
            f"${{{self.unknown[0]}}}",
            f"${self.unknown[0]}",
        ):
            return self.unknown[0]
        return None


def expand(text: str) -> Expanded:
    out: list[str] = []
    unknown: list[str] = []
    defaulted: list[str] = []
    last = 0
    for match in _TOKEN.finditer(text):
        out.append(text[last : match.start()])
        last = match.end()
        if match.group(0) == "$$":
            out.append("$")
            continue
        name = match.group("name") or match.group("bare")
        op = match.group("op") or ""
        if op.endswith("-"):
            defaulted.append(name)
            out.append(expand(match.group("arg")).text)
            continue
        unknown.append(name)
        out.append(match.group(0))
    out.append(text[last:])
    return Expanded("".join(out), tuple(dict.fromkeys(unknown)), tuple(dict.fromkeys(defaulted)))
