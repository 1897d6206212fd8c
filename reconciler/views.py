"""The JSON shapes of interfaces.md, built once and shared by the CLI and the HTTP API.

Field names are fixed by the contract; more may be added. Ids are strings, times ISO 8601 UTC.
No secret value can reach these: variables are shown as written in nebula.toml (references,
not values), and secrets are never read here.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import liveviews, statusdocs
from reconciler.admin import auditing, repourls
from reconciler.core.rights import PROJECT_REQUESTER, shown_actor
from reconciler.core.states import (
    ApprovalTarget,
    DeploymentState,
    HistoryState,
    ReleaseStatus,
)
from reconciler.durations import format_duration
from reconciler.store import listing, schema

if TYPE_CHECKING:  # the shapes of what a request returns; not needed to show a status
    from reconciler.engine.queueing import Ended
    from reconciler.requests.suspending import Outcome


def iso(value: datetime | None) -> str | None:
    return statusdocs.iso(value)


def deployment(d: schema.Deployment) -> dict[str, Any]:
    env = d.environment
    return {
        "id": str(d.id),
        "project": env.project.slug,
        "environment": env.name,
        "service": d.unit.name,
        "release": d.release.name,
        "kind": d.kind,
        "state": d.state,
        "blocker": d.blocker,
        "message": d.message,
        "requested_by": shown_actor(d.requested_by),
        "image": d.release.image,
        "previous_release": d.previous_release.name if d.previous_release else None,
        "changeset_id": str(d.changeset_id) if d.changeset_id else None,
        "created_at": iso(d.created_at),
        "finished_at": iso(d.finished_at),
    }


def event(e: schema.Event) -> dict[str, Any]:
    return {
        "at": iso(e.at),
        "state": e.state,
        "message": e.message,
        "actor": shown_actor(e.actor),
        "kind": e.kind,
    }


def deployment_with_events(session: Session, d: schema.Deployment) -> dict[str, Any]:
    rows = session.scalars(
        select(schema.Event).where(schema.Event.deployment_id == d.id).order_by(schema.Event.id)
    )
    return {**deployment(d), "events": [event(e) for e in rows]}


def shown_deployment(d: schema.Deployment | None) -> schema.Deployment | None:
    return statusdocs.shown_deployment(d)


def ended(items: Iterable[Ended]) -> list[dict[str, Any]]:
    """What a request ended (superseded, cancelled), as its response lists it."""
    return [
        {"id": str(e.id), "service": e.service, "release": e.release, "state": e.state}
        for e in items
    ]


def project(p: schema.Project) -> dict[str, Any]:
    """``nebula project list --json``: a project's registration and when it was polled."""
    return {
        "slug": p.slug,
        "repo": repourls.shown_repo(p),
        "branch": p.branch,
        "path": p.path,
        "interval": p.interval_seconds,
        "concurrency": p.concurrency,
        "commit": p.last_commit,
        "blocker": p.blocker,
        "message": p.blocker_message,
        "last_polled_at": iso(p.last_polled_at),
        "next_poll_at": iso(p.next_poll_at),
        # A project without a webhook secret takes push notifications from anyone.
        "webhook_signed": p.webhook_secret is not None,
        "webhook_limit": p.webhook_limit_seconds or None,
        "suspended": liveviews.suspension(p),
    }


def changeset_of(session: Session, c: schema.ChangeSet) -> dict[str, Any]:
    """``changeset`` with the approval that gates (or gated) it, read here."""
    return changeset(c, listing.newest_approval(session, ApprovalTarget.CHANGESET, c.id))


def changeset(c: schema.ChangeSet, approval: schema.Approval | None = None) -> dict[str, Any]:
    env = c.environment
    return {
        "id": str(c.id),
        "project": env.project.slug,
        "environment": env.name,
        "state": c.state,
        "owner": shown_actor(c.owner),
        "commit": c.commit,
        "author": c.author,
        # How it ended (``Replaced by the change set from 1a2b3c4``) once there is an outcome,
        # else the commit's message; both are also given on their own.
        "message": c.note or c.message,
        "commit_message": c.message,
        "note": c.note,
        "applied_message": c.applied_message,
        "gate": gate(c),
        "evidence": list(approval.evidence or []) if approval else [],
        "approval_id": str(approval.id) if approval else None,
        "created_at": iso(c.created_at),
        "finished_at": iso(c.finished_at),
        "lines": [
            {
                "service": line.service,
                "kind": line.kind,
                "field": line.field,
                "before": line.before,
                "after": line.after,
                "via": line.via,
                "drifted": line.drifted,
            }
            for line in c.lines
        ],
    }


