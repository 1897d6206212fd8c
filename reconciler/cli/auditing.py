"""``nebula audit [--since 24h]``: the administrative acts, oldest first, with who and when."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output, tables
from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError

AUDIT_COLUMNS = (
    tables.Column("at", "at"),
    tables.Column("actor", "actor"),
    tables.Column("action", "action"),
    tables.Column("target", "target"),
    tables.Column("message", "message", text=True),
)


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "audit", audit, "who changed what: the audit trail")
    p.add_argument(
        "--since",
        type=_since,
        metavar="DURATION",
        help="only what happened in this last stretch, e.g. 24h or 7d",
    )
    common.add_json(p)


def _since(text: str) -> str:
    """A duration (checked here, sent as written: the server counts back from its own now;
    further back than anything happened is everything)."""
    try:
        parse_duration(text, setting="--since", longest=None)
    except OverflowError:
        pass  # further back than time goes: everything
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 90s, 5m, 1h)") from exc
    return text.strip()


def audit(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/audit", since=args.since)["events"]
    if args.json:
        output.print_json({"events": rows})
    else:
        tables.show(rows, AUDIT_COLUMNS)
    return 0
