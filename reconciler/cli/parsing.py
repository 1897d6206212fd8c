"""The parser every command is built with: a usage error is one ``error:`` line naming the
command's own ``--help``, and a ``hint:`` line with what was probably meant (``did you mean
status?``) or, when a word is out of place, that command's usage (never the top-level help).

argparse answers a usage error from the parser that found it; an argument no parser knew is
found by the top one, after the command's parser has done. So each parser records itself on
the namespace it parsed, the deepest first (``PARSED``), and the top one lets that parser
answer for the arguments left over.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from reconciler import suggestions
from reconciler.cli import output
from reconciler.errors import shown

PARSED = "_nebula_parser"  # on the namespace: the innermost parser that parsed it


class Parser(argparse.ArgumentParser):
    hint: str | None = None  # what to say under the next error (set where the error is found)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if getattr(parsed, PARSED, None) is None:  # a subcommand's parser set it first
            setattr(parsed, PARSED, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = innermost(parsed, self)
            owner.hint = owner.leftover_hint(extras)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """An unknown choice (a command, ``-o xml``): the closest one, else the choices."""
        choices = action.choices
        if choices is None or value in choices:
            return
        known = [str(choice) for choice in choices]
        near = suggestions.closest(str(value), known)
        command = isinstance(action, argparse._SubParsersAction)
        there = f"{'commands' if command else 'choose from'}: {suggestions.listed(known)}"
        self.hint = f"did you mean {near}?" if near else there
        if command:
            raise argparse.ArgumentError(None, f"{self.prog} has no command {shown(value)}")
        raise argparse.ArgumentError(action, f"invalid choice: {shown(value)}")

    def leftover_hint(self, extras: Sequence[str]) -> str:
        """For arguments this command does not take: the option meant, or its usage."""
        usage = " ".join(self.format_usage().split())
        for extra in extras:
            if not extra.startswith("--"):
                continue
            name = extra.split("=", 1)[0]
            if name[2:] in self.positionals():  # --project shop, for a command's PROJECT
                return f"the {name[2:]} comes without {name}: {usage}"
            near = suggestions.closest(name, self.options())
            if near is not None:
                return f"did you mean {near}?"
        return usage

    def options(self) -> list[str]:
        return [s for a in self._actions for s in a.option_strings if s.startswith("--")]

    def positionals(self) -> set[str]:
        return {a.dest for a in self._actions if not a.option_strings}

    def error(self, message: str) -> NoReturn:
        """Bad usage: one line on stderr (and a hint), exit 2 (argparse's own convention)."""
        hint, self.hint = self.hint, None
        if hint is None and message.startswith("the following arguments are required"):
            hint = " ".join(self.format_usage().split())
        output.error(f"{message} (see: {self.prog} --help)", hint)
        raise SystemExit(output.EXIT_USAGE)


def innermost(args: argparse.Namespace, default: argparse.ArgumentParser) -> Parser:
    """The parser of the command ``args`` were parsed for (``nebula project add``'s)."""
    found = getattr(args, PARSED, None)
    if isinstance(found, Parser):
        return found
    if isinstance(default, Parser):
        return default
    raise TypeError("nebula's parsers are all Parser")  # pragma: no cover
