"""What the status page shows, gathered from the store for one page at a time.

The page reads the same dicts as the API (``reconciler.views``) and adds what a person
needs to read them: a health summary per environment, the state machine's path with the
current stage, replicas, and variables with every secret or database credential masked.
Values are never decrypted here: a variable that comes from a secret or a database shows
which one, never what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import statusviews, views
from reconciler.core.states import HAPPY_PATH, ApprovalState, ApprovalTarget, DeploymentState
from reconciler.engine import releases
from reconciler.model.references import Literal, RefKind
from reconciler.model.specs import DatabaseSpec, ManifestsSpec, ProcessType, ServiceSpec
from reconciler.requests import approvals, records
from reconciler.store import schema
from reconciler.web import diffs, grids

S = DeploymentState
ACTIVE = [s.value for s in S if not s.is_final and s is not S.AWAITING_APPROVAL]
REFRESH_ACTIVE = 2  # seconds between refreshes while a deployment moves
REFRESH_WAITING = 15  # ...while only approvals are awaited


@dataclass(frozen=True)
class Health:
    """One service's standing, as the summary and the badges show it."""

    label: str
    tone: str  # ok, busy, wait, bad, off: the CSS class


HEALTHY = Health("healthy", "ok")
DEPLOYING = Health("deploying", "busy")
AWAITING = Health("awaiting approval", "wait")
BLOCKED = Health("blocked", "bad")
FAILED = Health("failed", "bad")
NOT_DEPLOYED = Health("not deployed", "off")
_ORDER = (FAILED, BLOCKED, AWAITING, DEPLOYING, NOT_DEPLOYED, HEALTHY)


def health(unit: dict[str, Any]) -> Health:
    d = unit["deployment"]
    if d is not None:
        state = S(d["state"])
        if state is S.FAILED:
            return FAILED
        if state is S.AWAITING_APPROVAL:
            return AWAITING
        if not state.is_final:
            return BLOCKED if d["blocker"] not in (None, "waiting") else DEPLOYING
    return HEALTHY if unit["active_release"] else NOT_DEPLOYED


def summary(services: list[dict[str, Any]]) -> list[tuple[Health, int]]:
    counts = {h: 0 for h in _ORDER}
    for unit in services:
        counts[health(unit)] += 1
    return [(h, n) for h, n in counts.items() if n]


@dataclass(frozen=True)
class Step:
    state: str
    status: str  # done, current, stopped, todo


def path(state: str, reached: list[str], *, release_command: bool, approval: bool) -> list[Step]:
    """The happy path a deployment walks, each step marked against where it is (or stopped)."""
    stages = [
        s.value
        for s in HAPPY_PATH
        if (s is not S.RELEASING or release_command) and (s is not S.AWAITING_APPROVAL or approval)
    ]
    if state == S.HEALTHY.value:
        return [Step(s, "done") for s in stages]
    if state in stages:
        at, status = stages.index(state), "current"
    else:  # ended before healthy: mark the last stage it reached
        seen = [s for s in reached if s in stages]
        at, status = (stages.index(seen[-1]) if seen else 0), "stopped"
    return [
        Step(s, "done" if i < at else status if i == at else "todo") for i, s in enumerate(stages)
    ]


@dataclass(frozen=True)
class Part:
    text: str
    masked: bool = False


def variables(release: schema.Release | None) -> list[tuple[str, list[Part]]]:
    """Each variable as literal text and masked references (secrets, database exports)."""
    if release is None:
        return []
    out = []
    for key, segments in releases.frozen(release).variables:
        parts = []
        for segment in segments:
            if isinstance(segment, Literal):
                parts.append(Part(segment.text))
            elif segment.kind is RefKind.SECRET:
                parts.append(Part(f"secret {segment.target}", masked=True))
            elif segment.kind is RefKind.HOST:
                parts.append(Part(f"host({segment.target})"))
            else:
                parts.append(Part(f"{segment.target}.{segment.key}", masked=True))
        out.append((key, parts))
    return out


