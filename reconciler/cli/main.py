"""Entry point of the ``nebula`` console script.

Start-up time is a feature: ``nebula --version`` answers here, having imported nothing but
this; ``nebula --help`` is printed from the catalog of commands (no command module imported,
no command's parser built); everything else runs through ``running`` (the parser, every
command). Both are loaded by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import reconciler
from reconciler.lazy import Part

RUN = Part("reconciler.cli.running", "run")
HELP = Part("reconciler.cli.catalog", "print_help")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:  # nothing else to know: answer before building the parser
        sys.stdout.write(f"nebula {reconciler.__version__}\n")
        return 0
    if arguments in ([], ["-h"], ["--help"]):  # a bare `nebula` says it on stderr, exit 2
        print_help: Callable[[bool], int] = HELP.get()
        return print_help(not arguments)
    run: Callable[[Sequence[str]], int] = RUN.get()
    return run(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
