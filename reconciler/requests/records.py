"""Change sets and approvals found by id or listed: what the read commands and pages need,
kept apart from the modules that change them (which bring the notifiers and the renderers),
so a read such as ``nebula approvals`` loads none of that."""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.core.states import ApprovalState, ChangeSetState
from reconciler.errors import NotFoundError
from reconciler.store import schema
from reconciler.store.listing import rows


def approval(session: Session, approval_id: int, *, lock: bool = False) -> schema.Approval:
    """``lock`` to decide it: two deciders (or a decider and expiry) at the same moment then
    take turns, and the second sees the first's decision instead of deciding again."""
    approval = session.get(schema.Approval, approval_id, with_for_update=True if lock else None)
    if approval is None:
        raise NotFoundError(f"No approval {approval_id}", hint="list them with: nebula approvals")
    return approval


def approvals(
    session: Session, project_id: int | None = None, state: ApprovalState | None = None
) -> list[schema.Approval]:
    return rows(session, schema.Approval, project_id, state)


def changeset(session: Session, changeset_id: int) -> schema.ChangeSet:
    changeset = session.get(schema.ChangeSet, changeset_id)
    if changeset is None:
        raise NotFoundError(
            f"No change set {changeset_id}", hint="list them with: nebula changesets"
        )
    return changeset


def changesets(
    session: Session, project_id: int | None = None, state: ChangeSetState | None = None
) -> list[schema.ChangeSet]:
    return rows(session, schema.ChangeSet, project_id, state)
