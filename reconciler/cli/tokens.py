"""``nebula token create|list|revoke``: API tokens, printed once, stored hashed, listed without
themselves (member, role, created, last used)."""

from __future__ import annotations

import argparse
import sys

from reconciler.admin import members
from reconciler.cli import common, output, tables
from reconciler.core.states import AdminAction
from reconciler.views import iso

TOKEN_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("member", "member"),
    tables.Column("role", "role"),
    tables.Column("created", "created_at"),
    tables.Column("last used", lambda r: r["last_used_at"] or "never"),
)


def register(subparsers: common.Subparsers) -> None:
    token = subparsers.add_parser("token", help="API tokens").add_subparsers(
        dest="token_command", metavar="COMMAND", required=True
    )
    p = common.command(token, "create", token_create, "create an API token (printed once)")
    common.add_as(p, required=True)
    common.add_json(p)
    p = common.command(token, "list", token_list, "tokens: member, role, created, last used")
    p.add_argument("--member", help="only this member's tokens")
    common.add_json(p)
    p = common.command(token, "revoke", token_revoke, "revoke a token (by its id in the list)")
    p.add_argument("id")
    common.add_as(p)
    common.add_json(p)


def token_create(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        token = members.create_token(session, ctx.clock, args.actor)
        (row,) = members.tokens(session, members.get(session, args.actor))[-1:]
        common.audit(
            ctx,
            session,
            args.actor,
            AdminAction.TOKEN_CREATE,
            f"token {row.id}",
            f"API token {row.id} created for {args.actor}",
        )
    if args.json:
        output.print_json({"member": args.actor, "token": token})
    else:
        output.echo(token)
        sys.stderr.write("This token is shown once; store it now.\n")
    return 0


def token_list(args: argparse.Namespace) -> int:
    with common.transaction(args) as (_, session):
        member = members.get(session, args.member) if args.member else None
        rows = [
            {
                "id": str(t.id),
                "member": t.member.name,
                "role": t.member.role,
                "created_at": iso(t.created_at),
                "last_used_at": iso(t.last_used_at),
            }
            for t in members.tokens(session, member)
        ]
    if args.json:
        output.print_json({"tokens": rows})
    else:
        tables.show(rows, TOKEN_COLUMNS)
    return 0


def token_revoke(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        row = members.revoke_token(session, common.parse_id(args.id, "token"))
        owner = row.member.name
        common.audit(
            ctx,
            session,
            who,
            AdminAction.TOKEN_REVOKE,
            f"token {row.id}",
            f"API token {row.id} of {owner} revoked",
        )
    if args.json:
        output.print_json({"token": {"id": str(row.id), "member": owner, "revoked": True}})
    else:
        output.echo(f"token {args.id} of {owner} revoked")
    return 0
