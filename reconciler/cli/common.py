"""Helpers every command module shares: settings, the context, ``--json`` and ``--as``."""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from reconciler import bootstrap, settings
from reconciler.admin import auditing, members
from reconciler.cli import output
from reconciler.context import Context
from reconciler.core.states import AdminAction
from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError, NotFoundError, shown
from reconciler.numbers import parse_id as parse_id  # ids on the command line: ASCII digits
from reconciler.store import schema

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

_CONTEXT: dict[str, Context] = {}
_UNKNOWN: dict[str, list[settings.Unknown]] = {}  # "environ": once read, warned about


def load_settings(args: argparse.Namespace) -> settings.Settings:
    """The settings (environment over ``--config``); the first load in a process warns about
    each unknown ``NEBULA_*`` variable, and the command goes on."""
    if "environ" not in _UNKNOWN:
        _UNKNOWN["environ"] = settings.unknown_variables()
        for unknown in _UNKNOWN["environ"]:
            output.warning(unknown.message, unknown.hint)
    return settings.load(config_file=getattr(args, "config", None))


def unknown_settings() -> list[settings.Unknown]:
    """The unknown ``NEBULA_*`` variables warned about (``nebula serve`` logs them too)."""
    return _UNKNOWN.get("environ", [])


def context(args: argparse.Namespace, *, git: bool = False) -> Context:
    """One context per process (the CLI runs one command), built from settings on first use."""
    key = f"git={git}"
    if key not in _CONTEXT:
        _CONTEXT[key] = bootstrap.open_context(load_settings(args), git=git)
    return _CONTEXT[key]


def use(ctx: Context) -> None:
    """Run commands against ``ctx`` (tests: a fake clock, a temporary database)."""
    _CONTEXT["git=True"] = ctx
    _CONTEXT["git=False"] = ctx


def reset() -> None:
    """Forget the cached context and the warnings given (tests run several commands in one
    process)."""
    for ctx in {id(c): c for c in _CONTEXT.values()}.values():
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()
    _CONTEXT.clear()
    _UNKNOWN.clear()


@contextmanager
def transaction(
    args: argparse.Namespace, *, git: bool = False
) -> Iterator[tuple[Context, Session]]:
    ctx = context(args, git=git)
    with ctx.db.transaction() as session:
        yield ctx, session


@contextmanager
def reading(args: argparse.Namespace) -> Iterator[tuple[Context, Session]]:
    """For a command that only reads: it takes no write lock, and works on a store that
    cannot be written (a read-only file, a full disk)."""
    ctx = context(args)
    with ctx.db.reading() as session:
        yield ctx, session


def add_json(parser: argparse.ArgumentParser) -> None:
    """``-o json|yaml|wide`` and ``--json`` (see ``output.add_output``)."""
    output.add_output(parser)


def add_timeout(parser: argparse.ArgumentParser, default: str, help_text: str) -> None:
    """``--timeout`` as a duration (``90s``, ``5m``, ``1h``; a bare number is seconds)."""
    parser.add_argument(
        "--timeout", type=duration("--timeout"), default=default, metavar="DURATION", help=help_text
    )


def duration(option: str) -> Callable[[str], timedelta]:
    """An argparse type: a duration, or a usage error naming the option and the form."""

    def parse(text: str) -> timedelta:
        try:
            return parse_duration(text, setting=option)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration (e.g. 90s, 5m, 1h)"
            ) from exc

    parse.__name__ = "duration"
    return parse


def add_as(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    parser.add_argument(
        "--as", dest="actor", metavar="NAME", required=required, help="the member acting"
    )


def actor(args: argparse.Namespace, session: Session) -> str:
    """The member named by ``--as`` (who must exist), or ``cli`` when none is given."""
    name: str | None = getattr(args, "actor", None)
    if name is None:
        return "cli"
    if members.find(session, name) is None:
        raise NotFoundError(
            f"No member named {shown(name)}",
            hint=f"add one with: nebula member add {shown(name, quote=False)} --role admin",
        )
    return name


def audit(
    ctx: Context,
    session: Session,
    actor: str,
    action: AdminAction,
    target: str,
    message: str,
    *,
    project: schema.Project | None = None,
) -> None:
    """Record an administrative act in the audit trail, in the command's transaction."""
    auditing.record(session, ctx.clock, action, target, message, actor=actor, project=project)


def command(
    subparsers: Subparsers, name: str, func: Callable[[argparse.Namespace], int], help_text: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help_text, description=help_text
    )
    parser.set_defaults(func=func)
    # Also after the command (``nebula status --config F``); unset here, the global one counts.
    parser.add_argument(
        "--config", metavar="FILE", default=argparse.SUPPRESS, help="a nebula-server.toml"
    )
    return parser


def read_secret(prompt: str) -> str:
    """A secret from a terminal (``prompt``, no echo) or from standard input (one trailing
    newline dropped); "" when none was given (Ctrl-D at the prompt, an empty pipe), which
    callers refuse with their own error."""
    if sys.stdin.isatty():
        try:
            return getpass.getpass(prompt)  # the prompt goes to the terminal
        except EOFError:
            return ""
    return sys.stdin.read().removesuffix("\n")
