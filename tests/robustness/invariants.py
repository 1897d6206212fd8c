"""What must hold after every step, read from the store as it is committed.

``History`` carries what earlier steps saw (final states, events) so that the checks can say
"never changed" and "never removed", not only "looks right now".
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.core.states import ApprovalState, ChangeSetState, DeploymentState
from reconciler.store import schema
from tests.robustness.refusals import WAITING

S = DeploymentState
FINAL = {s.value for s in S if s.is_final}
OPEN = {s.value for s in S if not s.is_final}
TAKING_TRAFFIC = {S.ACTIVATING.value, S.DRAINING.value}

# behaviour.md's state diagram, written out independently of the engine's transition table.
_PATH = [S.PENDING, S.ADMITTED, S.RELEASING, S.STARTING, S.QUALIFYING, S.ACTIVATING, S.DRAINING]
LEGAL: set[tuple[str, str]] = {
    (S.AWAITING_APPROVAL.value, S.PENDING.value),
    (S.AWAITING_APPROVAL.value, S.REJECTED.value),
    (S.PENDING.value, S.ADMITTED.value),
    (S.ADMITTED.value, S.RELEASING.value),
    (S.ADMITTED.value, S.STARTING.value),
    (S.RELEASING.value, S.STARTING.value),
    (S.STARTING.value, S.QUALIFYING.value),
    (S.QUALIFYING.value, S.ACTIVATING.value),
    (S.ACTIVATING.value, S.DRAINING.value),
    (S.DRAINING.value, S.HEALTHY.value),
}
for _state in [S.AWAITING_APPROVAL, *_PATH]:
    LEGAL.add((_state.value, S.FAILED.value))
    LEGAL.add((_state.value, S.CANCELLED.value))
    if not _state.is_taking_traffic:
        LEGAL.add((_state.value, S.SUPERSEDED.value))

APPROVAL_FINAL = {s.value for s in ApprovalState if s is not ApprovalState.PENDING}
CHANGESET_FINAL = {s.value for s in ChangeSetState if not s.is_open}


@dataclass
class History:
    finals: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    events: dict[int, tuple[object, ...]] = field(default_factory=dict)
    checked: int = 0

    def keep_final(self, what: str, row_id: int, state: str, finals: set[str]) -> None:
        seen = self.finals[what].get(row_id)
        if seen is not None:
            assert state == seen, f"{what} {row_id} ended {seen}, now it is {state}"
        elif state in finals:
            self.finals[what][row_id] = state


def check(session: Session, project_id: int, history: History) -> None:
    """Every invariant, for one project; raises AssertionError with what broke."""
    units = list(session.scalars(select(schema.Unit).where(schema.Unit.project_id == project_id)))
    deployments = list(
        session.scalars(
            select(schema.Deployment)
            .where(schema.Deployment.project_id == project_id)
            .order_by(schema.Deployment.id)
        )
    )
    releases = list(
        session.scalars(
            select(schema.Release)
            .join(schema.Unit, schema.Unit.id == schema.Release.unit_id)
            .where(schema.Unit.project_id == project_id)
        )
    )
    approvals = list(
        session.scalars(select(schema.Approval).where(schema.Approval.project_id == project_id))
    )
    changesets = list(
        session.scalars(select(schema.ChangeSet).where(schema.ChangeSet.project_id == project_id))
    )
    events = list(
        session.scalars(
            select(schema.Event)
            .where(schema.Event.project_id == project_id)
            .order_by(schema.Event.id)
        )
    )
    _releases(units, releases)
    _one_taking_traffic(deployments)
    _one_in_flight(deployments)
    _finals(history, deployments, approvals, changesets)
    _events(history, deployments, events)
    _other_events(approvals, changesets, events)
    _approvals(deployments, approvals, changesets)
    _active_is_latest_healthy(units, deployments, events)
    history.checked += 1


def _releases(units: list[schema.Unit], releases: list[schema.Release]) -> None:
    by_unit: dict[int, list[schema.Release]] = defaultdict(list)
    for r in releases:
        by_unit[r.unit_id].append(r)
    for unit in units:
        mine = by_unit.get(unit.id, [])
        numbers = sorted(r.number for r in mine)
        where = f"{unit.name} in environment {unit.environment_id}"
        assert numbers == list(range(1, len(numbers) + 1)), f"{where}: release numbers {numbers}"
        assert unit.next_release_number == len(numbers) + 1, (
            f"{where}: next release number {unit.next_release_number} after {numbers}"
        )
        active = [r for r in mine if r.status == "active"]
        assert len(active) <= 1, f"{where}: active releases {[r.name for r in active]}"
        if unit.active_release_id is not None:
            assert [r.id for r in active] == [unit.active_release_id], (
                f"{where}: the unit points at release {unit.active_release_id}, "
                f"active: {[r.name for r in active]}"
            )
        else:
            assert not active, f"{where}: {active[0].name} is active but the unit has none"


def _one_taking_traffic(deployments: list[schema.Deployment]) -> None:
    busy = Counter(d.unit_id for d in deployments if d.state in TAKING_TRAFFIC)
    for unit_id, n in busy.items():
        assert n <= 1, f"unit {unit_id} has {n} deployments past qualifying"


def _one_in_flight(deployments: list[schema.Deployment]) -> None:
    """Entering pending supersedes what is in flight before it takes traffic: per service and
    environment, at most one deployment between pending and qualifying."""
    before_traffic = OPEN - TAKING_TRAFFIC - {S.AWAITING_APPROVAL.value}
    flying = Counter(d.unit_id for d in deployments if d.state in before_traffic)
    for unit_id, n in flying.items():
        ids = [d.id for d in deployments if d.unit_id == unit_id and d.state in before_traffic]
        assert n <= 1, f"unit {unit_id} has {n} deployments in flight before traffic: {ids}"
    for d in deployments:
        assert d.release.unit_id == d.unit_id, f"deployment {d.id} deploys another unit's release"


def _active_is_latest_healthy(
    units: list[schema.Unit], deployments: list[schema.Deployment], events: list[schema.Event]
) -> None:
    """What a service runs is what its latest deployment to go healthy brought (since it was
    last torn down)."""
    healthy_at = {
        e.deployment_id: e.id for e in events if e.kind == "deployment" and e.state == "healthy"
    }
    for unit in units:
        if unit.status == "removed":
            assert unit.active_release_id is None
            continue
        torn_down = [
            e.id
            for e in events
            if e.kind == "unit"
            and e.environment_id == unit.environment_id
            and e.state == "removed"
            and (e.message or "").startswith(f"{unit.name} torn down")
        ]
        since = max(torn_down, default=0)
        went_healthy = sorted(
            (healthy_at[d.id], d.release_id)
            for d in deployments
            if d.unit_id == unit.id and d.id in healthy_at and healthy_at[d.id] > since
        )
        expected = went_healthy[-1][1] if went_healthy else None
        assert unit.active_release_id == expected, (
            f"{unit.name} in environment {unit.environment_id} runs release "
            f"{unit.active_release_id}; its latest healthy deployment brought {expected}"
        )


def _other_events(
    approvals: list[schema.Approval], changesets: list[schema.ChangeSet], events: list[schema.Event]
) -> None:
    """Change sets and approvals: the latest event of each says the state it is in."""
    last: dict[tuple[str, int], str] = {}
    for e in events:
        if e.kind == "changeset" and e.changeset_id is not None:
            last[("changeset", e.changeset_id)] = str(e.state)
        if e.kind == "approval" and e.approval_id is not None:
            last[("approval", e.approval_id)] = str(e.state)
    for c in changesets:
        assert last.get(("changeset", c.id)) == c.state, (
            f"change set {c.id} is {c.state}; its last event says {last.get(('changeset', c.id))}"
        )
    for a in approvals:
        assert last.get(("approval", a.id)) == a.state, (
            f"approval {a.id} is {a.state}; its last event says {last.get(('approval', a.id))}"
        )


def _finals(
    history: History,
    deployments: list[schema.Deployment],
    approvals: list[schema.Approval],
    changesets: list[schema.ChangeSet],
) -> None:
    for d in deployments:
        history.keep_final("deployment", d.id, d.state, FINAL)
        if d.state in FINAL:
            assert d.finished_at is not None, f"deployment {d.id} is {d.state} with no finish time"
        if d.state == S.HEALTHY.value:
            assert d.release.status in ("active", "retired", "unavailable"), (
                f"deployment {d.id} is healthy but {d.release.name} is {d.release.status}"
            )
    for a in approvals:
        history.keep_final("approval", a.id, a.state, APPROVAL_FINAL)
    for c in changesets:
        history.keep_final("changeset", c.id, c.state, CHANGESET_FINAL)


def _events(
    history: History, deployments: list[schema.Deployment], events: list[schema.Event]
) -> None:
    for e in events:  # append-only: what was there is still there, unchanged
        row = (e.kind, e.state, e.message, e.actor, e.deployment_id, e.at)
        seen = history.events.setdefault(e.id, row)
        assert seen == row, f"event {e.id} changed: {seen} -> {row}"
    assert set(history.events) <= {e.id for e in events}, "an event was deleted"
    moves: dict[int, list[str]] = defaultdict(list)
    for e in events:
        if e.kind == "deployment" and e.deployment_id is not None:
            moves[e.deployment_id].append(str(e.state))
    for d in deployments:
        states = moves.get(d.id, [])
        assert states, f"deployment {d.id} ({d.state}) has no event"
        assert states[0] in (S.AWAITING_APPROVAL.value, S.PENDING.value), (
            f"deployment {d.id} began {states[0]}"
        )
        assert states[-1] == d.state, f"deployment {d.id} is {d.state}; its events say {states}"
        assert len(states) == len(set(states)), f"deployment {d.id} entered a state twice: {states}"
        for before, after in itertools.pairwise(states):
            assert (before, after) in LEGAL, f"deployment {d.id}: {before} -> {after} in {states}"


def _approvals(
    deployments: list[schema.Deployment],
    approvals: list[schema.Approval],
    changesets: list[schema.ChangeSet],
) -> None:
    pending = [a for a in approvals if a.state == ApprovalState.PENDING.value]
    per_target = Counter((a.target, a.target_id) for a in pending)
    assert all(n == 1 for n in per_target.values()), f"two pending approvals: {per_target}"
    gated = {(a.target, a.target_id) for a in pending}
    states = {c.id: c.state for c in changesets}
    for d in deployments:
        if d.state != S.AWAITING_APPROVAL.value:
            continue
        assert ("deployment", d.id) in gated or ("changeset", d.changeset_id) in gated, (
            f"deployment {d.id} awaits an approval that is not pending"
        )
        assert d.message in WAITING, f"deployment {d.id} awaits approval saying {d.message!r}"
    by_id = {d.id: d for d in deployments}
    for a in pending:
        if a.target == "deployment":
            target = by_id.get(a.target_id)
            assert target is not None and target.state == S.AWAITING_APPROVAL.value, (
                f"approval {a.id} is pending for deployment {a.target_id} "
                f"({target.state if target else 'missing'})"
            )
        else:
            assert states.get(a.target_id) == ChangeSetState.PENDING_APPROVAL.value, (
                f"approval {a.id} is pending for change set {a.target_id} "
                f"({states.get(a.target_id)})"
            )
    for a in approvals:
        if a.state in (ApprovalState.APPROVED.value, ApprovalState.REJECTED.value):
            assert a.decided_by or a.rule, f"approval {a.id} is {a.state} by nobody"
            assert a.decided_at is not None