def processes(release: schema.Release | None) -> list[str]:
    if release is None:
        return []
    unit = releases.frozen(release).unit
    if isinstance(unit, DatabaseSpec):
        return [f"{unit.engine} {unit.version}, {unit.instance_size.value}, {unit.volume_size}"]
    if isinstance(unit, ManifestsSpec):
        return [f"{d.ref} ({d.source})" for d in unit.documents]
    out = []
    for p in unit.processes:
        if p.type in (ProcessType.CRON, ProcessType.JOB):
            out.append(f"{p.name} ({p.type.value}{' ' + p.schedule if p.schedule else ''})")
        else:
            n = p.replicas
            out.append(f"{p.name} ({p.type.value}, {n} replica{'' if n == 1 else 's'})")
    return out


def _states_reached(session: Session, deployment_id: int) -> list[str]:
    return [
        s
        for s in session.scalars(
            select(schema.Event.state)
            .where(schema.Event.deployment_id == deployment_id)
            .order_by(schema.Event.id)
        )
        if s
    ]


def deployment_path(session: Session, d: schema.Deployment) -> list[Step]:
    reached = _states_reached(session, d.id)
    unit = releases.frozen(d.release).unit
    return path(
        d.state,
        reached,
        release_command=isinstance(unit, ServiceSpec) and bool(unit.release_command),
        approval=S.AWAITING_APPROVAL.value in reached or d.state == S.AWAITING_APPROVAL.value,
    )


@dataclass
class ServiceView:
    status: dict[str, Any]
    health: Health
    processes: list[str]
    variables: list[tuple[str, list[Part]]]
    steps: list[Step] = field(default_factory=list)
    deploying_image: str | None = None  # the image of the deployment shown, when it differs
    last: dict[str, Any] | None = None  # the latest deployment, when none is shown


@dataclass
class EnvironmentView:
    status: dict[str, Any]
    services: list[ServiceView]
    summary: list[tuple[Health, int]]


def overview(session: Session) -> tuple[list[dict[str, Any]], int]:
    """Every project with a health summary per environment, and the refresh period."""
    rows = []
    for project in session.scalars(select(schema.Project).order_by(schema.Project.slug)):
        status = statusviews.project_status(session, project)
        for env in status["environments"]:
            env["summary"] = summary(env["services"])
        status["grid"] = grids.grid(status)
        rows.append(status)
    return rows, _refresh(session, None)


def project_page(session: Session, project: schema.Project) -> dict[str, Any]:
    status = statusviews.project_status(session, project)
    environments = []
    for env_status, env in zip(status["environments"], project.environments, strict=True):
        units = {u.name: u for u in _units(session, env.id)}
        latest = statusviews.latest_deployments(session, env.id)
        services = []
        for unit_status in env_status["services"]:
            unit = units[unit_status["name"]]
            newest = latest.get(unit.id)
            shown = views.shown_deployment(newest)
            release = shown.release if shown is not None else unit.active_release
            services.append(
                ServiceView(
                    status=unit_status,
                    health=health(unit_status),
                    processes=processes(release),
                    variables=variables(release),
                    steps=deployment_path(session, shown) if shown is not None else [],
                    last=views.deployment(newest) if newest is not None and shown is None else None,
                    deploying_image=(
                        shown.release.image
                        if shown is not None and shown.release.image != unit_status["image"]
                        else None
                    ),
                )
            )
        environments.append(EnvironmentView(env_status, services, summary(env_status["services"])))
    return {
        "project": status,
        "grid": grids.grid(status),
        "settings": {
            "interval": project.interval_seconds,
            "path": project.path,
            "webhook_limit": project.webhook_limit_seconds,
        },
        "environments": environments,
        "approvals": pending_approvals(session, project.id),
        "changesets": recent_changesets(session, project.id),
        "deployments": recent_deployments(session, project.id),
        "refresh": _refresh(session, project.id),
    }


