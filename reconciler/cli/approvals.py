"""``nebula approvals``, ``nebula approve ID``, ``nebula reject ID``."""

from __future__ import annotations

import argparse

from reconciler.cli import changesets as changesets_cli
from reconciler.cli import common, output, tables
from reconciler.core.states import ApprovalState


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "approvals", list_approvals, "pending and decided approvals")
    p.add_argument("project", nargs="?")
    p.add_argument("--state", help="only approvals in this state (e.g. pending)")
    common.add_json(p)
    p = common.command(subparsers, "approve", approve, "approve a pending request")
    p.add_argument("id")
    common.add_json(p)
    p = common.command(subparsers, "reject", reject, "reject a pending request")
    p.add_argument("id")
    p.add_argument("--reason")
    common.add_json(p)


APPROVAL_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("where", lambda r: f"{r['project']}/{r['environment']}"),
    tables.Column("target", lambda r: f"{r['target']} {r['target_id']}"),
    tables.Column("kind", "kind"),
    tables.Column("state", "state"),
    tables.Column("requested by", lambda r: changesets_cli.requester(r, "requested_by")),
    tables.Column("decided by", "decided_by"),
    tables.Column("rule", "rule"),
    tables.Column("reason", "reason", text=True),
    tables.Column("created", "created_at", only_wide=True),
    tables.Column("expires", "expires_at", only_wide=True),
    tables.Column("decided", "decided_at", only_wide=True),
)


def list_approvals(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/approvals", project=args.project)["approvals"]
    if args.state:
        rows = [r for r in rows if r["state"] == args.state]
    if args.json:
        output.print_json({"approvals": rows})
        return 0
    pending = [r for r in rows if r["state"] == ApprovalState.PENDING]
    decided = [r for r in rows if r["state"] != ApprovalState.PENDING]
    groups = [("Pending", pending), ("Decided", decided)]
    if args.state:  # one state asked for: one group, no empty other one
        groups = [groups[0] if args.state == ApprovalState.PENDING else groups[1]]
    for number, (title, group) in enumerate(groups):
        if number:
            output.echo()
        output.echo(f"{title}:")
        if group:
            tables.show(group, APPROVAL_COLUMNS)
            for r in group:
                for evidence in r.get("evidence") or []:
                    output.echo(f"  approval {r['id']}: {evidence}")
        else:
            output.echo(f"  No {title.lower()} approvals.")
    return 0


def _decide(args: argparse.Namespace, verb: str) -> int:
    approval_id = common.parse_id(args.id, "approval")
    body = {"reason": args.reason} if getattr(args, "reason", None) is not None else None
    decided = common.api(args).post(f"/api/v1/approvals/{approval_id}/{verb}", body)
    data, ended = decided["approval"], decided["ended"]
    if args.json:
        output.print_json({"approval": data, "ended": ended})
    else:
        reason = f": {data['reason']}" if data["reason"] else ""
        output.echo(f"approval {data['id']} {data['state']} by {data['decided_by']}{reason}")
        for e in ended:
            output.echo(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def approve(args: argparse.Namespace) -> int:
    return _decide(args, "approve")


def reject(args: argparse.Namespace) -> int:
    return _decide(args, "reject")