_HISTORY = {
    ReleaseStatus.ACTIVE: HistoryState.ACTIVE,
    ReleaseStatus.RETIRED: HistoryState.ROLLBACK_ABLE,
    ReleaseStatus.UNAVAILABLE: HistoryState.RETIRED,
    ReleaseStatus.CREATED: HistoryState.IN_FLIGHT,
}


def history(session: Session, unit: schema.Unit) -> list[dict[str, Any]]:
    """``nebula history``: a unit's releases, newest first, with who created each and from
    which commit (the deployment that made it, and its change set)."""
    rows = session.scalars(
        select(schema.Release)
        .where(schema.Release.unit_id == unit.id)
        .order_by(schema.Release.number.desc())
    ).all()
    first: dict[int, schema.Deployment] = {}
    for d in session.scalars(
        select(schema.Deployment)
        .where(schema.Deployment.unit_id == unit.id)
        .order_by(schema.Deployment.id.desc())
    ):
        first[d.release_id] = d  # the oldest deployment of each release wins
    listed = []
    for release in rows:
        made_by = first.get(release.id)
        state = _HISTORY.get(ReleaseStatus(release.status))
        if state is None:  # abandoned: how its deployment ended says why
            ended = made_by.state if made_by is not None else None
            state = HistoryState.FAILED if ended == DeploymentState.FAILED else HistoryState.ENDED
        commit = None
        if made_by is not None and made_by.changeset_id is not None:
            changeset = session.get(schema.ChangeSet, made_by.changeset_id)
            commit = changeset.commit if changeset is not None else None
        listed.append(
            {
                "release": release.name,
                "image": release.image,
                "state": state.value,
                "created_at": iso(release.created_at),
                "created_by": shown_actor(made_by.requested_by) if made_by else None,
                "commit": commit,
                "source": release.source,
                "deployment_id": str(made_by.id) if made_by else None,
                "deployment_state": made_by.state if made_by else None,
                "retired_at": iso(release.retired_at),
            }
        )
    return listed


def audit(entry: auditing.Entry) -> dict[str, Any]:
    """``audit -o json`` / ``GET /api/v1/audit``: one administrative act."""
    return {
        "at": iso(entry.at),
        "actor": shown_actor(entry.actor),
        "action": entry.action,
        "target": entry.target,
        "message": entry.message,
    }


def gate(c: schema.ChangeSet) -> dict[str, Any] | None:
    """Its promotion gate: null in an environment without ``promote_from``."""
    if c.gate_state is None:
        return None
    return {
        "environment": c.gate_environment,
        "soak": format_duration(timedelta(seconds=c.gate_soak_seconds or 0)),
        "state": c.gate_state,
        "message": c.gate_message,
    }


def approvals_of(session: Session, rows: Iterable[schema.Approval]) -> list[dict[str, Any]]:
    """``approval`` of each row, with the commit author of the change sets pushes asked for."""
    listed = list(rows)
    ids = [a.target_id for a in listed if a.target == ApprovalTarget.CHANGESET.value]
    authors = dict(
        session.execute(
            select(schema.ChangeSet.id, schema.ChangeSet.author).where(schema.ChangeSet.id.in_(ids))
        ).all()
        if ids
        else []
    )
    return [
        approval(a, authors.get(a.target_id) if a.target == ApprovalTarget.CHANGESET else None)
        for a in listed
    ]


def approval(a: schema.Approval, author: str | None = None) -> dict[str, Any]:
    """An approval; ``author`` is the commit's author when a push asked (``requested_by`` is
    then the project's slug, as the contract says)."""
    env = a.environment
    return {
        "id": str(a.id),
        "project": env.project.slug,
        "environment": env.name,
        "target": a.target,
        "target_id": str(a.target_id),
        "kind": a.kind,
        "state": a.state,
        "requested_by": shown_actor(a.requested_by),
        "author": author if a.requested_by.startswith(PROJECT_REQUESTER) else None,
        "decided_by": shown_actor(a.decided_by),
        "decided_via": a.decided_via,
        "rule": a.rule,
        "reason": a.reason,
        "evidence": list(a.evidence or []),
        "created_at": iso(a.created_at),
        "expires_at": iso(a.expires_at),
        "decided_at": iso(a.decided_at),
    }


def suspension_outcome(outcome: Outcome) -> dict[str, Any]:
    """What ``nebula suspend|resume`` (and the API's routes) answer: the project or environment
    as it is now, and the change sets that went on when it was resumed."""
    return {
        "project": outcome.project.slug,
        "environment": outcome.environment.name if outcome.environment is not None else None,
        "suspended": liveviews.suspension(outcome.target),
        "changesets": [changeset(c, approval) for c, approval in outcome.went_on],
    }
