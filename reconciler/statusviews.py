"""What ``nebula status`` and the status page show of projects: each environment's services,
what serves, what is in flight or failed, and which approval it waits for. Read through the
ORM in a few queries for every project at once, however many there are and however long
their history; the document itself is ``statusdocs``'s (as for ``statusreads``, the same
read in plain ``sqlite3`` that a local ``nebula status`` makes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from reconciler import statusdocs
from reconciler.core.states import ApprovalState
from reconciler.store import schema


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
        statusdocs.project_status(
            p,
            [
                statusdocs.environment_status(
                    e, p, [_unit_status(u, latest.get(u.id), waiting) for u in units[e.id]]
                )
                for e in chosen[p.id]
            ],
        )
        for p in projects
    ]


def _unit_status(
    unit: schema.Unit, latest: schema.Deployment | None, waiting: dict[tuple[str, int], int]
) -> dict[str, Any]:
    newest = (latest, latest.release.name) if latest is not None else None
    return statusdocs.unit_status(unit, unit.active_release, newest, waiting)
