"""``nebula changesets`` and ``nebula changeset show|apply|discard``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from reconciler.cli import common, output, tables
from reconciler.core import lines
from reconciler.core.states import OPEN_CHANGESET_STATES, LineKind


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "changesets", list_changesets, "change sets with their lines")
    p.add_argument("project", nargs="?")
    p.add_argument("--state", help="only change sets in this state")
    common.add_json(p)
    changeset = subparsers.add_parser("changeset", help="one change set").add_subparsers(
        dest="changeset_command", metavar="COMMAND", required=True
    )
    p = common.command(changeset, "show", show, "show a change set and its lines")
    p.add_argument("id")
    common.add_json(p)
    p = common.command(changeset, "apply", apply, "apply a draft (or request its approval)")
    p.add_argument("id")
    p.add_argument(
        "--message",
        "-m",
        metavar="TEXT",
        help="what you say about it (at most 500 characters): shown with the change set, its "
        "deployments and its approval request",
    )
    common.add_json(p)
    p = common.command(changeset, "discard", discard, "discard a draft or a pending change set")
    p.add_argument("id")
    common.add_json(p)


def requester(row: tables.Row, key: str = "owner") -> str:
    """Who asked, as a person reads it: a push names the project and the commit's author."""
    who = str(row.get(key) or "")
    author = row.get("author")
    if author and who == row.get("project"):
        return f"{who} (push by {author})"
    return who


# ``nebula changeset show``: one row per line of the change set.
OPEN_STATES = {s.value for s in OPEN_CHANGESET_STATES}


def _shown(line: Mapping[str, Any], side: str) -> str:
    """A line's value; a secret's line never shows one (``secret.STRIPE_KEY changed``)."""
    if line["kind"] == LineKind.SECRET:
        return "changed" if side == "after" else ""
    return lines.shown_value(line[side])


LINE_COLUMNS = (
    tables.Column("service", "service", indent=2),
    tables.Column("field", "field"),
    tables.Column("before", lambda line: _shown(line, "before"), text=True),
    tables.Column("after", lambda line: _shown(line, "after"), text=True),
    tables.Column("via", lambda line: f"via {line['via']}" if line.get("via") else ""),
    tables.Column("drifted", lambda line: "yes" if line.get("drifted") else ""),
)

CHANGESET_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("project", "project"),
    tables.Column("environment", "environment"),
    tables.Column("state", "state"),
    tables.Column("commit", lambda r: tables.short_commit(r["commit"])),
    tables.Column("lines", lambda r: str(len(r["lines"]))),
    tables.Column("message", "message", text=True),
    tables.Column("owner", requester, only_wide=True),
    tables.Column("approval", "approval_id", only_wide=True),
    tables.Column("created", "created_at", only_wide=True),
)


def _print(data: dict[str, Any]) -> None:
    commit = tables.short_commit(data["commit"])
    head = f"change set {data['id']}  {data['project']}/{data['environment']}  {data['state']}"
    output.echo(head + (f"  commit {commit}" if commit else "") + f"  owner {requester(data)}")
    if data.get("commit_message"):
        output.echo(f"  {data['commit_message']}")
    if data.get("applied_message"):
        output.echo(f"  message: {data['applied_message']}")
    gate = data.get("gate")
    ended = data["state"] not in OPEN_STATES
    if data.get("note") and ended:
        output.echo(f"  {data['note']}")  # how it ended
    elif data.get("note") and not (gate and data["note"] == gate["message"]):
        output.echo(f"  note: {data['note']}")
    if gate:
        output.echo(
            f"  gate: {gate['state']} ({gate['environment']}, soak {gate['soak']}): {gate['message']}"
        )
    for evidence in data.get("evidence") or []:
        output.echo(f"  {evidence}")
    if data.get("approval_id"):
        output.echo(f"  approval {data['approval_id']}")
    if data["lines"]:
        tables.show(data["lines"], LINE_COLUMNS)


def list_changesets(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/changesets", project=args.project)["changesets"]
    if args.state:
        rows = [r for r in rows if r["state"] == args.state]
    if args.json:
        output.print_json({"changesets": rows})
    else:
        tables.show(rows, CHANGESET_COLUMNS)
    return 0


def show(args: argparse.Namespace) -> int:
    changeset_id = common.parse_id(args.id, "change set")
    data = common.api(args).get(f"/api/v1/changesets/{changeset_id}")["changeset"]
    if args.json:
        output.print_json({"changeset": data})
    else:
        _print(data)
    return 0


def apply(args: argparse.Namespace) -> int:
    changeset_id = common.parse_id(args.id, "change set")
    body = {"message": args.message} if args.message is not None else None
    applied = common.api(args).post(f"/api/v1/changesets/{changeset_id}/apply", body)
    data, deployments, ended = applied["changeset"], applied["deployments"], applied["ended"]
    if args.json:
        output.print_json({"changeset": data, "deployments": deployments, "ended": ended})
    else:
        _print(data)
        for d in deployments:
            output.echo(f"  deployment {d['id']}: {d['service']} {d['release']} {d['state']}")
        for e in ended:
            output.echo(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def discard(args: argparse.Namespace) -> int:
    changeset_id = common.parse_id(args.id, "change set")
    data = common.api(args).post(f"/api/v1/changesets/{changeset_id}/discard")["changeset"]
    if args.json:
        output.print_json({"changeset": data})
    else:
        output.echo(f"change set {args.id} discarded")
    return 0
