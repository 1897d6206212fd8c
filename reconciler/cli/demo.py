"""``nebula demo``."""

from __future__ import annotations

import argparse
from pathlib import Path

from reconciler import demo
from reconciler.cli import common
from reconciler.durations import parse_duration


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "demo", run, "the embedded default end to end, in under a minute"
    )
    p.add_argument("--delay", default="0.2s", help="simulated time per stage (default 0.2s)")
    p.add_argument("--keep", metavar="DIR", help="keep the demo's repository and state in DIR")


def run(args: argparse.Namespace) -> int:
    return demo.main(
        parse_duration(args.delay, setting="--delay"), Path(args.keep) if args.keep else None
    )
