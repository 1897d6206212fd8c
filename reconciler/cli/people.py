"""``nebula member ...`` and ``nebula grant ...``: who belongs to the organization, with which
role, and where a member may deploy or approve. Every change is audited; an admin or an owner
makes it (an owner's standing, an owner)."""

from __future__ import annotations

import argparse
from typing import Any

from reconciler.cli import common, output, tables
from reconciler.client import paths

ROLES = ("owner", "admin", "member", "viewer")
GRANTS = ("deploy", "approve")

MEMBER_COLUMNS = (
    tables.Column("name", "name"),
    tables.Column("role", "role"),
    tables.Column("slack id", "slack_id"),
    tables.Column("email", "email", only_wide=True),
    tables.Column("oidc subject", "oidc_subject", only_wide=True),
)
GRANT_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("member", "member"),
    tables.Column("grant", "grant"),
    tables.Column("project", "project"),
    tables.Column("environment", lambda r: r["environment"] or "(every one)"),
    tables.Column("by", "created_by", only_wide=True),
    tables.Column("created", "created_at", only_wide=True),
)


def _identity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slack-id", help="their Slack user id, for decisions from Slack")
    parser.add_argument("--email", help="their e-mail address (single sign-on)")
    parser.add_argument("--oidc-subject", help="their subject at the OpenID provider")


def register(subparsers: common.Subparsers) -> None:
    member = subparsers.add_parser("member", help="organization members").add_subparsers(
        dest="member_command", metavar="COMMAND", required=True
    )
    p = common.command(member, "add", member_add, "add a member (or change their role)")
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=ROLES)
    _identity(p)
    common.add_json(p)
    p = common.command(member, "set", member_set, "change a member's role or identity")
    p.add_argument("name")
    p.add_argument("--role", choices=ROLES)
    _identity(p)
    common.add_json(p)
    p = common.command(member, "remove", member_remove, "remove a member, their tokens and grants")
    p.add_argument("name")
    p = common.command(member, "list", member_list, "list members")
    common.add_json(p)

    grant = subparsers.add_parser(
        "grant", help="where a member may deploy or approve"
    ).add_subparsers(dest="grant_command", metavar="COMMAND", required=True)
    for name, func, about in (
        ("add", grant_add, "let a member deploy or approve in a project or environment"),
        ("remove", grant_remove, "take a grant back"),
    ):
        p = common.command(grant, name, func, about)
        p.add_argument("name", help="the member")
        p.add_argument("grant", choices=GRANTS)
        p.add_argument("--project", required=True)
        p.add_argument("--env", help="only this environment (default: every one)")
        common.add_json(p)
    p = common.command(grant, "list", grant_list, "grants, of everyone or of one member")
    p.add_argument("name", nargs="?", help="only this member's")
    common.add_json(p)


def _member_body(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "role": args.role,
        "slack_id": args.slack_id,
        "email": args.email,
        "oidc_subject": args.oidc_subject,
    }


def _shown_member(args: argparse.Namespace, data: dict[str, Any]) -> int:
    if args.json:
        output.print_json({"member": data})
    else:
        output.echo(f"member {data['name']} is {data['role']}")
    return 0


def member_add(args: argparse.Namespace) -> int:
    body = {"name": args.name, **_member_body(args)}
    return _shown_member(args, common.api(args).post("/api/v1/members", body)["member"])


def member_set(args: argparse.Namespace) -> int:
    body = {k: v for k, v in _member_body(args).items() if v is not None}
    return _shown_member(
        args, common.api(args).patch(paths.api("members", args.name), body)["member"]
    )


def member_remove(args: argparse.Namespace) -> int:
    common.api(args).delete(paths.api("members", args.name))
    output.echo(f"member {args.name} removed")
    return 0


def member_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/members")["members"]
    if args.json:
        output.print_json({"members": rows})
    else:
        tables.show(rows, MEMBER_COLUMNS)
    return 0


def _where(args: argparse.Namespace) -> str:
    return f"{args.project}/{args.env}" if args.env else args.project


def grant_add(args: argparse.Namespace) -> int:
    body = {"member": args.name, "grant": args.grant, "project": args.project}
    body["environment"] = args.env
    data = common.api(args).post("/api/v1/grants", body)["grant"]
    if args.json:
        output.print_json({"grant": data})
    else:
        output.echo(f"{args.name} may {args.grant} in {_where(args)}")
    return 0


def grant_remove(args: argparse.Namespace) -> int:
    data = common.api(args).delete(
        "/api/v1/grants",
        member=args.name,
        grant=args.grant,
        project=args.project,
        environment=args.env,
    )
    if args.json:
        output.print_json(data)
    else:
        output.echo(f"{args.name} no longer holds {args.grant} in {_where(args)}")
    return 0


def grant_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/grants", member=args.name)["grants"]
    if args.json:
        output.print_json({"grants": rows})
    else:
        tables.show(rows, GRANT_COLUMNS)
    return 0
