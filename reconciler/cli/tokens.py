"""``nebula token create|list|revoke``: API tokens, printed once, stored hashed, listed without
themselves (member, role, name, created, expires, last used).

Remotely a token is created for the signed-in member; locally for ``--as NAME``.
"""

from __future__ import annotations

import argparse
import sys

from reconciler.cli import common, output, tables

TOKEN_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("member", "member"),
    tables.Column("role", "role"),
    tables.Column("name", "name"),
    tables.Column("created", "created_at"),
    tables.Column("expires", lambda r: r["expires_at"] or "never"),
    tables.Column("last used", lambda r: r["last_used_at"] or "never"),
)


def register(subparsers: common.Subparsers) -> None:
    token = subparsers.add_parser("token", help="API tokens").add_subparsers(
        dest="token_command", metavar="COMMAND", required=True
    )
    p = common.command(token, "create", token_create, "create an API token (printed once)")
    p.add_argument(
        "--expires", type=_lifetime, metavar="DURATION", help="refused after this long, e.g. 30d"
    )
    p.add_argument("--name", help="what it is for, e.g. ci or laptop")
    common.add_json(p)
    p = common.command(token, "list", token_list, "tokens: member, role, created, last used")
    p.add_argument("--member", help="only this member's tokens")
    common.add_json(p)
    p = common.command(token, "revoke", token_revoke, "revoke a token (by its id in the list)")
    p.add_argument("id")
    common.add_json(p)


def _lifetime(text: str) -> str:
    common.duration("--expires")(text)
    return text.strip()


def token_create(args: argparse.Namespace) -> int:
    body = {"name": args.name, "expires": args.expires}
    created = common.api(args).post("/api/v1/tokens", body)
    if args.json:
        output.print_json(created)
    else:
        output.echo(created["token"])
        expires = f"; it expires {created['expires_at']}" if created["expires_at"] else ""
        sys.stderr.write(
            f"Token {created['id']} for {created['member']} is shown once; store it now{expires}.\n"
        )
    return 0


def token_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/tokens", member=args.member)["tokens"]
    if args.json:
        output.print_json({"tokens": rows})
    else:
        tables.show(rows, TOKEN_COLUMNS)
    return 0


def token_revoke(args: argparse.Namespace) -> int:
    token_id = common.parse_id(args.id, "token")
    revoked = common.api(args).delete(f"/api/v1/tokens/{token_id}")["token"]
    if args.json:
        output.print_json({"token": revoked})
    else:
        output.echo(f"token {revoked['id']} of {revoked['member']} revoked")
    return 0
