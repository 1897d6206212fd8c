"""The JSON shapes of live state, beside ``reconciler.views`` (which shows them in ``status``):
a unit's ``sync`` and ``drift``, a project's or environment's ``suspended``, and the document
of ``nebula diff -o json`` and ``GET /api/v1/projects/{slug}/diff``.

Field names are fixed by interfaces.md ("Version 1.1 additions"). A Secret's values never
reach these: drift shows which key of it differs, not what either side holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from reconciler.admin import suspensions
from reconciler.clock import utc
from reconciler.core.states import Sync
from reconciler.durations import format_age
from reconciler.model.frozen import FrozenRelease
from reconciler.model.specs import ServiceSpec
from reconciler.store import heartbeats, schema

if TYPE_CHECKING:
    from reconciler.engine.drifting import Inspection


def _iso(value: datetime | None) -> str | None:
    return utc(value).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def sync(unit: schema.Unit) -> dict[str, Any]:
    """``sync`` (synced | drifted | unknown) and ``drift`` as the last check found them; a unit
    with nothing running, or not checked yet, is ``unknown``. ``blocker`` and ``message`` say
    why a check could not compare (``delivery``: the cluster could not be read)."""
    checked = unit.active_release_id is not None and unit.sync is not None
    return {
        "sync": unit.sync if checked else Sync.UNKNOWN.value,
        "drift": list(unit.drift or []) if checked else [],
        "drift_checked_at": _iso(unit.drift_checked_at) if checked else None,
        "blocker": unit.sync_blocker if checked else None,
        "message": unit.sync_message if checked else None,
    }


def suspension(row: schema.Project | schema.Environment) -> dict[str, Any] | None:
    """``{"by", "at", "reason"}`` while suspended, else None: an environment is held by its
    project's suspension too, so it shows that one (what a client reading it must know)."""
    if isinstance(row, schema.Environment):
        found = suspensions.suspended(row)
    else:
        found = suspensions.suspension_of(row)
    if found is None:
        return None
    return {"by": found.by, "at": _iso(found.at), "reason": found.reason}


def diff(slug: str, inspections: Iterable[Inspection]) -> dict[str, Any]:
    """Per unit, the drift list (the contract's entries) and the unified diff."""
    units = [i.to_json() for i in inspections]
    return {"project": slug, "differences": sum(len(u["drift"]) for u in units), "units": units}


def published(active: schema.Release | None, scaled: dict[str, int]) -> dict[str, Any]:
    """The active release's public URLs and its processes' scaling, as it was created."""
    if active is None:
        return {"urls": [], "processes": []}
    unit = FrozenRelease.from_storage(active.config).unit
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


# A pass runs every few seconds under ``nebula serve``: none for this long means none runs.
STALE_AFTER = timedelta(minutes=2)


def reconciler(session: Session, now: datetime) -> dict[str, Any]:
    """``{"as_of", "last_run_at", "by", "stale", "message"}``: when a reconcile pass last ran,
    and, when that is long ago or never, what to do about it (``status``, ``wait`` and the page
    say it). ``as_of`` is the server's time of the answer: what ages are counted from."""
    found = heartbeats.last(session)
    if found is None:
        return {
            "as_of": _iso(now),
            "last_run_at": None,
            "by": None,
            "stale": True,
            "message": "No reconciler has run yet: nothing moves until `nebula serve` runs or "
            "someone runs `nebula reconcile`.",
        }
    age = now - found.beat_at
    stale = age >= STALE_AFTER
    return {
        "as_of": _iso(now),
        "last_run_at": _iso(found.beat_at),
        "by": found.owner,
        "stale": stale,
        "message": f"No reconciler has run for {format_age(age)} (the last pass: "
        f"{_iso(found.beat_at)} on {found.owner}): nothing moves until `nebula serve` runs or "
        "someone runs `nebula reconcile`."
        if stale
        else None,
    }
