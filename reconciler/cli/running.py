"""Running one command: the parser, built from the command modules, and what every command
shares at the end (one error line and its exit code, a closed pipe, its connection closed).

``nebula --help`` builds the parser from command modules that import nothing heavy; a command
loads what it needs (the HTTP client, the local backend, the demo, the server) through
``reconciler.lazy`` only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import textwrap
from collections.abc import Callable, Sequence

import reconciler
from reconciler import settings
from reconciler.cli import common, output
from reconciler.errors import NebulaError

# Modules that contribute subcommands: each has ``register(subparsers)`` and sets
# ``func`` on its parsers to a callable taking the parsed namespace and returning an exit code.
COMMAND_MODULES = (
    "reconciler.cli.offline",
    "reconciler.cli.sessions",
    "reconciler.cli.projects",
    "reconciler.cli.changesets",
    "reconciler.cli.approvals",
    "reconciler.cli.people",
    "reconciler.cli.org",
    "reconciler.cli.tokens",
    "reconciler.cli.secrets",
    "reconciler.cli.deployments",
    "reconciler.cli.live",
    "reconciler.cli.suspensions",
    "reconciler.cli.demo",
    "reconciler.cli.serving",
    "reconciler.cli.history",
    "reconciler.cli.waiting",
    "reconciler.cli.auditing",
    "reconciler.cli.completion",
)

Handler = Callable[[argparse.Namespace], int]
VERSION = f"nebula {reconciler.__version__}"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """Bad usage: one line on stderr, exit 2 (argparse's own convention, kept explicit)."""
        output.error(f"{message} (see: {self.prog} --help)")
        raise SystemExit(output.EXIT_USAGE)


def settings_help() -> str:
    """The settings, for ``nebula --help``: each with its default and what it means."""
    lines = [
        "settings: NEBULA_* environment variables, or the same keys (with or without NEBULA_,",
        "in any case) in the file given with --config; the environment wins over the file.",
    ]
    for spec in settings.TABLE:
        default = f" (default {spec.default})" if spec.default else ""
        secret = " (secret)" if spec.secret else ""
        lines.append(f"  {spec.variable}{default}{secret}")
        lines += textwrap.wrap(spec.about, 92, initial_indent=" " * 6, subsequent_indent=" " * 6)
    lines += ["", "client side (a remote command line: nebula login, or these):"]
    for name, about in settings.CLIENT_VARIABLES.items():
        lines.append(f"  {settings.PREFIX}{name.upper()}")
        lines += textwrap.wrap(about, 92, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nebula",
        description="Nebula: GitOps deployments with approvals.",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="server settings file (nebula-server.toml); NEBULA_* variables override it",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="act through this Nebula server (default: NEBULA_SERVER, or the context in use)",
    )
    parser.add_argument("--context", metavar="NAME", help="use this saved context (nebula login)")
    parser.add_argument("--version", action="version", version=VERSION)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def run(arguments: Sequence[str]) -> int:
    with output.escaping():
        return _run(arguments)


def _run(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.root_parser = parser  # what `nebula completion` describes
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return output.EXIT_USAGE
    try:
        output.configure(args)
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not as noise when the interpreter exits
        return code
    except NebulaError as exc:
        output.error(exc.message, exc.hint)
        return output.EXIT_REFUSED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``nebula status | head``): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        common.done(args)
