"""The status document (``nebula status``, ``GET /api/v1/status``, the status page) made from
rows, whichever way they were read: the ORM's (``statusviews``, the server) or plain
``sqlite3``'s (``statusreads``, a local ``nebula status`` that loads no SQLAlchemy). One
set of functions makes both, so the two cannot show a project differently.

Pure: the rows are anything with the columns' attributes (``Protocol``s below), times aware
UTC, JSON columns decoded. Field names are fixed by interfaces.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from reconciler.clock import utc
from reconciler.core.rights import shown_actor
from reconciler.core.states import ApprovalTarget, DeploymentState, Sync
from reconciler.durations import format_age, format_duration
from reconciler.gitsource.urls import sanitize_url
from reconciler.model import codec
from reconciler.model.specs import ServiceSpec

# A pass runs every few seconds under ``nebula serve``: none for this long means none runs.
STALE_AFTER = timedelta(minutes=2)


class Suspendable(Protocol):
    @property
    def suspended_by(self) -> str | None: ...
    @property
    def suspended_at(self) -> datetime | None: ...
    @property
    def suspended_reason(self) -> str | None: ...


class ProjectRow(Suspendable, Protocol):
    @property
    def slug(self) -> str: ...
    @property
    def repo_url(self) -> str: ...
    @property
    def branch(self) -> str: ...
    @property
    def last_commit(self) -> str | None: ...
    @property
    def blocker(self) -> str | None: ...
    @property
    def blocker_message(self) -> str | None: ...
    @property
    def blocker_commit(self) -> str | None: ...
    @property
    def last_polled_at(self) -> datetime | None: ...
    @property
    def webhook_secret(self) -> bytes | None: ...
    @property
    def removing_by(self) -> str | None: ...
    @property
    def removing_at(self) -> datetime | None: ...


class EnvironmentRow(Suspendable, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def protected(self) -> bool: ...
    @property
    def promote_from(self) -> str | None: ...
    @property
    def soak_seconds(self) -> int: ...
    @property
    def self_heal(self) -> bool: ...
    @property
    def in_file(self) -> bool: ...
    @property
    def namespace(self) -> str: ...


class ReleaseRow(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def image(self) -> str: ...
    @property
    def config(self) -> dict[str, Any]: ...


class UnitRow(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def active_release_id(self) -> int | None: ...
    @property
    def sync(self) -> str | None: ...
    @property
    def drift(self) -> list[dict[str, Any]] | None: ...
    @property
    def drift_checked_at(self) -> datetime | None: ...
    @property
    def sync_blocker(self) -> str | None: ...
    @property
    def sync_message(self) -> str | None: ...
    @property
    def scaled(self) -> dict[str, int] | None: ...


class DeploymentRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def changeset_id(self) -> int | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def blocker(self) -> str | None: ...
    @property
    def message(self) -> str | None: ...


def iso(value: datetime | None) -> str | None:
    return utc(value).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def shown_repo(project: ProjectRow) -> str:
    """The URL as every output shows it: ``https://***@host/x`` when it has credentials."""
    return sanitize_url(project.repo_url)


D = TypeVar("D", bound=DeploymentRow)


def shown_deployment(d: D | None) -> D | None:
    """What status shows for a unit: its deployment in flight, or the last one if it did not
    go healthy (so a failure, a rejection or a cancel, and what keeps serving, stays visible
    until the next deploy)."""
    if d is None or d.state == DeploymentState.HEALTHY.value:
        return None
    return d


def deployment_brief(d: DeploymentRow, release: str) -> dict[str, Any]:
    return {
        "id": str(d.id),
        "release": release,
        "kind": d.kind,
        "state": d.state,
        "blocker": d.blocker,
        "message": d.message,
    }


def suspension(*rows: Suspendable) -> dict[str, Any] | None:
    """``{"by", "at", "reason"}`` of the first of ``rows`` suspended, else None (an environment
    is held by its project's suspension too: pass the project first)."""
    for row in rows:
        if row.suspended_by is not None and row.suspended_at is not None:
            return {
                "by": row.suspended_by,
                "at": iso(row.suspended_at),
                "reason": row.suspended_reason or "",
            }
    return None


