"""What every command module shares: its parser's conventions, and ``api(args)``, the one way
a command reaches Nebula.

The command line is remote when a context is in use (``nebula login``), or ``--server URL``
or ``NEBULA_SERVER`` is given (the token from the context, or ``NEBULA_TOKEN``); otherwise it
is local, for whoever operates Nebula's store. Either way a command builds the same requests
to ``/api/v1`` through the same client: to a server, or to the API's acts in this process
(``cli.local``, loaded by name only then, since it brings the store, the ORM and the engine).

Kept light on purpose (``nebula --help`` imports this): nothing here imports the store.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from reconciler import settings
from reconciler.cli import output
from reconciler.client import contexts
from reconciler.durations import LONGER_HINT, parse_duration
from reconciler.errors import ConfigurationError, NebulaError, RefusedError
from reconciler.lazy import Part
from reconciler.numbers import parse_id as parse_id  # ids on the command line: ASCII digits

if TYPE_CHECKING:
    from reconciler.client.http import Api

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

# Loaded when a command runs, never for --help: the HTTP client (httpx), and in local mode the
# store and the engine.
REMOTE = Part("reconciler.client.http", "connect")
LOCAL = Part("reconciler.cli.quick", "connect")
_UNKNOWN: dict[str, list[settings.Unknown]] = {}  # "environ": once read, warned about


def load_settings(args: argparse.Namespace) -> settings.Settings:
    """The settings (environment over ``--config``); the first load in a process warns about
    each unknown ``NEBULA_*`` variable, and the command goes on."""
    warn_unknown()
    return settings.load(config_file=getattr(args, "config", None))


def warn_unknown() -> None:
    if "environ" not in _UNKNOWN:
        _UNKNOWN["environ"] = settings.unknown_variables()
        for unknown in _UNKNOWN["environ"]:
            output.warning(unknown.message, unknown.hint)


def unknown_settings() -> list[settings.Unknown]:
    """The unknown ``NEBULA_*`` variables warned about (``nebula serve`` logs them too)."""
    return _UNKNOWN.get("environ", [])


def forget_warnings() -> None:
    """Tests run several commands in one process, each as if it were the first."""
    _UNKNOWN.clear()


def remote(args: argparse.Namespace) -> contexts.Saved | None:
    """The server this command talks to, with its token; None in local mode."""
    environ = os.environ
    server = getattr(args, "server", None) or environ.get("NEBULA_SERVER") or None
    token = (environ.get("NEBULA_TOKEN") or "").strip() or None
    named = getattr(args, "context", None)
    if server is None and named is None and not _contexts_may_exist():
        _warn_local(token)
        return None
    saved = contexts.load(environ)
    if named is not None:
        # The context named is the server: NEBULA_SERVER does not redirect it, and its saved
        # token goes to no other server than its own (``--server`` elsewhere: NEBULA_TOKEN's).
        chosen = saved.get(named)
        server = contexts.check_url(args.server) if getattr(args, "server", None) else None
        if server is None or server == contexts.normal(chosen.server):
            return contexts.Saved(chosen.name, chosen.server, token or chosen.token)
        return contexts.Saved(chosen.name, server, token)
    if server is not None:
        server = contexts.check_url(server)
        known = saved.for_server(server)
        return contexts.Saved("", server, token or (known.token if known else None))
    in_use = saved.in_use()
    if in_use is None:
        _warn_local(token)
        return None
    return contexts.Saved(in_use.name, in_use.server, token or in_use.token, in_use.member)


def _warn_local(token: str | None) -> None:
    """Local mode; a token set says someone meant a server."""
    if token is not None:
        output.warning(
            "NEBULA_TOKEN is set but no server is: this command runs locally, on this "
            "machine's store",
            "set NEBULA_SERVER (or nebula login URL) to act on a server",
        )


def _contexts_may_exist() -> bool:
    return (contexts.home(os.environ) / contexts.FILE).exists()


def api(args: argparse.Namespace) -> Api:
    """The API this command acts through: a server's (remote), or this process's (local,
    acting as ``--as NAME``, or as ``local-admin`` when no one is named). One per command."""
    made: Api | None = getattr(args, "made_api", None)
    if made is not None:
        return made
    target = remote(args)
    if target is None:
        local: Callable[[argparse.Namespace], Api] = LOCAL.get()
        made = local(args)
    else:
        warn_unknown()
        connect: Callable[[str, str | None], Api] = REMOTE.get()
        made = connect(target.server, target.token)
        if getattr(args, "actor", None) is not None:
            who = _who(made)
            made.close()
            raise RefusedError(
                f"--as is only for local administration; this command acts as {who}",
                hint="leave --as out: the token's member acts (nebula whoami)",
            )
    args.made_api = made
    return made


def done(args: argparse.Namespace) -> None:
    """The command has ended: its connection (if it made one) is closed."""
    made: Api | None = getattr(args, "made_api", None)
    if made is not None:
        made.close()
        args.made_api = None


def _who(client: Api) -> str:
    """``bob (token 4)``: who the token signs in as, for the refusal of ``--as``."""
    try:
        me = client.get("/api/v1/whoami")
    except NebulaError:  # unauthorized, unreachable: the refusal of --as stands all the same
        return "the member behind its token"
    token = me.get("token") or {}
    return f"{me['member']} (token {token['id']})" if token.get("id") else str(me["member"])


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
            if exc.hint == LONGER_HINT:  # a duration, but too long: say so
                raise argparse.ArgumentTypeError(exc.message.removeprefix(f"{option}: ")) from exc
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration (e.g. 90s, 5m, 1h)"
            ) from exc

    parse.__name__ = "duration"
    return parse


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
    parser.add_argument(
        "--server",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="act through this Nebula server (default: NEBULA_SERVER, or the context in use)",
    )
    parser.add_argument(
        "--context", metavar="NAME", default=argparse.SUPPRESS, help="use this saved context"
    )
    # Local mode: the member acting (their rights apply; without it, ``local-admin``).
    # Refused remotely: the token says who acts.
    parser.add_argument(
        "--as",
        dest="actor",
        metavar="NAME",
        help="local mode: act as this member (default: local-admin, the store's operator)",
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
