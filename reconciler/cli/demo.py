"""``nebula demo``."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

from reconciler.cli import common
from reconciler.durations import parse_duration


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(args: argparse.Namespace) -> int:
    # Imported when run, not when the parser is built: the demo brings the web app and its
    # server, which no other command needs (start-up time).
    from reconciler import demo

    return demo.main(
        parse_duration(args.delay, setting="--delay"),
        Path(args.keep) if args.keep else None,
        port=args.port or _free_port(),
        stay=args.serve,
    )
