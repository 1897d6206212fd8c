"""The status page's listings: ``/approvals`` (pending, then decided) and ``/deployments``
(newest first, filtered by project, environment and state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import views
from reconciler.admin import projects
from reconciler.core.states import ApprovalState, DeploymentState
from reconciler.requests import records
from reconciler.store import schema
from reconciler.web import presenting

DEPLOYMENTS_SHOWN = 200  # newest first; the page says when there are more


@dataclass(frozen=True)
class Filters:
    project: str | None
    environment: str | None
    state: str | None

    @property
    def active(self) -> bool:
        return any((self.project, self.environment, self.state))

    def __getitem__(self, name: str) -> str | None:
        return {"project": self.project, "environment": self.environment, "state": self.state}[name]


def filter_url(filters: Filters, name: str, value: str | None) -> str:
    """``/deployments`` with ``name`` set to ``value`` (None: any) and the other filters kept:
    plain links, so filtering needs no form (the page allows none) and no script."""
    chosen = {"project": filters.project, "environment": filters.environment}
    chosen["state"] = filters.state
    chosen[name] = value
    query = urlencode({k: v for k, v in chosen.items() if v})
    return "/deployments" + (f"?{query}" if query else "")


def approvals_page(session: Session) -> dict[str, Any]:
    rows = records.approvals(session)
    decided = [a for a in reversed(rows) if a.state != ApprovalState.PENDING.value]
    return {
        "pending": presenting.pending_approvals(session, None),
        "decided": views.approvals_of(session, decided),
        "refresh": presenting.REFRESH_WAITING if len(decided) < len(rows) else 0,
    }


def deployments_page(session: Session, filters: Filters) -> dict[str, Any]:
    query = select(schema.Deployment).order_by(schema.Deployment.id.desc())
    if filters.project:
        query = query.where(
            schema.Deployment.project_id == projects.get(session, filters.project).id
        )
    if filters.environment:
        query = query.join(
            schema.Environment, schema.Environment.id == schema.Deployment.environment_id
        ).where(schema.Environment.name == filters.environment)
    if filters.state:
        query = query.where(schema.Deployment.state == filters.state)
    rows = list(session.scalars(query.limit(DEPLOYMENTS_SHOWN + 1)))
    environments = sorted(set(session.scalars(select(schema.Environment.name))))
    return {
        "deployments": [views.deployment(d) for d in rows[:DEPLOYMENTS_SHOWN]],
        "more": len(rows) > DEPLOYMENTS_SHOWN,
        "filters": filters,
        "filter_url": filter_url,
        "choices": {
            "project": [p.slug for p in projects.listing(session)],
            "environment": environments,
            "state": [s.value for s in DeploymentState],
        },
    }
