"""Starting a requested deployment, and ending what the request replaced.

The engine supersedes or cancels deployments (``queueing``) and says which it ended; what
gated them belongs here: a pending approval of an ended deployment ends ``cancelled``, and a
change set still open that one of them belonged to is discarded. A change set is approved
and applied whole: with one of its deployments ended before that, what it would apply is no
longer what was staged. Discarded, its approval and other waiting deployments end with it,
and it is not recorded as applied, so the next push stages its changes again against what
really runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.states import ApprovalTarget
from reconciler.engine import queueing
from reconciler.engine.queueing import Ended
from reconciler.requests import approvals, changesets
from reconciler.store import schema


def start(
    session: Session, clock: Clock, deployment: schema.Deployment, actor: str | None
) -> list[Ended]:
    """``deployment`` starts to count: it supersedes older work on its service (whose
    approvals and change sets end with it) or waits behind what takes traffic."""
    ended = queueing.enter_pending(session, clock, deployment, actor)
    close_ended(session, clock, ended, actor)
    return ended


def cancel(
    session: Session,
    clock: Clock,
    deployment: schema.Deployment,
    actor: str | None,
    *,
    message: str | None = None,
) -> Ended:
    ended = queueing.cancel(session, clock, deployment, actor, message=message)
    close_ended(session, clock, [ended], actor)
    return ended


def close_ended(session: Session, clock: Clock, ended: Iterable[Ended], actor: str | None) -> None:
    for e in ended:
        approvals.cancel_for(session, clock, ApprovalTarget.DEPLOYMENT, e.id, actor=actor)
        if e.changeset_id is None:
            continue
        changeset = session.get(schema.ChangeSet, e.changeset_id)
        if changeset is not None and changesets.is_open(changeset):
            changesets.discard(
                session,
                clock,
                changeset,
                f"Discarded: its deployment of {e.service} {e.release} ended {e.state} "
                f"({e.message})",
                actor=actor,
            )
