"""``nebula serve``: the scheduler (polling, reconciling, expiring approvals) plus the web server."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from reconciler.cli import common
from reconciler.lazy import Part

SERVE = Part(
    "reconciler.serving", "serve_and_exit"
)  # the web app, the scheduler: this command only


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers,
        "serve",
        serve,
        "the scheduler (polling, reconciling, expiring approvals) plus the web server",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="how much to log (default info)",
    )
    p.add_argument(
        "--log-format",
        choices=["json", "text"],
        default=None,
        help="default: json when stderr is not a terminal, text when it is",
    )


def serve(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise SystemExit(f"error: --port {args.port} is not a port number")
    serve_and_exit: Callable[..., int] = SERVE.get()
    return serve_and_exit(
        common.load_settings(args),
        unknown=common.unknown_settings(),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        json_logs=None if args.log_format is None else args.log_format == "json",
    )
