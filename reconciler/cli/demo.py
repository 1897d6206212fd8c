"""``nebula demo``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from reconciler.cli import common
from reconciler.durations import parse_duration
from reconciler.lazy import Part

# The demo brings the web app and its server, which no other command needs (start-up time).
DEMO = Part("reconciler.demo", "main")


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "demo", run, "the embedded default end to end, in under a minute"
    )
    p.add_argument("--delay", default="0.2s", help="simulated time per stage (default 0.2s)")
    p.add_argument("--keep", metavar="DIR", help="keep the demo's repository and state in DIR")
    p.add_argument(
        "--port", type=int, default=None, help="the status page's port (default: a free one)"
    )
    p.add_argument(
        "--serve", action="store_true", help="keep the status page up after the demo (Ctrl-C ends)"
    )


def run(args: argparse.Namespace) -> int:
    demo: Callable[..., int] = DEMO.get()
    return demo(
        parse_duration(args.delay, setting="--delay"),
        Path(args.keep) if args.keep else None,
        port=args.port or 0,
        stay=args.serve,
    )
