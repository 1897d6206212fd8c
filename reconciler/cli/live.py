"""``nebula diff`` (live objects vs the active release) and ``nebula simulated edit|delete``
(the simulated cluster's test and demo aid: change a live object behind Nebula's back).

Each command builds its view dict (``reconciler.views``) and prints it through ``output``.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from reconciler import liveviews
from reconciler.cli import common, output
from reconciler.context import Context
from reconciler.engine import drifting
from reconciler.errors import ConflictError, NebulaError
from reconciler.runtimes import tampering

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
        ctx = common.context(args)
        data = liveviews.diff(
            args.project, drifting.inspect(ctx, args.project, args.env, args.service)
        )
    except NebulaError as exc:
        output.error(exc.message, exc.hint)
        return EXIT_ERROR
    if args.json:
        output.print_json(data)
    else:
        sys.stdout.write("".join(unit["diff"] for unit in data["units"]))
    return EXIT_DIFFERENT if data["differences"] else output.EXIT_OK


def _simulated(args: argparse.Namespace) -> Context:
    ctx = common.context(args)
    if ctx.settings.cluster != "simulated":
        raise ConflictError(
            f"nebula simulated changes the simulated cluster only; NEBULA_CLUSTER is "
            f"{ctx.settings.cluster}",
            hint="change a real cluster with kubectl",
        )
    return ctx


def simulated_edit(args: argparse.Namespace) -> int:
    ctx = _simulated(args)
    try:
        value = yaml.safe_load(args.value) if args.value.strip() else args.value
    except yaml.YAMLError:
        value = args.value  # not YAML: the text itself
    tampering.edit(ctx.clusters.simulated(), args.namespace, args.object, args.path, value)
    output.echo(f"{args.object} in {args.namespace}: {args.path} = {args.value}")
    return output.EXIT_OK


def simulated_delete(args: argparse.Namespace) -> int:
    ctx = _simulated(args)
    tampering.delete(ctx.clusters.simulated(), args.namespace, args.object)
    output.echo(f"{args.object} in {args.namespace} deleted")
    return output.EXIT_OK
