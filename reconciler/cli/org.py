"""Organization commands: members, policies, per-service settings, freezes (each act audited)."""

from __future__ import annotations

import argparse

from reconciler.admin import members, policies, projects
from reconciler.cli import common, output, tables
from reconciler.core.states import AdminAction, Role
from reconciler.errors import ForbiddenError
from reconciler.requests import approvals
from reconciler.store import schema


def register(subparsers: common.Subparsers) -> None:
    member = subparsers.add_parser("member", help="organization members").add_subparsers(
        dest="member_command", metavar="COMMAND", required=True
    )
    p = common.command(member, "add", member_add, "add a member or change their role")
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=[r.value for r in Role])
    p.add_argument("--slack-id", help="their Slack user id, for decisions from Slack")
    common.add_as(p)
    common.add_json(p)
    p = common.command(member, "remove", member_remove, "remove a member and their API tokens")
    p.add_argument("name")
    common.add_as(p)
    p = common.command(member, "list", member_list, "list members")
    common.add_json(p)

    policy = subparsers.add_parser("policy", help="organization policies").add_subparsers(
        dest="policy_command", metavar="COMMAND", required=True
    )
    p = common.command(policy, "set", policy_set, "set a policy")
    p.add_argument("key", choices=sorted(policies.DEFAULTS))
    p.add_argument("value")
    common.add_as(p)
    p = common.command(policy, "list", policy_list, "show the policies")
    common.add_json(p)

    service = subparsers.add_parser("service", help="per-service settings").add_subparsers(
        dest="service_command", metavar="COMMAND", required=True
    )
    p = common.command(service, "set", service_set, "set skip_production_approval (admin only)")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    p.add_argument("key", choices=["skip_production_approval"])
    p.add_argument("value")
    common.add_as(p)

    freeze = subparsers.add_parser("freeze", help="weekly deploy-freeze windows").add_subparsers(
        dest="freeze_command", metavar="COMMAND", required=True
    )
    p = common.command(freeze, "add", freeze_add, "add a weekly freeze window")
    p.add_argument("--days", required=True, help="e.g. sat,sun")
    p.add_argument("--from", dest="start", required=True, metavar="HH:MM")
    p.add_argument("--to", dest="end", required=True, metavar="HH:MM")
    p.add_argument("--tz", default="UTC")
    common.add_as(p)
    common.add_json(p)
    p = common.command(freeze, "list", freeze_list, "list freeze windows")
    common.add_json(p)
    p = common.command(freeze, "remove", freeze_remove, "remove a freeze window")
    p.add_argument("id")
    common.add_as(p)


MEMBER_COLUMNS = (
    tables.Column("name", "name"),
    tables.Column("role", "role"),
    tables.Column("slack id", "slack_id"),
)
FREEZE_COLUMNS = tuple(tables.Column(k, k) for k in ("id", "days", "from", "to", "tz"))


def member_add(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        before = members.find(session, args.name)
        old_role = before.role if before is not None else None
        member = members.add(session, ctx.clock, args.name, args.role, args.slack_id)
        approvals.refresh_waiting(session, ctx.clock)
        data = {"name": member.name, "role": member.role, "slack_id": member.slack_id}
        if old_role is None:
            common.audit(
                ctx,
                session,
                who,
                AdminAction.MEMBER_ADD,
                f"member {member.name}",
                f"Added {member.name} as {member.role}",
            )
        else:
            common.audit(
                ctx,
                session,
                who,
                AdminAction.MEMBER_ROLE,
                f"member {member.name}",
                f"Role of {member.name}: {old_role} -> {member.role}",
            )
    if args.json:
        output.print_json({"member": data})
    else:
        output.echo(f"member {data['name']} is {data['role']}")
    return 0


def member_remove(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        member = members.remove(session, args.name)
        approvals.refresh_waiting(session, ctx.clock)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.MEMBER_REMOVE,
            f"member {member.name}",
            f"Removed {member.name} ({member.role}) and their API tokens",
        )
    output.echo(f"member {args.name} removed")
    return 0


def member_list(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
        rows = [
            {"name": m.name, "role": m.role, "slack_id": m.slack_id or ""}
            for m in members.listing(session)
        ]
    if args.json:
        output.print_json({"members": rows})
    else:
        tables.show(rows, MEMBER_COLUMNS)
    return 0


def policy_set(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        old = getattr(policies.load(session), args.key)
        value = policies.set_policy(session, args.key, args.value)
        approvals.refresh_waiting(session, ctx.clock)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.POLICY_SET,
            f"policy {args.key}",
            f"{args.key}: {str(old).lower()} -> {str(value).lower()}",
        )
    output.echo(f"{args.key} = {str(value).lower()}")
    return 0


def policy_list(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
        loaded = policies.load(session)
    data = {
        "forbid_self_approval": loaded.forbid_self_approval,
        "rollbacks_skip_approval": loaded.rollbacks_skip_approval,
    }
    if args.json:
        output.print_json({"policies": data})
    else:
        for key, value in data.items():
            output.echo(f"{key} = {str(value).lower()}")
    return 0


def service_set(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        role = members.role_of(session, who)
        if role is None or not role.can_decide:
            raise ForbiddenError(
                f"Only an admin or owner can set skip_production_approval (acting as {who}); "
                "pass --as an admin"
            )
        project = projects.get(session, args.project)
        unit = projects.unit(
            session, projects.environment(session, project, args.env), args.service
        )
        unit.skip_production_approval = policies.parse_bool(args.value, args.key)
        value = unit.skip_production_approval
        common.audit(
            ctx,
            session,
            who,
            AdminAction.SERVICE_SET,
            f"{args.project}/{args.env}/{args.service}",
            f"{args.key} = {str(value).lower()}",
            project=project,
        )
    output.echo(
        f"{args.project}/{args.env}/{args.service}: skip_production_approval = {str(value).lower()}"
    )
    return 0


def freeze_add(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        row = policies.add_freeze(session, ctx.clock, args.days, args.start, args.end, args.tz)
        data = _freeze(row)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.FREEZE_ADD,
            f"freeze {row.id}",
            f"Freeze {data['days']} {data['from']}-{data['to']} {data['tz']}",
        )
    if args.json:
        output.print_json({"freeze": data})
    else:
        output.echo(f"freeze {data['id']}: {data['days']} {data['from']}-{data['to']} {data['tz']}")
    return 0


def _freeze(row: schema.FreezeWindowRow) -> dict[str, str]:
    return {"id": str(row.id), "days": row.days, "from": row.start, "to": row.end, "tz": row.zone}


def freeze_list(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
        rows = [_freeze(r) for r in policies.freeze_rows(session)]
    if args.json:
        output.print_json({"freezes": rows})
    else:
        tables.show(rows, FREEZE_COLUMNS)
    return 0


def freeze_remove(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        freeze_id = common.parse_id(args.id, "freeze window")
        policies.remove_freeze(session, freeze_id)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.FREEZE_REMOVE,
            f"freeze {freeze_id}",
            f"Removed freeze window {freeze_id}",
        )
    output.echo(f"freeze {args.id} removed")
    return 0
