"""What a deployment does next: pure functions of what is known now.

The engine gathers the facts (the deployment, the other deployments of its environment, what
the cluster reported, the clock's reading) and these decide. Each rule is one ordered
condition with the reason it comes where it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from reconciler.core import messages
from reconciler.core.states import Blocker, DeploymentState
from reconciler.core.transitions import Trigger

S = DeploymentState


class Step(StrEnum):
    WAIT = "wait"  # nothing to do now; ``blocker``/``message`` say why (or clear it)
    MOVE = "move"  # fire ``trigger``


@dataclass(frozen=True)
class Decision:
    step: Step
    trigger: Trigger | None = None
    blocker: Blocker | None = None
    message: str | None = None
    waiting_on: int | None = None  # the dependency deployment a pending one is held behind

    @staticmethod
    def wait(
        blocker: Blocker | None = None, message: str | None = None, waiting_on: int | None = None
    ) -> Decision:
        return Decision(Step.WAIT, None, blocker, message, waiting_on)

    @staticmethod
    def move(
        trigger: Trigger, blocker: Blocker | None = None, message: str | None = None
    ) -> Decision:
        return Decision(Step.MOVE, trigger, blocker, message)


@dataclass(frozen=True)
class Other:
    """Another deployment of the same environment, as far as a pending one cares."""

    id: int
    unit: str
    release: str
    state: DeploymentState
    queued_at: datetime | None


@dataclass(frozen=True)
class Pending:
    id: int
    unit: str
    queued_at: datetime
    dependencies: tuple[str, ...]
    waiting_on: int | None
    running: str | None  # the release serving now


_IN_FLIGHT = {
    S.PENDING,
    S.ADMITTED,
    S.RELEASING,
    S.STARTING,
    S.QUALIFYING,
    S.ACTIVATING,
    S.DRAINING,
}
_ENDED_BADLY = {S.FAILED, S.CANCELLED, S.REJECTED}


def _started_first(other: Other, me: Pending) -> bool:
    return other.queued_at is not None and (other.queued_at, other.id) < (me.queued_at, me.id)


def pending(me: Pending, others: list[Other]) -> Decision:
    """Admit, wait behind a dependency or a takeover, or fail because a dependency failed."""
    by_id = {o.id: o for o in others}
    # A dependency we were held behind ended badly: we never deploy on top of a broken one.
    held = by_id.get(me.waiting_on) if me.waiting_on is not None else None
    if held is not None and held.state in _ENDED_BADLY:
        return Decision.move(
            Trigger.FAIL,
            Blocker.WAITING,
            messages.dependency_failed(held.unit, held.release, _service(me), me.running),
        )
    # A dependency with a deployment in flight that started first: wait for it.
    for dependency in me.dependencies:
        ahead = [
            o
            for o in others
            if o.unit == dependency and o.state in _IN_FLIGHT and _started_first(o, me)
        ]
        if ahead:
            first = min(ahead, key=lambda o: (o.queued_at or datetime.max, o.id))
            return Decision.wait(
                Blocker.WAITING,
                messages.waiting_for_dependency(first.unit, first.release),
                first.id,
            )
    # The same service is taking over traffic: it finishes first (stopping it halfway could
    # leave nothing serving).
    for other in others:
        if other.unit == me.unit and other.id != me.id and other.state.is_taking_traffic:
            return Decision.wait(None, messages.waiting_for_takeover(other.release))
    return Decision.move(Trigger.ADMIT)


def _service(me: Pending) -> str:
    return me.unit


@dataclass(frozen=True)
class Clocked:
    """How long the current stage has run, and its limits."""

    now: datetime
    stage_started: datetime
    timeout: timedelta
    stall_after: timedelta

    @property
    def elapsed(self) -> timedelta:
        return self.now - self.stage_started

    @property
    def timed_out(self) -> bool:
        return self.elapsed >= self.timeout

    @property
    def stalled(self) -> bool:
        return self.elapsed >= self.stall_after


def still_running(clock: Clocked, message: str | None = None) -> Decision:
    """A stage that is fine but slow gets ``stalled``; one within its normal time, nothing."""
    if clock.stalled:
        # The normal time, not the time spent: a message that changed every tick would write
        # an event every tick.
        normal = int(clock.stall_after.total_seconds())
        detail = f": {message}" if message else ""
        return Decision.wait(Blocker.STALLED, f"Taking longer than {normal}s{detail}")
    return Decision.wait(None, message)


def starting(
    clock: Clocked, started: bool, blocker: Blocker | None, message: str, keeps: str
) -> Decision:
    # Definitive signals first: an image that cannot be pulled or pods that cannot be placed
    # will not fix themselves by waiting.
    if blocker in (Blocker.IMAGE_PULL, Blocker.CAPACITY):
        return Decision.move(Trigger.FAIL, blocker, f"{message}. {keeps}")
    if started:
        return Decision.move(Trigger.QUALIFY)
    if clock.timed_out:
        spent = _spent(clock)
        return Decision.move(
            Trigger.FAIL,
            Blocker.READINESS,
            f"Pods did not start within {spent}: {message or 'no progress'}. {keeps}",
        )
    return still_running(clock, message or "starting")


def qualifying(
    clock: Clocked,
    desired: int,
    ready: int,
    ready_since: datetime | None,
    stabilization: timedelta,
    probe_ok: bool | None,
    message: str,
    keeps: str,
) -> Decision:
    stable = (
        ready >= desired and ready_since is not None and clock.now - ready_since >= stabilization
    )
    if stable and probe_ok is not False:
        return Decision.move(Trigger.ACTIVATE)
    if clock.timed_out:
        return Decision.move(
            Trigger.FAIL,
            Blocker.READINESS,
            f"Not ready within {_spent(clock)}: {ready}/{desired} replicas ready"
            + (f"; {message}" if message else "")
            + f". {keeps}",
        )
    detail = f"{ready}/{desired} replicas ready" + (f"; {message}" if message else "")
    return still_running(clock, detail)


def _spent(clock: Clocked) -> str:
    seconds = int(clock.timeout.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 and seconds >= 60 else f"{seconds}s"
