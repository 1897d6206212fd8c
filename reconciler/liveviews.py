"""The JSON shapes of live state read through the ORM, beside ``reconciler.views``: a
project's or environment's ``suspended``, the reconciler's heartbeat, and the document of
``nebula diff -o json`` and ``GET /api/v1/projects/{slug}/diff`` (a unit's ``sync`` and
``drift`` are ``statusdocs``'s, with the rest of ``status``).

Field names are fixed by interfaces.md ("Version 1.1 additions"). A Secret's values never
reach these: drift shows which key of it differs, not what either side holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from reconciler import statusdocs
from reconciler.store import heartbeats, schema

if TYPE_CHECKING:
    from reconciler.engine.drifting import Inspection


def suspension(row: schema.Project | schema.Environment) -> dict[str, Any] | None:
    """``{"by", "at", "reason"}`` while suspended, else None: an environment is held by its
    project's suspension too, so it shows that one (what a client reading it must know)."""
    if isinstance(row, schema.Environment):
        return statusdocs.suspension(row.project, row)
    return statusdocs.suspension(row)


def diff(slug: str, inspections: Iterable[Inspection]) -> dict[str, Any]:
    """Per unit, the drift list (the contract's entries) and the unified diff."""
    units = [i.to_json() for i in inspections]
    return {"project": slug, "differences": sum(len(u["drift"]) for u in units), "units": units}


def reconciler(session: Session, now: datetime) -> dict[str, Any]:
    """``{"as_of", "last_run_at", "by", "stale", "message"}``: when a reconcile pass last ran,
    and, when that is long ago or never, what to do about it (``status``, ``wait`` and the page
    say it). ``as_of`` is the server's time of the answer: what ages are counted from."""
    found = heartbeats.last(session)
    return statusdocs.reconciler((found.beat_at, found.owner) if found else None, now)
