"""``nebula completion bash|zsh|fish``: a completion script generated from the parser itself
(shtab), so it knows every command and option there is.

    source <(nebula completion bash)
    nebula completion zsh > "${fpath[1]}/_nebula"
    nebula completion fish > ~/.config/fish/completions/nebula.fish
"""

from __future__ import annotations

import argparse

from reconciler.cli import common, output
from reconciler.lazy import Part

COMPLETE = Part("shtab", "complete")  # the one user of shtab, loaded when it runs

SHELLS = ("bash", "zsh", "fish")


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "completion", completion, "print a shell completion script")
    p.add_argument("shell", choices=SHELLS)


def completion(args: argparse.Namespace) -> int:
    output.echo(_script(args.root_parser, args.shell).rstrip("\n"))
    return 0


def _script(parser: argparse.ArgumentParser, shell: str) -> str:
    return str(COMPLETE.get()(parser, shell=shell))
