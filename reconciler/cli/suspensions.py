"""``nebula suspend`` and ``nebula resume``: hold a project or one environment (admin or owner)."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output
from reconciler.client import paths


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "suspend", suspend, "apply nothing in a project or environment until resumed"
    )
    p.add_argument("project")
    p.add_argument("--env", help="only this environment")
    p.add_argument("--reason", required=True, help="why, e.g. an incident")
    common.add_json(p)
    p = common.command(subparsers, "resume", resume, "resume a suspended project or environment")
    p.add_argument("project")
    p.add_argument("--env", help="only this environment")
    common.add_json(p)


def _where(data: dict[str, object]) -> str:
    env = data.get("environment")
    return f"{data['project']}/{env}" if env else str(data["project"])


def suspend(args: argparse.Namespace) -> int:
    body = {"environment": args.env, "reason": args.reason}
    data = common.api(args).post(paths.api("projects", args.project, "suspend"), body)
    if args.json:
        output.print_json(data)
    else:
        output.echo(f"{_where(data)} suspended: {data['suspended']['reason']}")
    return output.EXIT_OK


def resume(args: argparse.Namespace) -> int:
    body = {"environment": args.env}
    data = common.api(args).post(paths.api("projects", args.project, "resume"), body)
    if args.json:
        output.print_json(data)
    else:
        output.echo(f"{_where(data)} resumed")
        for changeset in data["changesets"]:
            output.echo(f"  change set {changeset['id']}: {changeset['state']}")
    return output.EXIT_OK
