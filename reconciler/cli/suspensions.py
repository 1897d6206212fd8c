"""``nebula suspend`` and ``nebula resume``: hold a project or one environment (admin or owner)."""

from __future__ import annotations

import argparse

from reconciler import views
from reconciler.cli import common, output
from reconciler.requests import suspending


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "suspend", suspend, "apply nothing in a project or environment until resumed"
    )
    p.add_argument("project")
    p.add_argument("--env", help="only this environment")
    p.add_argument("--reason", required=True, help="why, e.g. an incident")
    common.add_as(p, required=True)
    common.add_json(p)
    p = common.command(subparsers, "resume", resume, "resume a suspended project or environment")
    p.add_argument("project")
    p.add_argument("--env", help="only this environment")
    common.add_as(p, required=True)
    common.add_json(p)


def suspend(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        done = suspending.suspend(
            session, ctx, args.project, args.env, args.reason, common.actor(args, session)
        )
        data = views.suspension_outcome(done)
    if args.json:
        output.print_json(data)
    else:
        output.echo(f"{done.where} suspended: {data['suspended']['reason']}")
    return output.EXIT_OK


def resume(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        done = suspending.resume(session, ctx, args.project, args.env, common.actor(args, session))
        data = views.suspension_outcome(done)
    if args.json:
        output.print_json(data)
    else:
        output.echo(f"{done.where} resumed")
        for changeset in data["changesets"]:
            output.echo(f"  change set {changeset['id']}: {changeset['state']}")
    return output.EXIT_OK
