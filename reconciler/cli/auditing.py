"""``nebula audit [--since 24h]``: the administrative acts, oldest first, with who and when."""

from __future__ import annotations

import argparse

from reconciler import views
from reconciler.admin import auditing
from reconciler.cli import common, output, tables

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
        type=common.duration("--since"),
        metavar="DURATION",
        help="only what happened in this last stretch, e.g. 24h or 7d",
    )
    common.add_json(p)


def audit(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        since = ctx.clock.now() - args.since if args.since is not None else None
        rows = [views.audit(e) for e in auditing.listing(session, since)]
    if args.json:
        output.print_json({"events": rows})
    else:
        tables.show(rows, AUDIT_COLUMNS)
    return 0
