"""Who must approve what, and when an approval passes at once (behaviour.md, "Approvals");
who may cancel a deployment in a protected environment (``check_canceller``).

Pure: the caller gathers the facts (policies, the requester's role, the number of people who
could decide, the services' ``skip_production_approval``) and records the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.core import messages
from reconciler.core.states import ApprovalRule, DeploymentKind, Role
from reconciler.errors import ForbiddenError


@dataclass(frozen=True)
class Policies:
    forbid_self_approval: bool = True
    rollbacks_skip_approval: bool = False


@dataclass(frozen=True)
class Request:
    """What asks for approval. ``requester_role`` is None for a push (the project asks)."""

    kind: DeploymentKind | None  # None for a change set
    requester: str  # member name, or the project (``project:<slug>``) for a push
    requester_role: Role | None
    skip_production_approval: tuple[bool, ...]  # one per service it deploys
    deciders: tuple[str, ...]  # names of every admin and owner


@dataclass(frozen=True)
class Outcome:
    rule: ApprovalRule | None  # set when it passes at once
    message: str  # what the waiting deployment or change set shows


def evaluate(request: Request, policies: Policies) -> Outcome:
    """Pass at once by the first rule that holds, in the spec's order; else wait."""
    # Rollbacks skip approval: the policy says a rollback returns to something that already ran.
    if policies.rollbacks_skip_approval and request.kind is DeploymentKind.ROLLBACK:
        return Outcome(ApprovalRule.ROLLBACKS_SKIP_APPROVAL, "")
    # Requester can decide: an admin's own request, when self-approval is allowed.
    if (
        request.requester_role is not None
        and request.requester_role.can_decide
        and not policies.forbid_self_approval
    ):
        return Outcome(ApprovalRule.REQUESTER_CAN_DECIDE, "")
    # Skip production approval: every service it deploys has it, and self-approval is allowed.
    skips = request.skip_production_approval
    if skips and all(skips) and not policies.forbid_self_approval:
        return Outcome(ApprovalRule.SKIP_PRODUCTION_APPROVAL, "")
    others = [d for d in request.deciders if d != request.requester]
    if policies.forbid_self_approval and request.requester in request.deciders and not others:
        return Outcome(None, messages.ONLY_ADMIN)
    return Outcome(None, messages.WAITING_FOR_APPROVAL)


def check_decider(decider: str, role: Role | None, requester: str, policies: Policies) -> None:
    """Raises ``ForbiddenError`` (its message is shown to them: CLI, API, Slack) when ``decider`` may not decide an approval ``requester`` asked for."""
    if role is None:
        raise ForbiddenError(f"'{decider}' is not a member of this organization.")
    if not role.can_decide:
        raise ForbiddenError(
            f"Only an admin or owner can decide approvals; {decider} is a {role.value}."
        )
    if policies.forbid_self_approval and decider == requester:
        raise ForbiddenError(
            "Your policy forbids approving your own deploys: someone else must approve this request."
        )


def check_canceller(
    canceller: str, role: Role | None, requester: str, *, protected: bool, deployment: int
) -> None:
    """Raises ``ForbiddenError`` when ``canceller`` may not cancel a deployment ``requester``
    asked for. Anyone may in an unprotected environment; in a protected one, only an admin or
    an owner, or the person who asked for it (a push is the project's: admins and owners)."""
    if not protected or canceller == requester or (role is not None and role.can_decide):
        return
    who = f"{canceller} is a {role.value}" if role is not None else f"'{canceller}' is no member"
    raise ForbiddenError(
        f"Deployment {deployment} is in a protected environment: only an admin or owner, or "
        f"the person who asked for it, can cancel it; {who}.",
        hint="ask an admin or owner to cancel it (nebula cancel ID --as NAME)",
    )
