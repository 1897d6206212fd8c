"""``nebula diff`` (live objects vs the active release) and ``nebula simulated edit|delete``
(the simulated cluster's test and demo aid: change a live object behind Nebula's back).

Each asks the API (``common.api``) and prints what it answers through ``output``.
"""

from __future__ import annotations

import argparse
import sys

from reconciler.cli import common, output
from reconciler.client import paths
from reconciler.errors import NebulaError

EXIT_DIFFERENT = 1  # as kubectl diff: 0 no difference, 1 differences, 2 an error
EXIT_ERROR = 2


def register(subparsers: common.Subparsers) -> None:
    p = common.command(
        subparsers, "diff", diff, "live objects vs the active release's manifests (unified diff)"
    )
    p.add_argument("project")
    p.add_argument("--env", help="only this environment")
    p.add_argument("--service", help="only this service or database")
    common.add_json(p)  # -o json|yaml: the drift list

    simulated = subparsers.add_parser(
        "simulated", help="change the simulated cluster behind Nebula's back (tests, demo)"
    ).add_subparsers(dest="simulated_command", metavar="COMMAND", required=True)
    p = common.command(simulated, "edit", simulated_edit, "set a field of a live object")
    p.add_argument("namespace")
    p.add_argument("object", metavar="KIND/NAME")
    p.add_argument("path", help="e.g. spec.replicas, data.LOG_LEVEL")
    p.add_argument("value", help="a YAML scalar: 5, true, debug")
    p = common.command(simulated, "delete", simulated_delete, "delete a live object")
    p.add_argument("namespace")
    p.add_argument("object", metavar="KIND/NAME")


def diff(args: argparse.Namespace) -> int:
    try:  # every error exits 2, settings' too: 1 says "differences"
        data = common.api(args).get(
            paths.api("projects", args.project, "diff"), env=args.env, service=args.service
        )
    except NebulaError as exc:
        output.error(exc.message, exc.hint)
        return EXIT_ERROR
    if args.json:
        output.print_json(data)
    else:
        sys.stdout.write("".join(unit["diff"] for unit in data["units"]))
    return EXIT_DIFFERENT if data["differences"] else output.EXIT_OK


def simulated_edit(args: argparse.Namespace) -> int:
    body = {"namespace": args.namespace, "object": args.object, "path": args.path}
    common.api(args).post("/api/v1/simulated/edit", {**body, "value": args.value})
    output.echo(f"{args.object} in {args.namespace}: {args.path} = {args.value}")
    return output.EXIT_OK


def simulated_delete(args: argparse.Namespace) -> int:
    body = {"namespace": args.namespace, "object": args.object}
    common.api(args).post("/api/v1/simulated/delete", body)
    output.echo(f"{args.object} in {args.namespace} deleted")
    return output.EXIT_OK
