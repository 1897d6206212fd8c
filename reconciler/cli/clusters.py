"""``nebula clusters``: each cluster Nebula deploys to, asked now whether it answers: its
kubeconfig context, server, version, how Nebula signs in, and the environments on it."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output, tables

CLUSTER_COLUMNS = (
    tables.Column("context", lambda row: row["context"] or _unnamed(row)),
    tables.Column("server", "server"),
    tables.Column("version", "version"),
    tables.Column("credentials", "credentials"),
    tables.Column("reachable", "reachable"),
    tables.Column("environments", lambda row: ", ".join(row["environments"]), text=True),
    tables.Column("error", "error", text=True),
)


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "clusters", clusters, "the clusters Nebula deploys to, asked now"
    )
    common.add_json(p)


def clusters(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/clusters")["clusters"]
    if args.json:
        output.print_json({"clusters": rows})
    else:
        tables.show(rows, CLUSTER_COLUMNS)
    return 0


def _unnamed(row: tables.Row) -> str:
    """The default context has no name in-cluster, or when the kubeconfig cannot be read."""
    return "in-cluster" if row["credentials"] == "in-cluster" else "(default)"
