"""Deciding pending deployments: admit, wait behind a dependency or a takeover, or fail
behind a dependency that failed (the pure rule is ``core.deciding.pending``).

A pending deployment calls no cluster: it is decided in the transaction that records its
batch, under its row lock, against the other deployments of its environment as that
transaction sees them (read once for the whole batch, so a decision taken earlier in the
batch, say a dependency going healthy, counts for the ones after it, as one by one).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from reconciler.core import deciding
from reconciler.core.deciding import Decision, Step
from reconciler.core.states import DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import batching
from reconciler.engine.batching import Claimed
from reconciler.store import schema


@dataclass(frozen=True)
class Others:
    """What the pending deployments of a batch are decided against (rows kept with their
    units and releases, for the recording transaction's lifetime)."""

    by_environment: dict[int, list[schema.Deployment]]
    kept: batching.Locked | None = None


def others(session: Session, pending: Iterable[tuple[Claimed, schema.Deployment]]) -> Others:
    """What the pending deployments of a batch are decided against, per environment: what is
    in flight there, and the deployment each one was held behind."""
    wanted = list(pending)
    if not wanted:
        return Others({})
    found = batching.open_in(
        session,
        {d.environment_id for _, d in wanted},
        {d.waiting_on_id for _, d in wanted if d.waiting_on_id is not None},
    )
    by_environment: dict[int, list[schema.Deployment]] = defaultdict(list)
    for row in found.rows.values():
        by_environment[row.environment_id].append(row)
    return Others(by_environment, found)


def decide(claimed: Claimed, d: schema.Deployment, environment: Others) -> Decision:
    """The pending deployment's next move; admitting it forgets what it was held behind."""
    active = d.unit.active_release
    view = deciding.Pending(
        id=d.id,
        unit=d.unit.name,
        queued_at=d.queued_at or d.created_at,
        dependencies=claimed.frozen.dependencies,
        waiting_on=d.waiting_on_id,
        running=active.name if active is not None else None,
    )
    decision = deciding.pending(
        view,
        [
            deciding.Other(o.id, o.unit.name, o.release.name, DeploymentState(o.state), o.queued_at)
            for o in environment.by_environment.get(d.environment_id, [])
            if o.id != d.id and (o.finished_at is None or o.id == d.waiting_on_id)
        ],
    )
    if decision.step is Step.MOVE and decision.trigger is Trigger.ADMIT:
        d.waiting_on_id = None
    return decision