def pending_approvals(session: Session, project_id: int | None) -> list[dict[str, Any]]:
    """Each pending approval with what it gates: its lines, and the rendered-manifest diff."""
    out = []
    pending = records.approvals(session, project_id, ApprovalState.PENDING)
    for a, shown in zip(pending, views.approvals_of(session, pending), strict=True):
        item: dict[str, Any] = {"approval": shown, "lines": [], "messages": []}
        if a.target == ApprovalTarget.CHANGESET:
            changeset = session.get(schema.ChangeSet, a.target_id)
            if changeset is not None:
                item["changeset"] = views.changeset(changeset, a)
                item["lines"] = item["changeset"]["lines"]
            gated = session.scalars(
                select(schema.Deployment)
                .where(schema.Deployment.changeset_id == a.target_id)
                .order_by(schema.Deployment.id)
            ).all()
        else:
            one = session.get(schema.Deployment, a.target_id)
            gated = [one] if one is not None else []
            if one is not None:
                item["deployment"] = views.deployment(one)
        env = a.environment
        item["manifests"] = diffs.of_deployments(env.project.slug, env.name, gated)
        item["messages"] = sorted(
            {d.message for d in gated if d.message and d.state == S.AWAITING_APPROVAL.value}
        )
        out.append(item)
    return out


def recent_changesets(session: Session, project_id: int, limit: int = 10) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(schema.ChangeSet)
        .where(schema.ChangeSet.project_id == project_id)
        .order_by(schema.ChangeSet.id.desc())
        .limit(limit)
    )
    return [views.changeset_of(session, c) for c in rows]


def recent_deployments(session: Session, project_id: int, limit: int = 15) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(schema.Deployment)
        .where(schema.Deployment.project_id == project_id)
        .order_by(schema.Deployment.id.desc())
        .limit(limit)
    )
    return [views.deployment(d) for d in rows]


def deployment_page(session: Session, d: schema.Deployment) -> dict[str, Any]:
    data = views.deployment_with_events(session, d)
    return {
        "deployment": data,
        "steps": deployment_path(session, d),
        "unit_kind": d.unit.kind,
        "processes": processes(d.release),
        "variables": variables(d.release),
        "refresh": _refresh_for([d.state]),
    }


def changeset_page(session: Session, c: schema.ChangeSet) -> dict[str, Any]:
    approval = approvals.for_target(session, ApprovalTarget.CHANGESET, c.id)
    deployments = session.scalars(
        select(schema.Deployment)
        .where(schema.Deployment.changeset_id == c.id)
        .order_by(schema.Deployment.id)
    ).all()
    env = c.environment
    return {
        "changeset": views.changeset(c, approval),
        "approval": views.approval(approval) if approval is not None else None,
        "manifests": diffs.of_deployments(env.project.slug, env.name, deployments),
        "deployments": [views.deployment(d) for d in deployments],
        "refresh": _refresh_for([d.state for d in deployments]),
    }


def _refresh_for(states: list[str]) -> int:
    if any(s in ACTIVE for s in states):
        return REFRESH_ACTIVE
    return REFRESH_WAITING if S.AWAITING_APPROVAL.value in states else 0


def _refresh(session: Session, project_id: int | None) -> int:
    def exists(states: list[str]) -> bool:
        query = select(schema.Deployment.id).where(schema.Deployment.state.in_(states))
        if project_id is not None:
            query = query.where(schema.Deployment.project_id == project_id)
        return session.scalars(query.limit(1)).first() is not None

    if exists(ACTIVE):
        return REFRESH_ACTIVE
    if exists([S.AWAITING_APPROVAL.value]):
        return REFRESH_WAITING
    return 0


def _units(session: Session, environment_id: int) -> list[schema.Unit]:
    return list(
        session.scalars(select(schema.Unit).where(schema.Unit.environment_id == environment_id))
    )
