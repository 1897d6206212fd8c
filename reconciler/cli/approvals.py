"""``nebula approvals``, ``nebula approve ID``, ``nebula reject ID``."""

from __future__ import annotations

import argparse

from reconciler import views
from reconciler.admin import projects
from reconciler.cli import common, output
from reconciler.core.states import DecisionChannel
from reconciler.requests import approvals, deciding


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "approvals", list_approvals, "pending and decided approvals")
    p.add_argument("project", nargs="?")
    p.add_argument("--state", help="only approvals in this state (e.g. pending)")
    common.add_json(p)
    p = common.command(subparsers, "approve", approve, "approve a pending request")
    p.add_argument("id")
    common.add_as(p, required=True)
    common.add_json(p)
    p = common.command(subparsers, "reject", reject, "reject a pending request")
    p.add_argument("id")
    p.add_argument("--reason")
    common.add_as(p, required=True)
    common.add_json(p)


def list_approvals(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        project_id = projects.get(session, args.project).id if args.project else None
        rows = [views.approval(a) for a in approvals.listing(session, project_id)]
    if args.state:
        rows = [r for r in rows if r["state"] == args.state]
    if args.json:
        output.print_json({"approvals": rows})
        return 0
    for title, group in (
        ("Pending", [r for r in rows if r["state"] == "pending"]),
        ("Decided", [r for r in rows if r["state"] != "pending"]),
    ):
        print(f"{title}:")
        print(
            output.table(
                [
                    [
                        str(r["id"]),
                        f"{r['project']}/{r['environment']}",
                        f"{r['target']} {r['target_id']}",
                        str(r["kind"]),
                        str(r["state"]),
                        str(r["requested_by"]),
                        str(r["decided_by"] or ""),
                        str(r["rule"] or ""),
                    ]
                    for r in group
                ],
                ["id", "where", "target", "kind", "state", "requested by", "decided by", "rule"],
            )
        )
    return 0


def _decide(args: argparse.Namespace, approve: bool) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        decision = deciding.decide(
            session,
            ctx,
            common.parse_id(args.id, "approval"),
            who,
            approve=approve,
            via=DecisionChannel.CLI,
            reason=getattr(args, "reason", None),
        )
        data = views.approval(decision.approval)
        ended = views.ended(decision.ended)
    if args.json:
        output.print_json({"approval": data, "ended": ended})
    else:
        print(f"approval {data['id']} {data['state']} by {data['decided_by']}")
        for e in ended:
            print(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def approve(args: argparse.Namespace) -> int:
    return _decide(args, True)


def reject(args: argparse.Namespace) -> int:
    return _decide(args, False)
