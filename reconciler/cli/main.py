"""Entry point of the ``nebula`` console script.

Start-up time is a feature: ``nebula --version`` answers here, having imported nothing but
this; everything else runs through ``running`` (the parser, every command), loaded by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import reconciler
from reconciler.lazy import Part

RUN = Part("reconciler.cli.running", "run")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:  # nothing else to know: answer before building the parser
        sys.stdout.write(f"nebula {reconciler.__version__}\n")
        return 0
    run: Callable[[Sequence[str]], int] = RUN.get()
    return run(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
