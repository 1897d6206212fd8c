"""Running one command: the parser, built from the command modules, and what every command
shares at the end (one error line and its exit code, a closed pipe, its connection closed).

A command's parser is built from its own module (``catalog`` says which); a command loads
what it needs (the HTTP client, the local backend, the demo, the server) through
``reconciler.lazy`` only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence

from reconciler.cli import catalog, common, output, parsing
from reconciler.errors import NebulaError

COMMAND_MODULES = tuple(catalog.COMMANDS)
_GLOBAL_VALUES = ("--config", "--server", "--context")  # global options that take a value

Handler = Callable[[argparse.Namespace], int]


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
    module = catalog.OWNER.get(command or "")
    everything = module is None or command == "completion"
    parser, subparsers = catalog.root(everything=everything)
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
    if func is None:  # (a command whose own commands are optional: never so far)
        parsing.innermost(args, parser).print_help(sys.stderr)
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