def sync(unit: UnitRow) -> dict[str, Any]:
    """``sync`` (synced | drifted | unknown) and ``drift`` as the last check found them; a unit
    with nothing running, or not checked yet, is ``unknown``. ``blocker`` and ``message`` say
    why a check could not compare (``delivery``: the cluster could not be read)."""
    checked = unit.active_release_id is not None and unit.sync is not None
    return {
        "sync": unit.sync if checked else Sync.UNKNOWN.value,
        "drift": list(unit.drift or []) if checked else [],
        "drift_checked_at": iso(unit.drift_checked_at) if checked else None,
        "blocker": unit.sync_blocker if checked else None,
        "message": unit.sync_message if checked else None,
    }


def published(active: ReleaseRow | None, scaled: Mapping[str, int]) -> dict[str, Any]:
    """The active release's public URLs and its processes' scaling, as it was created."""
    if active is None:
        return {"urls": [], "processes": []}
    unit = codec.unit_from_dict(active.config["spec"])
    if not isinstance(unit, ServiceSpec):
        return {"urls": [], "processes": []}
    return {
        "urls": list(unit.public_urls),
        "processes": [
            {
                "name": p.name,
                "type": p.type.value,
                "replicas": None if p.autoscale else p.replicas,
                "autoscale": None
                if p.autoscale is None
                else {
                    "min": p.autoscale.minimum,
                    "max": p.autoscale.maximum,
                    "cpu_percent": p.autoscale.cpu_percent,
                    # What the autoscaler runs, as the last drift check saw it.
                    "current": scaled.get(p.name),
                },
            }
            for p in unit.processes
        ],
    }


def unit_status(
    unit: UnitRow,
    active: ReleaseRow | None,
    latest: tuple[DeploymentRow, str] | None,
    waiting: Mapping[tuple[str, int], int],
) -> dict[str, Any]:
    """One service's line: ``latest`` is its newest deployment with that one's release name."""
    shown = shown_deployment(latest[0]) if latest is not None else None
    brief = None
    if shown is not None and latest is not None:
        brief = deployment_brief(shown, latest[1])
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
        **sync(unit),
        **published(active, unit.scaled or {}),
    }


def environment_status(
    env: EnvironmentRow, project: ProjectRow, services: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "name": env.name,
        "protected": env.protected,
        "promote_from": env.promote_from,
        "soak": format_duration(timedelta(seconds=env.soak_seconds or 0)),
        "self_heal": env.self_heal,
        "namespace": env.namespace,
        "in_file": env.in_file,
        "suspended": suspension(project, env),
        "services": list(services),
    }


def project_status(project: ProjectRow, environments: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "slug": project.slug,
        "repo": shown_repo(project),
        "branch": project.branch,
        "commit": project.last_commit,
        "blocker": project.blocker,
        "message": project.blocker_message,
        "blocker_commit": project.blocker_commit,
        "last_polled_at": iso(project.last_polled_at),
        "webhook_signed": project.webhook_secret is not None,
        "removing": removing(project),
        "suspended": suspension(project),
        "environments": list(environments),
    }


def removing(project: ProjectRow) -> dict[str, Any] | None:
    """Set while ``nebula project remove`` tears the project down (then it is forgotten)."""
    if project.removing_at is None:
        return None
    return {"by": shown_actor(project.removing_by), "at": iso(project.removing_at)}


def reconciler(beat: tuple[datetime, str] | None, now: datetime) -> dict[str, Any]:
    """``{"as_of", "last_run_at", "by", "stale", "message"}``: when a reconcile pass last ran
    (``beat``: when, on which replica), and, when that is long ago or never, what to do about
    it (``status``, ``wait`` and the page say it). ``as_of`` is the server's time of the
    answer: what ages are counted from."""
    if beat is None:
        return {
            "as_of": iso(now),
            "last_run_at": None,
            "by": None,
            "stale": True,
            "message": "No reconciler has run yet: nothing moves until `nebula serve` runs or "
            "someone runs `nebula reconcile`.",
        }
    beat_at, owner = beat
    age = now - beat_at
    stale = age >= STALE_AFTER
    return {
        "as_of": iso(now),
        "last_run_at": iso(beat_at),
        "by": owner,
        "stale": stale,
        "message": f"No reconciler has run for {format_age(age)} (the last pass: "
        f"{iso(beat_at)} on {owner}): nothing moves until `nebula serve` runs or "
        "someone runs `nebula reconcile`."
        if stale
        else None,
    }
