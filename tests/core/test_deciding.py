"""The pure decisions: what a pending deployment does, and when a stage on the cluster moves
on, fails, or is only slow. Messages are asserted verbatim (behaviour.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reconciler.core import deciding
from reconciler.core.deciding import Clocked, Decision, Other, Pending, Step
from reconciler.core.states import Blocker, DeploymentState
from reconciler.core.transitions import Trigger

S = DeploymentState
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
IN_FLIGHT = [S.PENDING, S.ADMITTED, S.RELEASING, S.STARTING, S.QUALIFYING, S.ACTIVATING, S.DRAINING]
ENDED_BADLY = [S.FAILED, S.CANCELLED, S.REJECTED]


def api(
    *,
    dependencies: tuple[str, ...] = ("db",),
    waiting_on: int | None = None,
    running: str | None = "r-7",
) -> Pending:
    return Pending(
        id=10,
        unit="api",
        queued_at=T0,
        dependencies=dependencies,
        waiting_on=waiting_on,
        running=running,
    )


def db(
    state: DeploymentState, *, queued: datetime | None = T0 - timedelta(seconds=1), id: int = 9
) -> Other:
    return Other(id=id, unit="db", release="r-4", state=state, queued_at=queued)


ADMIT = Decision.move(Trigger.ADMIT)


# -- pending: dependencies -----------------------------------------------------------------


@pytest.mark.parametrize("state", IN_FLIGHT, ids=str)
def test_waits_for_a_dependency_in_flight_that_started_first(state: DeploymentState) -> None:
    decision = deciding.pending(api(), [db(state)])
    assert decision == Decision.wait(
        Blocker.WAITING, "Waiting for db to finish deploying (r-4)", waiting_on=9
    )
    assert decision.step is Step.WAIT


@pytest.mark.parametrize("state", [s for s in S if s not in IN_FLIGHT], ids=str)
def test_a_dependency_not_in_flight_costs_nothing(state: DeploymentState) -> None:
    assert deciding.pending(api(), [db(state)]) == ADMIT


def test_a_dependency_queued_after_us_does_not_hold_us() -> None:
    assert deciding.pending(api(), [db(S.STARTING, queued=T0 + timedelta(seconds=1))]) == ADMIT
    # Queued in the same instant: the lower id started first.
    assert deciding.pending(api(), [db(S.STARTING, queued=T0, id=11)]) == ADMIT
    assert deciding.pending(api(), [db(S.STARTING, queued=T0, id=9)]).blocker is Blocker.WAITING


def test_one_awaiting_approval_never_started() -> None:
    assert deciding.pending(api(), [db(S.AWAITING_APPROVAL, queued=None)]) == ADMIT


def test_a_service_that_does_not_depend_on_it_carries_on() -> None:
    assert deciding.pending(api(dependencies=()), [db(S.STARTING)]) == ADMIT
    assert deciding.pending(api(dependencies=("search",)), [db(S.STARTING)]) == ADMIT


def test_of_several_dependencies_in_flight_the_one_that_started_first_is_named() -> None:
    search = Other(
        id=5, unit="search", release="r-2", state=S.QUALIFYING, queued_at=T0 - timedelta(minutes=1)
    )
    decision = deciding.pending(api(dependencies=("db", "search")), [db(S.STARTING), search])
    # Dependencies are checked in order; db is the first one found in flight.
    assert decision.message == "Waiting for db to finish deploying (r-4)"
    two_db = [db(S.STARTING, id=9), Other(8, "db", "r-3", S.ADMITTED, T0 - timedelta(minutes=5))]
    decision = deciding.pending(api(), two_db)
    assert (decision.message, decision.waiting_on) == (
        "Waiting for db to finish deploying (r-3)",
        8,
    )


@pytest.mark.parametrize("state", ENDED_BADLY, ids=str)
def test_a_held_deployment_fails_when_its_dependency_ends_badly(state: DeploymentState) -> None:
    decision = deciding.pending(api(waiting_on=9), [db(state)])
    assert decision == Decision.move(
        Trigger.FAIL,
        Blocker.WAITING,
        "Not deployed: db failed to deploy (r-4). api keeps running r-7. "
        "Deploy api again once db is healthy.",
    )


def test_a_first_deploy_held_behind_a_failed_dependency_says_nothing_keeps_running() -> None:
    decision = deciding.pending(api(waiting_on=9, running=None), [db(S.FAILED)])
    assert decision.message == (
        "Not deployed: db failed to deploy (r-4). Deploy api again once db is healthy."
    )


def test_a_held_deployment_starts_once_the_dependency_is_healthy() -> None:
    assert deciding.pending(api(waiting_on=9), [db(S.HEALTHY)]) == ADMIT


def test_a_dependency_that_failed_without_holding_us_is_not_our_business() -> None:
    """Only the deployment we were held behind can fail us: an old failure of db (before we
    were queued) does not stop a new api deploy."""
    assert deciding.pending(api(waiting_on=None), [db(S.FAILED)]) == ADMIT


# -- pending: takeover ---------------------------------------------------------------------


@pytest.mark.parametrize("state", [S.ACTIVATING, S.DRAINING], ids=str)
def test_waits_while_the_same_service_is_taking_over_traffic(state: DeploymentState) -> None:
    other = Other(id=8, unit="api", release="r-6", state=state, queued_at=T0 - timedelta(minutes=1))
    decision = deciding.pending(api(dependencies=()), [other])
    assert decision == Decision.wait(None, "Waiting for r-6 to finish taking over traffic")


@pytest.mark.parametrize("state", [s for s in S if s not in (S.ACTIVATING, S.DRAINING)], ids=str)
def test_the_same_service_in_any_other_state_does_not_hold_it(state: DeploymentState) -> None:
    other = Other(id=8, unit="api", release="r-6", state=state, queued_at=T0 - timedelta(minutes=1))
    assert deciding.pending(api(dependencies=()), [other]) == ADMIT


def test_a_failed_dependency_wins_over_a_takeover_wait() -> None:
    other = Other(id=8, unit="api", release="r-6", state=S.DRAINING, queued_at=T0)
    decision = deciding.pending(api(waiting_on=9), [db(S.FAILED), other])
    assert decision.trigger is Trigger.FAIL


# -- stages on the cluster -----------------------------------------------------------------

TIMEOUT = timedelta(minutes=5)


def clock(elapsed: float) -> Clocked:
    return Clocked(T0 + timedelta(seconds=elapsed), T0, TIMEOUT, TIMEOUT / 2)


def test_the_clock() -> None:
    assert (clock(149).stalled, clock(150).stalled) == (False, True)
    assert (clock(299).timed_out, clock(300).timed_out) == (False, True)
    assert clock(42).elapsed == timedelta(seconds=42)


@pytest.mark.parametrize("blocker", [Blocker.IMAGE_PULL, Blocker.CAPACITY], ids=str)
def test_starting_fails_at_once_on_a_definitive_signal(blocker: Blocker) -> None:
    decision = deciding.starting(clock(3), False, blocker, "ErrImagePull", "r-1 keeps serving.")
    assert decision == Decision.move(Trigger.FAIL, blocker, "ErrImagePull. r-1 keeps serving.")


def test_starting_moves_on_once_started() -> None:
    assert deciding.starting(clock(3), True, None, "", "r-1 keeps serving.") == Decision.move(
        Trigger.QUALIFY
    )


def test_starting_waits_then_stalls_then_times_out() -> None:
    keeps = "r-1 keeps serving."
    assert deciding.starting(clock(10), False, None, "pods are starting", keeps) == Decision.wait(
        None, "pods are starting"
    )
    assert deciding.starting(clock(200), False, None, "pods are starting", keeps) == Decision.wait(
        Blocker.STALLED, "Taking longer than 150s: pods are starting"
    )
    # The stalled message does not change while the stage goes on (one event, not one a tick).
    assert deciding.starting(
        clock(250), False, None, "pods are starting", keeps
    ) == deciding.starting(clock(200), False, None, "pods are starting", keeps)
    assert deciding.starting(clock(300), False, None, "pods are starting", keeps) == Decision.move(
        Trigger.FAIL,
        Blocker.READINESS,
        "Pods did not start within 5m: pods are starting. r-1 keeps serving.",
    )
    assert deciding.starting(clock(300), False, None, "", keeps).message == (
        "Pods did not start within 5m: no progress. r-1 keeps serving."
    )


def qualify(
    elapsed: float,
    *,
    ready: int = 2,
    ready_for: float = 10,
    probe_ok: bool | None = True,
    message: str = "",
) -> Decision:
    now = T0 + timedelta(seconds=elapsed)
    return deciding.qualifying(
        clock(elapsed),
        desired=2,
        ready=ready,
        ready_since=now - timedelta(seconds=ready_for) if ready else None,
        stabilization=timedelta(seconds=10),
        probe_ok=probe_ok,
        message=message,
        keeps="r-1 keeps serving.",
    )


def test_qualifying_activates_once_every_replica_stayed_ready_and_the_probe_passed() -> None:
    assert qualify(12) == Decision.move(Trigger.ACTIVATE)
    assert qualify(12, probe_ok=None) == Decision.move(Trigger.ACTIVATE)  # no probe (cron, worker)


def test_qualifying_waits_for_the_stabilization_period_and_every_replica() -> None:
    assert qualify(12, ready_for=9) == Decision.wait(None, "2/2 replicas ready")
    assert qualify(12, ready=1) == Decision.wait(None, "1/2 replicas ready")


def test_qualifying_waits_on_a_failing_probe_and_stalls() -> None:
    failing = "readiness check failed: GET /healthz: 503"
    assert qualify(12, probe_ok=False, message=failing) == Decision.wait(
        None, "2/2 replicas ready; readiness check failed: GET /healthz: 503"
    )
    assert qualify(160, probe_ok=False, message=failing) == Decision.wait(
        Blocker.STALLED,
        "Taking longer than 150s: 2/2 replicas ready; readiness check failed: GET /healthz: 503",
    )


def test_qualifying_fails_with_readiness_at_the_timeout() -> None:
    assert qualify(300, ready=0, message="CrashLoopBackOff") == Decision.move(
        Trigger.FAIL,
        Blocker.READINESS,
        "Not ready within 5m: 0/2 replicas ready; CrashLoopBackOff. r-1 keeps serving.",
    )


def test_still_running_within_its_normal_time_clears_the_blocker() -> None:
    assert deciding.still_running(clock(1)) == Decision.wait(None, None)
    assert deciding.still_running(clock(151)) == Decision.wait(
        Blocker.STALLED, "Taking longer than 150s"
    )
