"""``nebula status``, ``deployments``, ``deployment show``, ``rollback``, ``promote``,
``redeploy`` and ``cancel``."""

from __future__ import annotations

import argparse
from typing import Any

from sqlalchemy import select

from reconciler import views
from reconciler.admin import projects
from reconciler.cli import common, output
from reconciler.errors import NotFoundError
from reconciler.requests import actions
from reconciler.store import schema


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "status", status, "active releases and in-flight deployments")
    p.add_argument("project", nargs="?")
    p.add_argument("--env")
    common.add_json(p)
    p = common.command(subparsers, "deployments", list_deployments, "deployments, newest last")
    p.add_argument("project", nargs="?")
    p.add_argument("--env")
    p.add_argument("--service")
    common.add_json(p)
    deployment = subparsers.add_parser("deployment", help="one deployment").add_subparsers(
        dest="deployment_command", metavar="COMMAND", required=True
    )
    p = common.command(deployment, "show", show, "a deployment with its events")
    p.add_argument("id")
    common.add_json(p)
    p = common.command(subparsers, "rollback", rollback, "roll back to a retained release")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    p.add_argument("--to", help="r-N (default: the previous release)")
    common.add_as(p)
    common.add_json(p)
    p = common.command(
        subparsers, "promote", promote, "promote the active release to another environment"
    )
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--from", dest="source", required=True)
    p.add_argument("--to", dest="target", required=True)
    common.add_as(p)
    common.add_json(p)
    p = common.command(subparsers, "redeploy", redeploy, "a new release from the active image")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    common.add_as(p)
    common.add_json(p)
    p = common.command(
        subparsers, "cancel", cancel, "cancel a deployment that has not taken traffic"
    )
    p.add_argument("id")
    common.add_as(p)
    common.add_json(p)


def status(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        rows = [projects.get(session, args.project)] if args.project else projects.listing(session)
        if args.env and args.project:
            projects.environment(session, rows[0], args.env)
        data = [views.project_status(session, p, args.env) for p in rows]
    if args.json:
        output.print_json({"projects": data})
        return 0
    for project in data:
        head = f"{project['slug']}  commit {str(project['commit'] or '-')[:7]}"
        if project["blocker"]:
            head += f"  BLOCKED ({project['blocker']}): {project['message']}"
        print(head)
        for env in project["environments"]:
            print(f"  {env['name']}{' (protected)' if env['protected'] else ''}")
            table = []
            for unit in env["services"]:
                d = unit["deployment"]
                table.append(
                    [
                        "    " + unit["name"],
                        unit["kind"],
                        unit["active_release"] or "-",
                        (f"{d['release']} {d['state']}" if d else "-"),
                        (d["blocker"] or "") if d else "",
                        ((d["message"] or "") if d else "")[:90],
                    ]
                )
            if table:
                print(
                    output.table(
                        table, ["    service", "kind", "active", "deployment", "blocker", "message"]
                    )
                )
    return 0


def list_deployments(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        query = select(schema.Deployment).order_by(schema.Deployment.id)
        if args.project:
            query = query.where(
                schema.Deployment.project_id == projects.get(session, args.project).id
            )
        rows = [views.deployment(d) for d in session.scalars(query)]
    if args.env:
        rows = [r for r in rows if r["environment"] == args.env]
    if args.service:
        rows = [r for r in rows if r["service"] == args.service]
    if args.json:
        output.print_json({"deployments": rows})
    else:
        print(
            output.table(
                [
                    [
                        r["id"],
                        f"{r['project']}/{r['environment']}",
                        r["service"],
                        r["release"],
                        r["kind"],
                        r["state"],
                        r["blocker"] or "",
                        (r["message"] or "")[:70],
                    ]
                    for r in rows
                ],
                ["id", "where", "service", "release", "kind", "state", "blocker", "message"],
            )
        )
    return 0


def show(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        d = session.get(schema.Deployment, common.parse_id(args.id, "deployment"))
        if d is None:
            raise NotFoundError(
                f"No deployment {args.id}", hint="list them with: nebula deployments"
            )
        data = views.deployment_with_events(session, d)
    if args.json:
        output.print_json({"deployment": data})
        return 0
    print(
        f"deployment {data['id']}: {data['project']}/{data['environment']} {data['service']} "
        f"{data['release']} ({data['kind']}) {data['state']}"
    )
    if data["blocker"] or data["message"]:
        print(f"  {data['blocker'] or ''} {data['message'] or ''}".rstrip())
    for e in data["events"]:
        print(
            f"  {e['at']}  {(e['state'] or ''):<18} {e['message'] or ''}"
            + (f"  ({e['actor']})" if e["actor"] else "")
        )
    return 0


def _requested(args: argparse.Namespace, result: actions.Requested) -> int:
    data: dict[str, Any] = {
        "deployment": views.deployment(result.deployment),
        "approval": views.approval(result.approval) if result.approval else None,
        "ended": views.ended(result.ended),
    }
    if args.json:
        output.print_json(data)
    else:
        d = data["deployment"]
        print(
            f"deployment {d['id']}: {d['service']} {d['release']} ({d['kind']}) {d['state']}"
            + (f": {d['message']}" if d["message"] else "")
        )
        if data["approval"] and data["approval"]["state"] == "pending":
            print(f"  approval {data['approval']['id']} is pending")
        for e in data["ended"]:
            print(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def rollback(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        result = actions.rollback(
            session, ctx, args.project, args.service, args.env, args.to, common.actor(args, session)
        )
        return _requested(args, result)


def promote(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        result = actions.promote(
            session,
            ctx,
            args.project,
            args.service,
            args.source,
            args.target,
            common.actor(args, session),
        )
        return _requested(args, result)


def redeploy(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        result = actions.redeploy(
            session, ctx, args.project, args.service, args.env, common.actor(args, session)
        )
        return _requested(args, result)


def cancel(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        d = actions.cancel(
            session, ctx, common.parse_id(args.id, "deployment"), common.actor(args, session)
        )
        data = views.deployment(d)
    if args.json:
        output.print_json({"deployment": data})
    else:
        print(f"deployment {data['id']} cancelled")
    return 0
