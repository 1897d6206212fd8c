"""``nebula changesets`` and ``nebula changeset show|apply|discard``."""

from __future__ import annotations

import argparse
import json

from reconciler import views
from reconciler.admin import projects
from reconciler.cli import common, output
from reconciler.errors import RefusedError
from reconciler.requests import applying, changesets


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
    common.add_as(p)
    common.add_json(p)
    p = common.command(changeset, "discard", discard, "discard a draft or a pending change set")
    p.add_argument("id")
    common.add_as(p)
    common.add_json(p)


def _value(value: object) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value)


def _print(data: dict[str, object]) -> None:
    commit = str(data["commit"] or "")[:7]
    head = f"change set {data['id']}  {data['project']}/{data['environment']}  {data['state']}"
    print(head + (f"  commit {commit}" if commit else "") + f"  owner {data['owner']}")
    if data.get("message"):
        print(f"  {data['message']}")
    if data.get("note"):
        print(f"  note: {data['note']}")
    for line in data["lines"]:  # type: ignore[attr-defined]
        mark = " DRIFTED" if line["drifted"] else ""
        print(
            f"  {line['service']:<16} {line['field']:<32} {_value(line['before'])} -> {_value(line['after'])}{mark}"
        )


def list_changesets(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        project_id = projects.get(session, args.project).id if args.project else None
        rows = [views.changeset_of(session, c) for c in changesets.listing(session, project_id)]
    if args.state:
        rows = [r for r in rows if r["state"] == args.state]
    if args.json:
        output.print_json({"changesets": rows})
    else:
        print(
            output.table(
                [
                    [
                        str(r["id"]),
                        str(r["project"]),
                        str(r["environment"]),
                        str(r["state"]),
                        str(r["commit"] or "")[:7],
                        str(len(r["lines"])),
                        str(r["message"] or "")[:50],
                    ]
                    for r in rows
                ],
                ["id", "project", "environment", "state", "commit", "lines", "message"],
            )
        )
    return 0


def show(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        data = views.changeset_of(
            session, changesets.get(session, common.parse_id(args.id, "change set"))
        )
    if args.json:
        output.print_json({"changeset": data})
    else:
        _print(data)
    return 0


def apply(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        changeset = changesets.get(session, common.parse_id(args.id, "change set"))
        result = applying.apply(session, ctx, changeset, requester=who)
        data = views.changeset_of(session, changeset)
        deployments = [views.deployment(d) for d in result.deployments]
        ended = views.ended(result.ended)
    if result.refused:
        raise RefusedError(f"Change set {args.id} not applied: {result.refused}")
    if args.json:
        output.print_json({"changeset": data, "deployments": deployments, "ended": ended})
    else:
        _print(data)
        for d in deployments:
            print(f"  deployment {d['id']}: {d['service']} {d['release']} {d['state']}")
        for e in ended:
            print(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def discard(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        changeset = changesets.get(session, common.parse_id(args.id, "change set"))
        changesets.discard(session, ctx.clock, changeset, f"Discarded by {who}", actor=who)
        data = views.changeset_of(session, changeset)
    if args.json:
        output.print_json({"changeset": data})
    else:
        print(f"change set {args.id} discarded")
    return 0
