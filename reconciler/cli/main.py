"""Entry point of the ``nebula`` console script."""

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
from reconciler.cli import output
from reconciler.errors import NebulaError, RefusedError, UnauthorizedError

# Modules that contribute subcommands: each has ``register(subparsers)`` and sets
# ``func`` on its parsers to a callable taking the parsed namespace and returning an exit code.
COMMAND_MODULES = (
    "reconciler.cli.files",
    "reconciler.cli.rendering",
    "reconciler.cli.projects",
    "reconciler.cli.changesets",
    "reconciler.cli.approvals",
    "reconciler.cli.org",
    "reconciler.cli.tokens",
    "reconciler.cli.secrets",
    "reconciler.cli.deployments",
    "reconciler.cli.demo",
    "reconciler.cli.serving",
    "reconciler.cli.history",
    "reconciler.cli.waiting",
    "reconciler.cli.auditing",
    "reconciler.cli.completion",
)

Handler = Callable[[argparse.Namespace], int]


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
    parser.add_argument("--version", action="version", version=f"nebula {reconciler.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    with output.escaping():
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return output.EXIT_USAGE
    try:
        output.configure(args)
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not as noise when the interpreter exits
        return code
    except (RefusedError, UnauthorizedError) as exc:
        output.error(exc.message, exc.hint)
        return output.EXIT_REFUSED
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


if __name__ == "__main__":
    raise SystemExit(main())
