"""``nebula secret set|list|delete``: server-side secrets. A value is read without echo from a
terminal (``Value for NAME:``) or from stdin in a pipe; it is never printed back, and the
audit trail records the name only."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output
from reconciler.client import paths
from reconciler.errors import ConfigurationError


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
    common.add_json(p)
    p = common.command(secret, "list", secret_list, "list secret names (never values)")
    p.add_argument("project")
    p.add_argument("env")
    common.add_json(p)
    p = common.command(secret, "delete", secret_delete, "delete a secret")
    p.add_argument("project")
    p.add_argument("env")
    p.add_argument("name")


def _path(args: argparse.Namespace) -> str:
    return paths.api("projects", args.project, "environments", args.env, "secrets")


def secret_set(args: argparse.Namespace) -> int:
    value = common.read_secret(f"Value for {args.name}: ")
    if not value:
        raise ConfigurationError(
            "no secret value given",
            hint=f"echo -n VALUE | nebula secret set {args.project} {args.env} {args.name}",
        )
    # The value goes in the request's body, once (never in a URL); nothing answers it back.
    done = common.api(args).put(f"{_path(args)}/{paths.segment(args.name)}", {"value": value})
    changeset = done["changeset"]
    if args.json:
        output.print_json({"secret": args.name, "change": done["change"], "changeset": changeset})
        return 0
    output.echo(f"secret {args.name} set for {args.project}/{args.env}")
    if changeset is not None:
        users = ", ".join(str(line["service"]) for line in changeset["lines"])
        output.echo(f"  change set {changeset['id']} {changeset['state']}: {users}")
    return 0


def secret_delete(args: argparse.Namespace) -> int:
    common.api(args).delete(f"{_path(args)}/{paths.segment(args.name)}")
    output.echo(f"secret {args.name} deleted from {args.project}/{args.env}")
    return 0


def secret_list(args: argparse.Namespace) -> int:
    names = common.api(args).get(_path(args))["secrets"]
    if args.json:
        output.print_json({"secrets": names})
    else:
        output.echo("\n".join(names))
    return 0
