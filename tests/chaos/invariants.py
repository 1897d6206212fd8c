"""What must hold after the chaos run, checked from the store's rows and Slack's recorded calls.

- every deployment ended, or waits for an approval that is still pending;
- each unit's releases are numbered 1..N: none skipped, none twice;
- no deployment entered a state twice (each (deployment, state) at most once in the events);
- no event lost: each deployment's state events, oldest first, walk the transition table from
  an initial state to the state the deployment is in now;
- every notice was delivered, and every post reached Slack exactly once per idempotency key
  (the key travels in the message metadata).

``read`` takes the rows out of the store; ``check`` is pure, so its own tests can hand it
broken histories and see each one reported.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from reconciler.core.states import DeploymentState
from reconciler.core.transitions import INITIAL_STATES, TABLE
from reconciler.store import schema

S = DeploymentState
STEPS = {(before, after) for (before, _), after in TABLE.items()}
POSTED_KINDS = {"approval-request", "deployment-failed", "project-blocked", "project-recovered"}


@dataclass(frozen=True)
class Deployment:
    id: int
    unit_id: int
    changeset_id: int | None
    state: str


@dataclass(frozen=True)
class Notice:
    key: str
    kind: str
    delivered: bool
    skipped: bool


@dataclass
class Rows:
    deployments: list[Deployment]
    transitions: list[tuple[int, str]]  # (deployment id, state) of "deployment" events, by id
    releases: list[tuple[int, int]]  # (unit id, number)
    pending_approvals: set[tuple[str, int]]  # (target, target id)
    notices: list[Notice]
    events: int = 0
    project_blockers: dict[str, int] = field(default_factory=dict)  # set (by blocker), cleared
    closed_approvals: set[int] = field(default_factory=set)  # decided, expired or cancelled


@dataclass
class Findings:
    counts: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read(url: str) -> Rows:
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            deployments = [
                Deployment(d.id, d.unit_id, d.changeset_id, d.state)
                for d in session.scalars(select(schema.Deployment).order_by(schema.Deployment.id))
            ]
            transitions = [
                (int(e.deployment_id), str(e.state))
                for e in session.scalars(
                    select(schema.Event)
                    .where(schema.Event.kind == "deployment")
                    .order_by(schema.Event.id)
                )
                if e.deployment_id is not None
            ]
            releases = [(r.unit_id, r.number) for r in session.scalars(select(schema.Release))]
            pending = {
                (a.target, a.target_id)
                for a in session.scalars(
                    select(schema.Approval).where(schema.Approval.state == "pending")
                )
            }
            notices = [
                Notice(
                    m.key,
                    m.kind,
                    m.delivered_at is not None,
                    bool((m.result or {}).get("skipped")),
                )
                for m in session.scalars(select(schema.OutboxMessage))
            ]
            events = len(session.scalars(select(schema.Event.id)).all())
            blockers = Counter(
                e.state or "cleared"
                for e in session.scalars(
                    select(schema.Event).where(schema.Event.kind == "project.blocker")
                )
            )
            closed = set(
                session.scalars(
                    select(schema.Approval.id).where(schema.Approval.state != "pending")
                )
            )
    finally:
        engine.dispose()
    return Rows(
        deployments, transitions, releases, pending, notices, events, dict(blockers), closed
    )


def notice_rows(url: str, keys: Iterable[str] | None) -> list[dict[str, Any]]:
    """The outbox rows of ``keys`` (None: all), as they ended (to diagnose a failed run)."""
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            return [
                {
                    "id": m.id,
                    "key": m.key,
                    "attempts": m.attempts,
                    "result": m.result,
                    "last_error": m.last_error,
                    "created_at": str(m.created_at),
                    "delivered_at": str(m.delivered_at),
                    "payload": m.payload,
                }
                for m in session.scalars(
                    select(schema.OutboxMessage).order_by(schema.OutboxMessage.id)
                    if keys is None
                    else select(schema.OutboxMessage).where(
                        schema.OutboxMessage.key.in_(list(keys))
                    )
                )
            ]
    finally:
        engine.dispose()


def posted_keys(messages: Iterable[dict[str, Any]]) -> Counter[str]:
    """How many messages in the channel carry each idempotency key (a ``chat.postMessage``
    that Slack answered with an error posted nothing, so calls are not what is counted)."""
    keys: Counter[str] = Counter()
    for message in messages:
        metadata = message.get("metadata") or {}
        key = (metadata.get("event_payload") or {}).get("key")
        keys[str(key)] += 1
    return keys


def edited_keys(messages: Iterable[dict[str, Any]]) -> set[str]:
    """The keys of the messages edited since posted (an approval request, once closed)."""
    return {
        str(((m.get("metadata") or {}).get("event_payload") or {}).get("key"))
        for m in messages
        if m.get("edited")
    }


def check(
    rows: Rows, posts: Counter[str], updates: int = 0, edited: set[str] | None = None
) -> Findings:
    found = Findings()
    _deployments(rows, found)
    _releases(rows, found)
    _transitions(rows, found)
    _slack(rows, posts, updates, found)
    _approval_messages(rows, posts, edited or set(), found)
    found.counts["events"] = rows.events
    found.counts["project blockers set or cleared"] = dict(sorted(rows.project_blockers.items()))
    return found


def _waiting_legitimately(d: Deployment, pending: set[tuple[str, int]]) -> bool:
    if d.state != S.AWAITING_APPROVAL.value:
        return False
    return ("deployment", d.id) in pending or (
        d.changeset_id is not None and ("changeset", d.changeset_id) in pending
    )


def _deployments(rows: Rows, found: Findings) -> None:
    states = Counter(d.state for d in rows.deployments)
    found.counts["deployments"] = len(rows.deployments)
    found.counts["deployments by state"] = dict(sorted(states.items()))
    stuck = [
        d
        for d in rows.deployments
        if not S(d.state).is_final and not _waiting_legitimately(d, rows.pending_approvals)
    ]
    found.counts["not final and not legitimately waiting"] = len(stuck)
    for d in stuck[:20]:
        found.problems.append(
            f"deployment {d.id} is {d.state}, neither final nor awaiting a pending approval"
        )


def _releases(rows: Rows, found: Findings) -> None:
    numbers: dict[int, list[int]] = defaultdict(list)
    for unit, number in rows.releases:
        numbers[unit].append(number)
    skipped = duplicated = 0
    for unit, seen in sorted(numbers.items()):
        counted = Counter(seen)
        twice = sorted(n for n, c in counted.items() if c > 1)
        missing = sorted(set(range(1, max(seen) + 1)) - set(seen))
        duplicated += len(twice)
        skipped += len(missing)
        if twice or missing:
            found.problems.append(
                f"unit {unit}: release numbers {sorted(seen)} (twice: {twice}, skipped: {missing})"
            )
    found.counts["units"] = len(numbers)
    found.counts["releases"] = len(rows.releases)
    found.counts["release numbers skipped"] = skipped
    found.counts["release numbers duplicated"] = duplicated


def _transitions(rows: Rows, found: Findings) -> None:
    paths: dict[int, list[str]] = defaultdict(list)
    for deployment_id, state in rows.transitions:
        paths[deployment_id].append(state)
    twice = 0
    broken = 0
    for d in rows.deployments:
        path = paths.get(d.id, [])
        repeated = sorted(s for s, c in Counter(path).items() if c > 1)
        if repeated:
            twice += len(repeated)
            found.problems.append(f"deployment {d.id} entered {repeated} more than once: {path}")
        problem = _path_problem(path, d.state)
        if problem is not None:
            broken += 1
            found.problems.append(f"deployment {d.id}: {problem}: {path}")
    found.counts["state transitions recorded"] = len(rows.transitions)
    found.counts["duplicate transitions"] = twice
    found.counts["deployments with a lost or impossible event"] = broken


def _path_problem(path: list[str], current: str) -> str | None:
    if not path:
        return "no state event at all"
    if S(path[0]) not in INITIAL_STATES:
        return f"the first event is {path[0]}, not an initial state"
    for before, after in pairwise(path):
        if (S(before), S(after)) not in STEPS:
            return f"{before} -> {after} is not in the transition table (an event is missing)"
    if path[-1] != current:
        return f"the last event says {path[-1]} but the deployment is {current}"
    return None


def _slack(rows: Rows, posts: Counter[str], updates: int, found: Findings) -> None:
    kinds = Counter(n.kind for n in rows.notices)
    undelivered = [n.key for n in rows.notices if not n.delivered]
    expected = {n.key for n in rows.notices if n.kind in POSTED_KINDS and not n.skipped}
    never = sorted(k for k in expected if posts[k] == 0)
    twice = sorted(k for k, c in posts.items() if c > 1)
    stray = sorted(k for k in posts if k not in expected)
    found.counts["notices by kind"] = dict(sorted(kinds.items()))
    found.counts["notices undelivered"] = len(undelivered)
    found.counts["slack messages posted"] = sum(posts.values())
    found.counts["slack updates"] = updates
    found.counts["slack keys posted exactly once"] = sum(1 for k in expected if posts[k] == 1)
    found.counts["slack keys posted twice or more"] = len(twice)
    found.counts["slack keys never posted"] = len(never)
    for label, keys in (
        ("not delivered", undelivered),
        ("never posted", never),
        ("posted more than once", twice),
        ("posted without a notice", stray),
    ):
        if keys:
            found.problems.append(f"Slack: {len(keys)} {label}: {keys[:10]}")


def _approval_messages(rows: Rows, posts: Counter[str], edited: set[str], found: Findings) -> None:
    """A closed approval's request was edited to say so (buttons gone); an open one was not."""
    stale, early = [], []
    for key in sorted(k for k in posts if k.startswith("approval-request:")):
        approval = int(key.rsplit(":", 1)[1])
        if approval in rows.closed_approvals and key not in edited:
            stale.append(approval)
        elif approval not in rows.closed_approvals and key in edited:
            early.append(approval)
    found.counts["approval messages edited once closed"] = sum(
        1 for k in posts if k.startswith("approval-request:") and k in edited
    )
    if stale:
        found.problems.append(f"Slack: closed approvals still asking for a decision: {stale[:10]}")
    if early:
        found.problems.append(f"Slack: pending approvals whose message was closed: {early[:10]}")
