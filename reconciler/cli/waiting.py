"""``nebula wait DEPLOYMENT_ID`` / ``nebula wait --changeset ID``: block until it ends,
printing each state change (like ``kubectl rollout status``; it watches, ``nebula serve`` or
``nebula reconcile`` moves things).

Exit 0: the deployment is healthy (a change set: applied, and all its deployments healthy);
1: it ended otherwise (its message is printed); 3: ``--timeout`` passed first.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.cli import common, output
from reconciler.core.states import ChangeSetState, DeploymentState
from reconciler.durations import format_duration
from reconciler.errors import StoreError, TransientError

if TYPE_CHECKING:
    from reconciler.client.http import Api

LOOK_EVERY = 1.0  # seconds between two looks (each one read of the API)


@dataclass(frozen=True)
class Seen:
    what: str  # "deployment 5", "change set 3"
    state: str
    lines: tuple[str, ...]  # one per thing watched, as printed when it changes
    done: bool
    ok: bool
    message: str | None = None
    project: str | None = None


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "wait", wait, "wait for a deployment (or a change set) to end")
    p.add_argument("id", nargs="?", help="a deployment id")
    p.add_argument("--changeset", metavar="ID", help="wait for this change set instead")
    common.add_timeout(p, "10m", "give up after this long: exit 3 (default 10m)")


def _deployment_line(d: dict[str, Any]) -> str:
    text = f"deployment {d['id']}: {d['service']} {d['release']} {d['state']}"
    return text + (f" ({d['blocker']}: {d['message']})" if d["blocker"] and d["message"] else "")


def _look_deployment(api: Api, deployment_id: int) -> Seen:
    d = api.get(f"/api/v1/deployments/{deployment_id}")["deployment"]
    state = DeploymentState(d["state"])
    return Seen(
        f"deployment {d['id']}",
        d["state"],
        (_deployment_line(d),),
        done=state.is_final,
        ok=state is DeploymentState.HEALTHY,
        message=d["message"] or f"deployment {d['id']} ended {d['state']}",
        project=d.get("project"),
    )


def _look_changeset(api: Api, changeset_id: int) -> Seen:
    c = api.get(f"/api/v1/changesets/{changeset_id}")["changeset"]
    state = ChangeSetState(c["state"])
    deployments = api.get("/api/v1/deployments", changeset=changeset_id, limit=5000)["deployments"]
    lines = (f"change set {c['id']}: {c['state']}", *(_deployment_line(d) for d in deployments))
    what = f"change set {c['id']}"
    if state.is_open:
        return Seen(what, c["state"], lines, done=False, ok=False, project=c.get("project"))
    if state is not ChangeSetState.APPLIED:
        message = c["note"] or f"change set {c['id']} {c['state']}"
        return Seen(what, c["state"], lines, done=True, ok=False, message=message)
    ended = [d for d in deployments if DeploymentState(d["state"]).is_final]
    bad = [d for d in ended if d["state"] != DeploymentState.HEALTHY]
    if bad:
        first = bad[0]
        why = first["message"] or first["state"]
        message = f"{first['service']} {first['release']} ended {first['state']}: {why}"
        done = len(ended) == len(deployments)
        return Seen(
            what, c["state"], lines, done=done, ok=False, message=message, project=c.get("project")
        )
    done = len(ended) == len(deployments)
    return Seen(what, c["state"], lines, done=done, ok=True, project=c.get("project"))


def _nothing_reconciles(api: Api, project: str | None) -> str | None:
    """Why nothing will move, when no reconciler has run for a while (the server's heartbeat);
    None while one runs."""
    found = api.get("/api/v1/status", project=project)
    reconciler = found.get("reconciler") or {}
    return reconciler.get("message") if reconciler.get("stale") else None


def wait(args: argparse.Namespace) -> int:
    if (args.id is None) == (args.changeset is None):
        output.error("give a deployment id or --changeset ID (one of them)")
        return output.EXIT_USAGE
    api = common.api(args)
    look: Callable[[], Seen]
    if args.changeset is not None:
        changeset_id = common.parse_id(args.changeset, "change set")
        look = lambda: _look_changeset(api, changeset_id)  # noqa: E731
    else:
        deployment_id = common.parse_id(args.id, "deployment")
        look = lambda: _look_deployment(api, deployment_id)  # noqa: E731
    deadline = time.monotonic() + args.timeout.total_seconds()
    api.time_left = lambda: deadline - time.monotonic()
    printed: dict[int, str] = {}
    what = f"change set {args.changeset}" if args.changeset is not None else f"deployment {args.id}"
    said = ""  # the last failure to look, said once until it changes
    idle: str | None = None  # why nothing moves, once looked at
    while True:
        try:
            seen = look()
        except (TransientError, StoreError) as exc:
            # The server restarting, a proxy's 503, a timeout: looked at again until --timeout
            # (exit 1 is for what ended otherwise, which this is not).
            if exc.message != said:
                output.warning(f"could not look at {what} ({exc.message}): trying again")
                said = exc.message
            if time.monotonic() >= deadline:
                output.error(
                    f"timed out after {format_duration(args.timeout)}: could not look at "
                    f"{what} ({exc.message})",
                    hint="wait again with a longer --timeout, or see: nebula deployments",
                )
                return output.EXIT_TIMEOUT
            time.sleep(min(LOOK_EVERY, max(deadline - time.monotonic(), 0)))
            continue
        said = ""
        for number, line in enumerate(seen.lines):
            if printed.get(number) != line:
                output.echo(line)
                printed[number] = line
        if seen.done:
            if seen.ok:
                return output.EXIT_OK
            output.error(seen.message or "ended")
            return output.EXIT_REFUSED
        if idle is None:
            idle = _nothing_reconciles(api, seen.project) or ""
            if idle:
                output.warning(idle)
        if time.monotonic() >= deadline:
            output.error(
                f"timed out after {format_duration(args.timeout)}: {seen.what} is still "
                f"{seen.state}",
                hint=idle or "wait again with a longer --timeout, or see: nebula deployments",
            )
            return output.EXIT_TIMEOUT
        time.sleep(LOOK_EVERY)
