"""Who must approve what, and when an approval passes at once (behaviour.md, "Approvals");
who may decide one (``check_decider``, ``may_decide``) and who may cancel a deployment
(``check_canceller``).

Pure: the caller gathers the facts (policies, whether the requester holds the approve grant
there, everyone who does, the services' ``skip_production_approval``) and records the
outcome. Rights themselves are ``rights``'s: a grant of approve never lets anyone decide their
own request while ``forbid_self_approval`` is on.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.core import messages, rights
from reconciler.core.rights import Principal, Where
from reconciler.core.states import ApprovalRule, DeploymentKind, GrantKind
from reconciler.errors import ForbiddenError


@dataclass(frozen=True)
class Policies:
    forbid_self_approval: bool = True
    rollbacks_skip_approval: bool = False


@dataclass(frozen=True)
class Request:
    """What asks for approval."""

    kind: DeploymentKind | None  # None for a change set
    requester: str  # member name, or the project (``project:<slug>``) for a push
    requester_decides: bool  # the requester holds the approve grant there (false for a push)
    skip_production_approval: tuple[bool, ...]  # one per service it deploys
    deciders: tuple[str, ...]  # everyone who holds the approve grant there


@dataclass(frozen=True)
class Outcome:
    rule: ApprovalRule | None  # set when it passes at once
    message: str  # what the waiting deployment or change set shows


def evaluate(request: Request, policies: Policies) -> Outcome:
    """Pass at once by the first rule that holds, in the spec's order; else wait."""
    # Rollbacks skip approval: the policy says a rollback returns to something that already ran.
    if policies.rollbacks_skip_approval and request.kind is DeploymentKind.ROLLBACK:
        return Outcome(ApprovalRule.ROLLBACKS_SKIP_APPROVAL, "")
    # Requester can decide: an approver's own request, when self-approval is allowed.
    if request.requester_decides and not policies.forbid_self_approval:
        return Outcome(ApprovalRule.REQUESTER_CAN_DECIDE, "")
    # Skip production approval: every service it deploys has it, and self-approval is allowed.
    skips = request.skip_production_approval
    if skips and all(skips) and not policies.forbid_self_approval:
        return Outcome(ApprovalRule.SKIP_PRODUCTION_APPROVAL, "")
    others = [d for d in request.deciders if d != request.requester]
    if policies.forbid_self_approval and request.requester in request.deciders and not others:
        return Outcome(None, messages.ONLY_ADMIN)
    return Outcome(None, messages.WAITING_FOR_APPROVAL)


def check_decider(
    decider: Principal,
    requester: str,
    policies: Policies,
    where: Where,
    *,
    approve: bool,
    deciders: tuple[str, ...] = (),
) -> None:
    """Raises ``ForbiddenError`` (its message is shown to them: CLI, API, Slack) when
    ``decider`` may not decide an approval ``requester`` asked for in ``where``; refused their
    own, the hint names who can (``deciders``: who holds the approve grant there)."""
    rights.require(decider, GrantKind.APPROVE, where, verb="approve" if approve else "reject")
    if policies.forbid_self_approval and decider.name == requester:
        others = [name for name in deciders if name != requester]
        raise ForbiddenError(
            "Your policy forbids approving your own deploys: someone else must approve this request.",
            hint=f"who can approve it: {', '.join(others)}" if others else _no_one_else(where),
        )


def may_decide(decider: Principal, requester: str, policies: Policies, where: Where) -> bool:
    """Whether ``check_decider`` would let ``decider`` decide this request: what a member's
    inbox lists as theirs to decide (the same rule, so the inbox never offers what a click
    would refuse)."""
    try:
        check_decider(decider, requester, policies, where, approve=True)
    except ForbiddenError:
        return False
    return True


def _no_one_else(where: Where) -> str:
    return (
        "no one else can approve it: an admin can grant it to someone (nebula grant add NAME "
        f"approve --project {where.project} --env {where.environment}), or turn the policy off "
        "(nebula policy set forbid_self_approval false)"
    )


def check_canceller(canceller: Principal, requester: str, where: Where, *, deployment: int) -> None:
    """Raises ``ForbiddenError`` when ``canceller`` may not cancel a deployment ``requester``
    asked for: who holds the deploy grant there may (any member, in an unprotected
    environment), and so may the person who asked for it."""
    if canceller.name == requester and canceller.role.acts:
        return
    rights.require(canceller, GrantKind.DEPLOY, where, verb=f"cancel deployment {deployment}")
