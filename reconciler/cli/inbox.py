"""``nebula inbox [--unread]`` and ``nebula inbox read ID|--all``: the approvals the member
may decide, the decisions on their own requests and the failures of deployments they asked
for, newest first, each read or unread.

Always the inbox of whoever runs the command: the token's member remotely, ``--as NAME`` (or
``local-admin``) locally.
"""

from __future__ import annotations

import argparse

from reconciler.cli import common, output, parsing, tables
from reconciler.client import paths

COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("kind", "kind"),
    tables.Column("where", lambda r: f"{r['project']}/{r['environment']}"),
    tables.Column("service", "service"),
    tables.Column("read", "read"),
    tables.Column("summary", "summary", text=True),
    tables.Column("created", "created_at", only_wide=True),
    tables.Column("link", "link", only_wide=True),
)


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "inbox", inbox_list, "approvals to decide, decisions, failures: yours"
    )
    p.add_argument("--unread", action="store_true", help="only the items not read yet")
    common.add_json(p)
    commands = p.add_subparsers(dest="inbox_command", metavar="COMMAND")
    p = common.command(commands, "read", inbox_read, "mark an item read (or every one: --all)")
    p.add_argument("id", nargs="?", help="an item: approval-12, decision-12, failure-40")
    p.add_argument("--all", action="store_true", help="mark every unread item read")
    common.add_json(p)


def inbox_list(args: argparse.Namespace) -> int:
    found = common.api(args).get(paths.api("inbox"), unread=args.unread)
    if args.json:
        output.print_json(found)
        return 0
    if found["items"]:
        tables.show(found["items"], COLUMNS)
    else:
        output.echo("No unread items." if args.unread else "Your inbox is empty.")
    return 0


def inbox_read(args: argparse.Namespace) -> int:
    if (args.id is None) == (not args.all):
        parser = parsing.innermost(args, args.root_parser)
        parser.hint = "nebula inbox read approval-12, or nebula inbox read --all"
        parser.error(
            "give an item id or --all, not both" if args.all else "give an item id or --all"
        )
    body = {"all": True} if args.all else {"id": args.id}
    marked = common.api(args).post(paths.api("inbox", "read"), body)
    if args.json:
        output.print_json(marked)
        return 0
    count = len(marked["marked"])
    if args.all:
        things = "item" if count == 1 else "items"
        output.echo(f"{count} {things} marked read" if count else "Nothing was unread.")
    else:
        output.echo(f"{args.id} marked read" if count else f"{args.id} was read already")
    return 0
