"""``nebula history SLUG SERVICE --env ENV``: a service's releases, newest first."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output, tables
from reconciler.client import paths

HISTORY_COLUMNS = (
    tables.Column("release", "release"),
    tables.Column("image", lambda r: tables.short_image(r["image"])),
    tables.Column("state", "state"),
    tables.Column("created", "created_at"),
    tables.Column("by", "created_by"),
    tables.Column("commit", lambda r: tables.short_commit(r["commit"])),
    tables.Column("source", "source", only_wide=True),
    tables.Column("deployment", "deployment_id", only_wide=True),
    tables.Column("retired", "retired_at", only_wide=True),
)


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "history", history, "a service's releases, newest first")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    common.add_json(p)


def history(args: argparse.Namespace) -> int:
    path = paths.api("projects", args.project, "services", args.service, "history")
    rows = common.api(args).get(path, env=args.env)["releases"]
    if args.json:
        output.print_json({"releases": rows})
    else:
        tables.show(rows, HISTORY_COLUMNS)
    return 0
