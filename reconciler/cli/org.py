"""Organization settings: policies, per-service settings, freezes (each change audited; an
admin or an owner changes them)."""

from __future__ import annotations

import argparse

from reconciler.cli import common, output, tables
from reconciler.client import paths

POLICIES = ("forbid_self_approval", "rollbacks_skip_approval")


def register(subparsers: common.Subparsers) -> None:
    policy = subparsers.add_parser("policy", help="organization policies").add_subparsers(
        dest="policy_command", metavar="COMMAND", required=True
    )
    p = common.command(policy, "set", policy_set, "set a policy")
    p.add_argument("key", choices=POLICIES)
    p.add_argument("value")
    p = common.command(policy, "list", policy_list, "show the policies")
    common.add_json(p)

    service = subparsers.add_parser("service", help="per-service settings").add_subparsers(
        dest="service_command", metavar="COMMAND", required=True
    )
    p = common.command(service, "set", service_set, "set skip_production_approval (admin only)")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    p.add_argument("key", choices=["skip_production_approval"])
    p.add_argument("value")

    freeze = subparsers.add_parser("freeze", help="weekly deploy-freeze windows").add_subparsers(
        dest="freeze_command", metavar="COMMAND", required=True
    )
    p = common.command(freeze, "add", freeze_add, "add a weekly freeze window")
    p.add_argument("--days", required=True, help="e.g. sat,sun")
    p.add_argument("--from", dest="start", required=True, metavar="HH:MM")
    p.add_argument("--to", dest="end", required=True, metavar="HH:MM")
    p.add_argument("--tz", default="UTC")
    common.add_json(p)
    p = common.command(freeze, "list", freeze_list, "list freeze windows")
    common.add_json(p)
    p = common.command(freeze, "remove", freeze_remove, "remove a freeze window")
    p.add_argument("id")


FREEZE_COLUMNS = tuple(tables.Column(k, k) for k in ("id", "days", "from", "to", "tz"))


def policy_set(args: argparse.Namespace) -> int:
    done = common.api(args).put(paths.api("policies", args.key), {"value": args.value})["policy"]
    output.echo(f"{done['key']} = {str(done['value']).lower()}")
    return 0


def policy_list(args: argparse.Namespace) -> int:
    data = common.api(args).get("/api/v1/policies")["policies"]
    if args.json:
        output.print_json({"policies": data})
    else:
        for key, value in data.items():
            output.echo(f"{key} = {str(value).lower()}")
    return 0


def service_set(args: argparse.Namespace) -> int:
    body = {"environment": args.env, "key": args.key, "value": args.value}
    path = paths.api("projects", args.project, "services", args.service, "settings")
    done = common.api(args).post(path, body)
    value = str(done["skip_production_approval"]).lower()
    output.echo(f"{args.project}/{args.env}/{args.service}: skip_production_approval = {value}")
    return 0


def freeze_add(args: argparse.Namespace) -> int:
    body = {"days": args.days, "from": args.start, "to": args.end, "tz": args.tz}
    data = common.api(args).post("/api/v1/freezes", body)["freeze"]
    if args.json:
        output.print_json({"freeze": data})
    else:
        output.echo(f"freeze {data['id']}: {data['days']} {data['from']}-{data['to']} {data['tz']}")
    return 0


def freeze_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/freezes")["freezes"]
    if args.json:
        output.print_json({"freezes": rows})
    else:
        tables.show(rows, FREEZE_COLUMNS)
    return 0


def freeze_remove(args: argparse.Namespace) -> int:
    freeze_id = common.parse_id(args.id, "freeze window")
    common.api(args).delete(f"/api/v1/freezes/{freeze_id}")
    output.echo(f"freeze {args.id} removed")
    return 0
