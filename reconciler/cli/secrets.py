"""``nebula secret set|list|delete``: server-side secrets. A value is read without echo from a
terminal (``Value for NAME:``) or from stdin in a pipe; it is never printed back, and the
audit trail records the name only."""

from __future__ import annotations

import argparse

from reconciler import views
from reconciler.admin import projects, secrets
from reconciler.cli import common, output
from reconciler.core.states import AdminAction, SecretChange
from reconciler.errors import ConfigurationError
from reconciler.requests import rotating


def register(subparsers: common.Subparsers) -> None:
    secret = subparsers.add_parser("secret", help="server-side secrets").add_subparsers(
        dest="secret_command", metavar="COMMAND", required=True
    )
    p = common.command(
        secret, "set", secret_set, "set a secret (prompted on a terminal, else read from stdin)"
    )
    p.add_argument("project")
    p.add_argument("env")
    p.add_argument("name")
    common.add_as(p)
    common.add_json(p)
    p = common.command(secret, "list", secret_list, "list secret names (never values)")
    p.add_argument("project")
    p.add_argument("env")
    common.add_json(p)
    p = common.command(secret, "delete", secret_delete, "delete a secret")
    p.add_argument("project")
    p.add_argument("env")
    p.add_argument("name")
    common.add_as(p)


def secret_set(args: argparse.Namespace) -> int:
    value = common.read_secret(f"Value for {args.name}: ")
    if not value:
        raise ConfigurationError(
            "no secret value given",
            hint=f"echo -n VALUE | nebula secret set {args.project} {args.env} {args.name}",
        )
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        project = projects.get(session, args.project)
        change = secrets.put(session, ctx.clock, ctx.vault, project.id, args.env, args.name, value)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.SECRET_SET,
            f"{args.project}/{args.env} {args.name}",
            f"Secret {args.name} set (value not recorded)",
            project=project,
        )
        # A new value is an input of every release that reads it: their change set (behaviour.md
        # "Resolved values"); a secret that was missing releases what was held for it instead.
        staged = None
        if change is SecretChange.CHANGED:
            staged = rotating.stage(session, ctx, project, args.env, args.name, who)
        changeset = views.changeset_of(session, staged) if staged is not None else None
    if args.json:
        output.print_json({"secret": args.name, "change": change.value, "changeset": changeset})
        return 0
    output.echo(f"secret {args.name} set for {args.project}/{args.env}")
    if changeset is not None:
        users = ", ".join(str(line["service"]) for line in changeset["lines"])
        output.echo(f"  change set {changeset['id']} {changeset['state']}: {users}")
    return 0


def secret_delete(args: argparse.Namespace) -> int:
    with common.transaction(args) as (ctx, session):
        who = common.actor(args, session)
        project = projects.get(session, args.project)
        secrets.delete(session, project.id, args.env, args.name)
        common.audit(
            ctx,
            session,
            who,
            AdminAction.SECRET_DELETE,
            f"{args.project}/{args.env} {args.name}",
            f"Secret {args.name} deleted",
            project=project,
        )
    output.echo(f"secret {args.name} deleted from {args.project}/{args.env}")
    return 0


def secret_list(args: argparse.Namespace) -> int:
    with common.reading(args) as (_, session):
        project = projects.get(session, args.project)
        names = sorted(secrets.names(session, project.id, args.env))
    if args.json:
        output.print_json({"secrets": names})
    else:
        output.echo("\n".join(names))
    return 0
