"""The transition tables: deployments, change sets and approvals. Every state change of each
goes through its table here (``advance``, ``check_changeset``, ``check_approval``).

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

from reconciler.core.states import (
    OPEN_STATES,
    ApprovalState,
    ChangeSetState,
    DeploymentState,
)
from reconciler.errors import IllegalTransition

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
    **{(s, Trigger.FAIL): S.FAILED for s in OPEN_STATES},
    **{(s, Trigger.CANCEL): S.CANCELLED for s in OPEN_STATES},
    **{(s, Trigger.SUPERSEDE): S.SUPERSEDED for s in OPEN_STATES if not s.is_taking_traffic},
}

INITIAL_STATES = frozenset({S.AWAITING_APPROVAL, S.PENDING})


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


def initial_state(awaiting_approval: bool) -> DeploymentState:
    """Where a deployment starts: waiting for its approval (a protected environment, no rule
    passed it at once), else pending."""
    return S.AWAITING_APPROVAL if awaiting_approval else S.PENDING


# behaviour.md "Change set states": a draft is applied at once, waits for approval, or ends
# discarded (replaced, drifted for good) or failed (its promotion gate failed); one pending
# approval is applied, rejected or discarded (expired, or a deployment of it ended first).
CS = ChangeSetState
CHANGESET_MOVES: dict[ChangeSetState, frozenset[ChangeSetState]] = {
    CS.DRAFT: frozenset({CS.PENDING_APPROVAL, CS.APPLIED, CS.DISCARDED, CS.FAILED}),
    CS.PENDING_APPROVAL: frozenset({CS.APPLIED, CS.REJECTED, CS.DISCARDED}),
}

# An approval is decided once: recorded pending (or approved at once by a rule), then ended.
A = ApprovalState
APPROVAL_MOVES: dict[ApprovalState, frozenset[ApprovalState]] = {
    A.PENDING: frozenset({A.APPROVED, A.REJECTED, A.EXPIRED, A.CANCELLED}),
}


def check_changeset(before: ChangeSetState, after: ChangeSetState) -> ChangeSetState:
    """``after``, when a change set that is ``before`` may become it; else ``IllegalTransition``."""
    if after not in CHANGESET_MOVES.get(before, frozenset()):
        raise IllegalTransition(f"A change set that is {before.value} cannot become {after.value}")
    return after


def check_approval(before: ApprovalState, after: ApprovalState) -> ApprovalState:
    """``after``, when an approval that is ``before`` may become it; else ``IllegalTransition``."""
    if after not in APPROVAL_MOVES.get(before, frozenset()):
        raise IllegalTransition(f"An approval that is {before.value} cannot become {after.value}")
    return after
