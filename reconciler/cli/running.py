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

# Modules that contribute subcommands, with the commands each registers: ``register(subparsers)``
# sets ``func`` on its parsers to a callable taking the parsed namespace and returning an exit
# code. A command's own module is all its parser needs (``nebula --help``, a usage error and
# ``completion`` build them all); tests/cli/test_commands.py checks this table against them.
COMMANDS: dict[str, tuple[str, ...]] = {
    "reconciler.cli.offline": ("validate", "render"),
    "reconciler.cli.sessions": ("login", "logout", "context", "whoami"),
    "reconciler.cli.projects": ("project", "reconcile"),
    "reconciler.cli.changesets": ("changesets", "changeset"),
    "reconciler.cli.approvals": ("approvals", "approve", "reject"),
    "reconciler.cli.people": ("member", "grant"),
    "reconciler.cli.org": ("policy", "service", "freeze"),
    "reconciler.cli.tokens": ("token",),
    "reconciler.cli.secrets": ("secret",),
    "reconciler.cli.deployments": (
        "status", "deployments", "deployment", "rollback", "promote", "redeploy", "cancel",
    ),
    "reconciler.cli.live": ("diff", "simulated"),
    "reconciler.cli.suspensions": ("suspend", "resume"),
    "reconciler.cli.demo": ("demo",),
    "reconciler.cli.serving": ("serve",),
    "reconciler.cli.history": ("history",),
    "reconciler.cli.waiting": ("wait",),
    "reconciler.cli.auditing": ("audit",),
    "reconciler.cli.completion": ("completion",),
}  # fmt: skip
COMMAND_MODULES = tuple(COMMANDS)
_OWNER = {command: module for module, names in COMMANDS.items() for command in names}
_GLOBAL_VALUES = ("--config", "--server", "--context")  # global options that take a value

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


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is no option or option's value)."""
    words = iter(argv)
    for word in words:
        if word in _GLOBAL_VALUES:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``'s command: that command's module only, when ``argv`` names one
    (building every command's parser costs a command a fifth of its start); all of them for
    ``--help``, an unknown word, ``completion`` or no ``argv``."""
    command = command_of(argv) if argv is not None else None
    module = _OWNER.get(command or "")
    everything = module is None or command == "completion"
    parser = _Parser(
        prog="nebula",
        description="Nebula: GitOps deployments with approvals.",
        epilog=settings_help() if everything else None,
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
    for name in COMMAND_MODULES if everything or module is None else (module,):
        importlib.import_module(name).register(subparsers)
    return parser


def run(arguments: Sequence[str]) -> int:
    with output.escaping():
        return _run(arguments)


def _run(argv: Sequence[str]) -> int:
    parser = build_parser(argv)
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
