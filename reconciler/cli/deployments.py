"""``nebula status``, ``deployments``, ``deployment show``, ``rollback``, ``promote``,
``redeploy`` and ``cancel``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from reconciler.cli import common, output, tables, watching
from reconciler.client import paths
from reconciler.durations import format_age


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "status", status, "active releases and in-flight deployments")
    p.add_argument("project", nargs="?")
    p.add_argument("--env")
    p.add_argument("--watch", "-w", action="store_true", help="redraw as things change")
    common.add_json(p)
    p = common.command(subparsers, "deployments", list_deployments, "deployments, newest last")
    p.add_argument("project", nargs="?")
    p.add_argument("--env")
    p.add_argument("--service")
    p.add_argument(
        "--limit", type=int, default=500, help="the newest N that match (default 500, at most 5000)"
    )
    common.add_json(p)
    deployment = subparsers.add_parser("deployment", help="one deployment").add_subparsers(
        dest="deployment_command", metavar="COMMAND", required=True
    )
    p = common.command(deployment, "show", show, "a deployment with its events")
    p.add_argument("id")
    common.add_json(p)
    p = common.command(subparsers, "rollback", rollback, "roll back to a retained release")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    p.add_argument("--to", help="r-N (default: the previous release)")
    common.add_json(p)
    p = common.command(
        subparsers, "promote", promote, "promote the active release to another environment"
    )
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--from", dest="source", required=True)
    p.add_argument("--to", dest="target", required=True)
    p.add_argument(
        "--skip-gate",
        action="store_true",
        help="promote before the target's promotion gate passes (admins and owners; recorded)",
    )
    common.add_json(p)
    p = common.command(subparsers, "redeploy", redeploy, "a new release from the active image")
    p.add_argument("project")
    p.add_argument("service")
    p.add_argument("--env", required=True)
    common.add_json(p)
    p = common.command(
        subparsers, "cancel", cancel, "cancel a deployment that has not taken traffic"
    )
    p.add_argument("id")
    common.add_json(p)


def _deployment_cell(unit: tables.Row) -> str | None:
    d = unit["deployment"]
    return f"{d['release']} {d['state']}" if d else None


def _of_deployment(key: str) -> Callable[[tables.Row], object]:
    return lambda unit: (unit["deployment"] or {}).get(key)


def _or_sync(key: str) -> Callable[[tables.Row], object]:
    """The deployment's blocker or message, else why the unit's ``sync`` is unknown."""
    return lambda unit: (unit["deployment"] or {}).get(key) if unit["deployment"] else unit.get(key)


def _sync(unit: tables.Row) -> str:
    """``synced 3m ago``, ``drifted (2) 40s ago`` or ``unknown``, as the SYNC column shows it:
    with how old the last drift check is."""
    shown = str(unit["sync"])
    if unit["sync"] == "drifted":
        shown = f"drifted ({len(unit['drift'])})"
    checked, now = unit.get("drift_checked_at"), unit.get("as_of")
    if checked:
        age = _time(now) - _time(checked) if now else datetime.now(UTC) - _time(checked)
        shown += f" {format_age(age)} ago"
    return shown


def _time(text: object) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _suspended(data: dict[str, Any]) -> str:
    return f"by {data['by']} at {data['at']}: {data['reason']}"


# ``nebula status``: one row per service or database of each environment.
STATUS_COLUMNS = (
    tables.Column("environment", "environment"),
    tables.Column("service", "name"),
    tables.Column("kind", "kind"),
    tables.Column("active", "active_release"),
    tables.Column("image", lambda u: tables.short_image(u["image"])),
    tables.Column("deployment", _deployment_cell),
    tables.Column("approval", _of_deployment("approval_id")),
    tables.Column("sync", _sync),
    tables.Column("blocker", _or_sync("blocker")),
    tables.Column("message", _or_sync("message"), text=True),
    tables.Column("namespace", "namespace", only_wide=True),
    tables.Column("deployment id", _of_deployment("id"), only_wide=True),
)

DEPLOYMENT_COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("where", lambda r: f"{r['project']}/{r['environment']}"),
    tables.Column("service", "service"),
    tables.Column("release", "release"),
    tables.Column("kind", "kind"),
    tables.Column("state", "state"),
    tables.Column("blocker", "blocker"),
    tables.Column("message", "message", text=True),
    tables.Column("image", lambda r: tables.short_image(r["image"]), only_wide=True),
    tables.Column("requested by", "requested_by", only_wide=True),
    tables.Column("created", "created_at", only_wide=True),
    tables.Column("finished", "finished_at", only_wide=True),
)

EVENT_COLUMNS = (
    tables.Column("at", "at"),
    tables.Column("state", "state"),
    tables.Column("message", "message", text=True),
    tables.Column("by", "actor"),
)


def status_data(args: argparse.Namespace) -> list[dict[str, Any]]:
    found = common.api(args).get("/api/v1/status", project=args.project, env=args.env)
    projects: list[dict[str, Any]] = found["projects"]
    args.reconciler = found.get("reconciler")  # (a server before 1.2 says nothing of it)
    return projects


def print_status(data: list[dict[str, Any]], as_of: str | None = None) -> None:
    """The status tables; ``as_of``: the server's time, that the drift checks' ages count from
    (else this machine's)."""
    if not data:
        output.echo("No projects yet (add one with: nebula project add SLUG --repo URL).")
    for project in data:
        head = f"{project['slug']}  commit {tables.short_commit(project['commit']) or '-'}"
        protected = [e["name"] for e in project["environments"] if e["protected"]]
        if protected:
            head += f"  protected: {', '.join(protected)}"
        if project["blocker"]:
            head += f"  BLOCKED ({project['blocker']}): {project['message']}"
        if project.get("removing"):
            head += f"  REMOVING (by {project['removing']['by']}): tearing down"
        if project["suspended"]:
            head += f"  SUSPENDED {_suspended(project['suspended'])}"
        output.echo(head)
        for env in project["environments"]:
            if env["suspended"]:
                output.echo(f"  {env['name']} SUSPENDED {_suspended(env['suspended'])}")
        rows = [
            {**unit, "environment": env["name"], "namespace": env["namespace"], "as_of": as_of}
            for env in project["environments"]
            for unit in env["services"]
        ]
        if rows:
            tables.show(rows, STATUS_COLUMNS)
        for row in rows:
            # Under the table: where the public reaches a service (a URL is long), and what its
            # autoscalers run.
            where = f"  {row['environment']} {row['name']}"
            if row.get("urls"):
                output.echo(f"{where}: {' '.join(output.escape(u) for u in row['urls'])}")
            for process in row.get("processes") or ():
                if (scale := process.get("autoscale")) is not None:
                    current = scale["current"] if scale["current"] is not None else "?"
                    output.echo(
                        f"{where}.{process['name']}: {current} replicas (autoscaled "
                        f"{scale['min']}-{scale['max']} at {scale['cpu_percent']}% cpu)"
                    )


def status(args: argparse.Namespace) -> int:
    if args.watch:
        return watching.watch(args, status_data, print_status)
    data = status_data(args)
    reconciler = args.reconciler
    if args.json:
        output.print_json({"projects": data, "reconciler": reconciler})
        return 0
    print_status(data, (reconciler or {}).get("as_of"))
    if data and reconciler and reconciler.get("stale"):  # (nothing to reconcile: nothing said)
        output.warning(reconciler["message"])
    return 0


def list_deployments(args: argparse.Namespace) -> int:
    rows = common.api(args).get(
        "/api/v1/deployments",
        project=args.project,
        env=args.env,
        service=args.service,
        limit=max(1, min(args.limit, 5000)),
    )["deployments"]
    if args.json:
        output.print_json({"deployments": rows})
    else:
        tables.show(rows, DEPLOYMENT_COLUMNS)
    return 0


def show(args: argparse.Namespace) -> int:
    deployment_id = common.parse_id(args.id, "deployment")
    data = common.api(args).get(f"/api/v1/deployments/{deployment_id}")["deployment"]
    if args.json:
        output.print_json({"deployment": data})
        return 0
    output.echo(
        f"deployment {data['id']}: {data['project']}/{data['environment']} {data['service']} "
        f"{data['release']} ({data['kind']}) {data['state']}"
    )
    if data["blocker"] or data["message"]:
        output.echo(f"  {data['blocker'] or ''} {data['message'] or ''}".rstrip())
    tables.show(data["events"], EVENT_COLUMNS)
    return 0


def _requested(args: argparse.Namespace, data: dict[str, Any]) -> int:
    if args.json:
        output.print_json(data)
    elif data.get("already_requested"):
        approval = data["approval"]
        output.echo(
            f"already requested: deployment {data['deployment']['id']}"
            + (f", approval {approval['id']}" if approval else "")
        )
    else:
        d = data["deployment"]
        output.echo(
            f"deployment {d['id']}: {d['service']} {d['release']} ({d['kind']}) {d['state']}"
            + (f": {d['message']}" if d["message"] else "")
        )
        if data["approval"] and data["approval"]["state"] == "pending":
            output.echo(f"  approval {data['approval']['id']} is pending")
        for e in data["ended"]:
            output.echo(f"  ended deployment {e['id']}: {e['service']} {e['release']} {e['state']}")
    return 0


def _service(args: argparse.Namespace, verb: str) -> str:
    return paths.api("projects", args.project, "services", args.service, verb)


def rollback(args: argparse.Namespace) -> int:
    body = {"environment": args.env, "to": args.to}
    return _requested(args, common.api(args).post(_service(args, "rollback"), body))


def promote(args: argparse.Namespace) -> int:
    body = {"from": args.source, "to": args.target, "skip_gate": args.skip_gate}
    return _requested(args, common.api(args).post(_service(args, "promote"), body))


def redeploy(args: argparse.Namespace) -> int:
    body = {"environment": args.env}
    return _requested(args, common.api(args).post(_service(args, "redeploy"), body))


def cancel(args: argparse.Namespace) -> int:
    deployment_id = common.parse_id(args.id, "deployment")
    data = common.api(args).post(f"/api/v1/deployments/{deployment_id}/cancel")["deployment"]
    if args.json:
        output.print_json({"deployment": data})
    else:
        output.echo(f"deployment {data['id']} cancelled")
    return 0
