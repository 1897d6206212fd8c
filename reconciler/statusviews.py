"""What ``nebula status`` and the status page show of projects: each environment's services,
what serves, what is in flight or failed, and which approval it waits for. Read in a few
queries for every project at once, however many there are and however long their history.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from reconciler import liveviews
from reconciler.admin import repourls
from reconciler.admin.members import shown_actor
from reconciler.core.states import ApprovalState, ApprovalTarget
from reconciler.durations import format_duration
from reconciler.store import schema
from reconciler.views import deployment_brief, iso, shown_deployment


def latest_deployments(session: Session, environment_id: int) -> dict[int, schema.Deployment]:
    """The newest deployment of each unit in an environment."""
    return newest_deployments(session, [environment_id])


def newest_deployments(
    session: Session, environment_ids: Sequence[int]
) -> dict[int, schema.Deployment]:
    """The newest deployment of each unit in these environments, by unit id: only those rows
    are read (an environment's history grows with every deploy; a status must not)."""
    newest = (
        select(func.max(schema.Deployment.id))
        .where(schema.Deployment.environment_id.in_(environment_ids))
        .group_by(schema.Deployment.unit_id)
    )
    rows = session.scalars(
        select(schema.Deployment)
        .where(schema.Deployment.id.in_(newest))
        .options(selectinload(schema.Deployment.release))
    )
    return {d.unit_id: d for d in rows}


def pending_approvals(
    session: Session, environment_ids: Sequence[int]
) -> dict[tuple[str, int], int]:
    """The pending approvals of these environments, by (target, target id)."""
    rows = session.execute(
        select(schema.Approval.target, schema.Approval.target_id, schema.Approval.id).where(
            schema.Approval.environment_id.in_(environment_ids),
            schema.Approval.state == ApprovalState.PENDING.value,
        )
    )
    return {(target, target_id): approval_id for target, target_id, approval_id in rows}


def unit_status(
    unit: schema.Unit, latest: schema.Deployment | None, waiting: dict[tuple[str, int], int]
) -> dict[str, Any]:
    active = unit.active_release
    shown = shown_deployment(latest)
    brief = deployment_brief(shown) if shown else None
    if brief is not None and shown is not None:
        # What waits for a person says which approval to decide (its own, or its change set's).
        approval_id = waiting.get((ApprovalTarget.DEPLOYMENT.value, shown.id))
        if approval_id is None and shown.changeset_id is not None:
            approval_id = waiting.get((ApprovalTarget.CHANGESET.value, shown.changeset_id))
        brief["approval_id"] = str(approval_id) if approval_id is not None else None
    return {
        "name": unit.name,
        "kind": unit.kind,
        "status": unit.status,
        "active_release": active.name if active else None,
        "image": active.image if active else None,
        "deployment": brief,
        **liveviews.sync(unit),  # synced | drifted | unknown, and what differs
        **liveviews.published(active, unit.scaled or {}),
    }


def project_status(
    session: Session, project: schema.Project, env_name: str | None = None
) -> dict[str, Any]:
    [found] = projects_status(session, [project], env_name)
    return found


def projects_status(
    session: Session, projects: Sequence[schema.Project], env_name: str | None = None
) -> list[dict[str, Any]]:
    """What ``nebula status`` shows of each project. Read in a few queries for all of them
    (units, their releases, the newest deployments, pending approvals), not a few per
    environment: a local ``nebula status`` of many projects stays one short read."""
    chosen = {
        p.id: [e for e in p.environments if env_name is None or e.name == env_name]
        for p in projects
    }
    ids = [e.id for envs in chosen.values() for e in envs]
    units: dict[int, list[schema.Unit]] = {i: [] for i in ids}
    for unit in session.scalars(
        select(schema.Unit)
        .where(schema.Unit.environment_id.in_(ids), schema.Unit.status != "removed")
        .order_by(schema.Unit.kind.desc(), schema.Unit.name)
        .options(selectinload(schema.Unit.active_release))
    ):
        units[unit.environment_id].append(unit)
    latest = newest_deployments(session, ids)
    waiting = pending_approvals(session, ids)
    return [
        _project_status(
            p,
            [
                _environment_status(
                    e, [unit_status(u, latest.get(u.id), waiting) for u in units[e.id]]
                )
                for e in chosen[p.id]
            ],
        )
        for p in projects
    ]


def _environment_status(env: schema.Environment, services: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": env.name,
        "protected": env.protected,
        "promote_from": env.promote_from,
        "soak": format_duration(timedelta(seconds=env.soak_seconds or 0)),
        "self_heal": env.self_heal,
        "namespace": env.namespace,
        "in_file": env.in_file,
        "suspended": liveviews.suspension(env),
        "services": services,
    }


def _project_status(project: schema.Project, environments: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "slug": project.slug,
        "repo": repourls.shown_repo(project),
        "branch": project.branch,
        "commit": project.last_commit,
        "blocker": project.blocker,
        "message": project.blocker_message,
        "blocker_commit": project.blocker_commit,
        "last_polled_at": iso(project.last_polled_at),
        "webhook_signed": project.webhook_secret is not None,
        "removing": removing(project),
        "suspended": liveviews.suspension(project),
        "environments": environments,
    }


def removing(project: schema.Project) -> dict[str, Any] | None:
    """Set while ``nebula project remove`` tears the project down (then it is forgotten)."""
    if project.removing_at is None:
        return None
    return {"by": shown_actor(project.removing_by), "at": iso(project.removing_at)}
