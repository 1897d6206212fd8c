"""The one transition table, over every (state, trigger) pair of the whole enums.

The expected table is written out here from behaviour.md ("Deployment states",
"Supersession"), not derived from ``transitions.TABLE``, so a wrong edit of the table fails.
"""

from __future__ import annotations

import itertools

import pytest

from reconciler.core import transitions
from reconciler.core.states import FINAL_STATES, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.errors import IllegalTransition
from tests.timelines import EVERY_STATE

S = DeploymentState
T = Trigger

FINALS = {S.HEALTHY, S.FAILED, S.REJECTED, S.CANCELLED, S.SUPERSEDED}
BEFORE_HEALTHY = [s for s in S if s not in FINALS]
HAPPY = {
    (S.AWAITING_APPROVAL, T.APPROVE): S.PENDING,
    (S.AWAITING_APPROVAL, T.REJECT): S.REJECTED,
    (S.AWAITING_APPROVAL, T.EXPIRE): S.CANCELLED,
    (S.PENDING, T.ADMIT): S.ADMITTED,
    (S.ADMITTED, T.RELEASE): S.RELEASING,
    (S.ADMITTED, T.START): S.STARTING,
    (S.RELEASING, T.START): S.STARTING,
    (S.STARTING, T.QUALIFY): S.QUALIFYING,
    (S.QUALIFYING, T.ACTIVATE): S.ACTIVATING,
    (S.ACTIVATING, T.DRAIN): S.DRAINING,
    (S.DRAINING, T.FINISH): S.HEALTHY,
}
EXPECTED: dict[tuple[DeploymentState, Trigger], DeploymentState] = {
    **HAPPY,
    # any state before healthy -> failed | cancelled | superseded ...
    **{(s, T.FAIL): S.FAILED for s in BEFORE_HEALTHY},
    **{(s, T.CANCEL): S.CANCELLED for s in BEFORE_HEALTHY},
    # ... except that one taking over traffic finishes (it is never superseded).
    **{
        (s, T.SUPERSEDE): S.SUPERSEDED
        for s in BEFORE_HEALTHY
        if s not in (S.ACTIVATING, S.DRAINING)
    },
}
PAIRS = list(itertools.product(list(DeploymentState), list(Trigger)))


def test_the_enums_are_the_spec_s_spelling() -> None:
    assert [s.value for s in S] == list(EVERY_STATE)
    assert FINAL_STATES == FINALS
    assert {S.AWAITING_APPROVAL, S.PENDING} == transitions.INITIAL_STATES


def test_the_table_holds_exactly_the_expected_transitions() -> None:
    assert transitions.TABLE == EXPECTED


@pytest.mark.parametrize(("state", "trigger"), PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_every_pair(state: DeploymentState, trigger: Trigger) -> None:
    target = EXPECTED.get((state, trigger))
    assert transitions.allowed(state, trigger) is (target is not None)
    if target is not None:
        assert transitions.advance(state, trigger) is target
        return
    with pytest.raises(IllegalTransition) as raised:
        transitions.advance(state, trigger)
    ended = " (it has ended)" if state in FINALS else ""
    assert (
        raised.value.message == f"A deployment that is {state.value} cannot {trigger.value}{ended}"
    )
    assert raised.value.code == "illegal-transition"


@pytest.mark.parametrize("state", sorted(FINALS), ids=str)
@pytest.mark.parametrize("trigger", list(Trigger), ids=str)
def test_finals_never_move(state: DeploymentState, trigger: Trigger) -> None:
    with pytest.raises(IllegalTransition, match=r"\(it has ended\)$"):
        transitions.advance(state, trigger)


def test_messages_a_user_reads() -> None:
    with pytest.raises(IllegalTransition) as raised:
        transitions.advance(S.ACTIVATING, T.SUPERSEDE)
    assert str(raised.value) == "A deployment that is activating cannot supersede"
    with pytest.raises(IllegalTransition) as raised:
        transitions.advance(S.HEALTHY, T.CANCEL)
    assert str(raised.value) == "A deployment that is healthy cannot cancel (it has ended)"


def test_every_open_state_is_reachable_and_every_path_ends() -> None:
    """Walking the table from the initial states reaches every state, and from every
    state a final one can be reached (nothing can get stuck)."""
    reached = set(transitions.INITIAL_STATES)
    frontier = list(reached)
    while frontier:
        state = frontier.pop()
        for (source, _), target in EXPECTED.items():
            if source is state and target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(S)
    for state in BEFORE_HEALTHY:
        assert transitions.advance(state, T.FAIL) in FINALS


@pytest.mark.parametrize(("protected", "first"), [(True, S.AWAITING_APPROVAL), (False, S.PENDING)])
def test_initial_state(protected: bool, first: DeploymentState) -> None:
    assert transitions.initial_state(protected) is first
