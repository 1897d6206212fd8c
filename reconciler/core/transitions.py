"""The one transition table for deployment states. Every state change goes through ``advance``.

behaviour.md "Deployment states"::

    [*] -> awaiting-approval (protected) | pending (any other environment)
    awaiting-approval -> pending | rejected | cancelled (cancelled or expired)
    pending -> admitted -> [releasing ->] starting -> qualifying -> activating -> draining -> healthy
    any state before healthy -> failed | cancelled | superseded

Supersession is narrower than "any state before healthy": a deployment that is activating or
draining is taking over traffic and finishes (stopping it halfway could leave nothing serving),
so ``SUPERSEDE`` is not in the table for those two states.
"""

from __future__ import annotations

from enum import StrEnum

from reconciler.core.states import FINAL_STATES, DeploymentState
from reconciler.errors import RefusedError

S = DeploymentState


class Trigger(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    EXPIRE = "expire"
    CANCEL = "cancel"
    ADMIT = "admit"
    RELEASE = "release"
    START = "start"
    QUALIFY = "qualify"
    ACTIVATE = "activate"
    DRAIN = "drain"
    FINISH = "finish"
    FAIL = "fail"
    SUPERSEDE = "supersede"


_OPEN = [s for s in DeploymentState if s not in FINAL_STATES]

TABLE: dict[tuple[DeploymentState, Trigger], DeploymentState] = {
    (S.AWAITING_APPROVAL, Trigger.APPROVE): S.PENDING,
    (S.AWAITING_APPROVAL, Trigger.REJECT): S.REJECTED,
    (S.AWAITING_APPROVAL, Trigger.EXPIRE): S.CANCELLED,
    (S.PENDING, Trigger.ADMIT): S.ADMITTED,
    (S.ADMITTED, Trigger.RELEASE): S.RELEASING,
    (S.ADMITTED, Trigger.START): S.STARTING,
    (S.RELEASING, Trigger.START): S.STARTING,
    (S.STARTING, Trigger.QUALIFY): S.QUALIFYING,
    (S.QUALIFYING, Trigger.ACTIVATE): S.ACTIVATING,
    (S.ACTIVATING, Trigger.DRAIN): S.DRAINING,
    (S.DRAINING, Trigger.FINISH): S.HEALTHY,
    **{(s, Trigger.FAIL): S.FAILED for s in _OPEN},
    **{(s, Trigger.CANCEL): S.CANCELLED for s in _OPEN},
    **{(s, Trigger.SUPERSEDE): S.SUPERSEDED for s in _OPEN if not s.is_taking_traffic},
}

INITIAL_STATES = frozenset({S.AWAITING_APPROVAL, S.PENDING})


class IllegalTransition(RefusedError):
    code = "illegal-transition"


def advance(state: DeploymentState, trigger: Trigger) -> DeploymentState:
    """The state ``trigger`` leads to from ``state``; raises ``IllegalTransition`` otherwise."""
    try:
        return TABLE[(state, trigger)]
    except KeyError:
        verb = trigger.value
        raise IllegalTransition(
            f"A deployment that is {state.value} cannot {verb}"
            + (" (it has ended)" if state.is_final else "")
        ) from None


def allowed(state: DeploymentState, trigger: Trigger) -> bool:
    return (state, trigger) in TABLE


def initial_state(protected: bool) -> DeploymentState:
    return S.AWAITING_APPROVAL if protected else S.PENDING
