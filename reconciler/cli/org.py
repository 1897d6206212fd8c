"""Organization commands: members, tokens, policies, per-service settings, freezes, secrets."""

from __future__ import annotations

import argparse
import sys

from reconciler.admin import members, policies, projects, secrets
from reconciler.cli import common, output
from reconciler.core.states import Role
from reconciler.errors import ConfigurationError, ForbiddenError
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
    common.add_json(p)
    p = common.command(member, "list", member_list, "list members")
    common.add_json(p)

    token = subparsers.add_parser("token", help="API tokens").add_subparsers(
        dest="token_command", metavar="COMMAND", required=True
    )
    p = common.command(token, "create", token_create, "create an API token (printed once)")
    common.add_as(p, required=True)
    common.add_json(p)

    policy = subparsers.add_parser("policy", help="organization policies").add_subparsers(
        dest="policy_command", metavar="COMMAND", required=True
    )
    p = common.command(policy, "set", policy_set, "set a policy")
    p.add_argument("key", choices=sorted(policies.DEFAULTS))
    p.add_argument("value")
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
    common.add_json(p)
    p = common.command(freeze, "list", freeze_list, "list freeze windows")
    common.add_json(p)
    p = common.command(freeze, "remove", freeze_remove, "remove a freeze window")
    p.add_argument("id")

    secret = subparsers.add_parser("secret", help="server-side secrets").add_subparsers(
        dest="secret_command", metavar="COMMAND", required=True
    )
    p = common.command(secret, "set", secret_set, "set a secret; the value is read from stdin")
    p.add_argument("project")
    p.add_argument("env")
    p.add_argument("name")
    p = common.command(secret, "list", secret_list, "list secret names (never values)")
    p.add_argument("project")
    p.add_argument("env")
    common.add_json(p)


def member_add(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        member = members.add(session, ctx.clock, args.name, args.role, args.slack_id)
        approvals.refresh_waiting(session, ctx.clock)
        data = {"name": member.name, "role": member.role, "slack_id": member.slack_id}
    if args.json:
        output.print_json({"member": data})
    else:
        print(f"member {data['name']} is {data['role']}")
    return 0


def member_list(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        rows = [
            {"name": m.name, "role": m.role, "slack_id": m.slack_id or ""}
            for m in members.listing(session)
        ]
    if args.json:
        output.print_json({"members": rows})
    else:
        print(
            output.table(
                [[r["name"], r["role"], r["slack_id"]] for r in rows],
                ["name", "role", "slack id"],
            )
        )
    return 0


def token_create(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        token = members.create_token(session, ctx.clock, args.actor)
    if args.json:
        output.print_json({"member": args.actor, "token": token})
    else:
        print(token)
        print("This token is shown once; store it now.", file=sys.stderr)
    return 0


def policy_set(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        value = policies.set_policy(session, args.key, args.value)
        approvals.refresh_waiting(session, ctx.clock)
    print(f"{args.key} = {str(value).lower()}")
    return 0


def policy_list(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        loaded = policies.load(session)
    data = {
        "forbid_self_approval": loaded.forbid_self_approval,
        "rollbacks_skip_approval": loaded.rollbacks_skip_approval,
    }
    if args.json:
        output.print_json({"policies": data})
    else:
        for key, value in data.items():
            print(f"{key} = {str(value).lower()}")
    return 0


def service_set(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
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
    print(
        f"{args.project}/{args.env}/{args.service}: skip_production_approval = {str(value).lower()}"
    )
    return 0


def freeze_add(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        row = policies.add_freeze(session, ctx.clock, args.days, args.start, args.end, args.tz)
        data = _freeze(row)
    if args.json:
        output.print_json({"freeze": data})
    else:
        print(f"freeze {data['id']}: {data['days']} {data['from']}-{data['to']} {data['tz']}")
    return 0


def _freeze(row: schema.FreezeWindowRow) -> dict[str, str]:
    return {"id": str(row.id), "days": row.days, "from": row.start, "to": row.end, "tz": row.zone}


def freeze_list(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        rows = [_freeze(r) for r in policies.freeze_rows(session)]
    if args.json:
        output.print_json({"freezes": rows})
    else:
        print(
            output.table(
                [[r["id"], r["days"], r["from"], r["to"], r["tz"]] for r in rows],
                ["id", "days", "from", "to", "tz"],
            )
        )
    return 0


def freeze_remove(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
        policies.remove_freeze(session, common.parse_id(args.id, "freeze window"))
    print(f"freeze {args.id} removed")
    return 0


def secret_set(args: argparse.Namespace) -> int:
    value = sys.stdin.read()
    if value.endswith("\n"):
        value = value[:-1]
    if not value:
        raise ConfigurationError(
            "no secret value on stdin",
            hint=f"echo -n VALUE | nebula secret set {args.project} {args.env} {args.name}",
        )
    with common.transaction(args) as (ctx, session):
        project = projects.get(session, args.project)
        secrets.put(session, ctx.clock, ctx.vault, project.id, args.env, args.name, value)
    print(f"secret {args.name} set for {args.project}/{args.env}")
    return 0


def secret_list(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        project = projects.get(session, args.project)
        names = sorted(secrets.names(session, project.id, args.env))
    if args.json:
        output.print_json({"secrets": names})
    else:
        print("\n".join(names))
    return 0
