"""Approval records: requested, passed at once by a rule, closed (decided, expired, cancelled)
through their transition table.

Deciding one (approve/reject) lives in ``deciding``, since it also moves the change set or
deployment it gates.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from notifiers import notices
from reconciler.admin import members, policies, principals
from reconciler.clock import Clock
from reconciler.core import approving, messages, rights, transitions
from reconciler.core.states import (
    ApprovalState,
    ApprovalTarget,
    DecisionChannel,
    DeploymentKind,
    DeploymentState,
    GrantKind,
)
from reconciler.engine import recording
from reconciler.settings import Settings
from reconciler.store import events, schema
from reconciler.store import listing as listings


def evaluate(
    session: Session,
    environment: schema.Environment,
    kind: DeploymentKind | None,
    requester: str,
    skip_flags: tuple[bool, ...],
) -> approving.Outcome:
    member = members.find(session, requester)
    decides = member is not None and rights.holds(
        principals.of_member(session, member), GrantKind.APPROVE, principals.where(environment)
    )
    request = approving.Request(
        kind=kind,
        requester=requester,
        requester_decides=decides,
        skip_production_approval=skip_flags,
        deciders=principals.deciders(session, environment),
    )
    return approving.evaluate(request, policies.load(session))


def request(
    session: Session,
    clock: Clock,
    settings: Settings,
    environment: schema.Environment,
    target: ApprovalTarget,
    target_id: int,
    kind: str,
    requester: str,
    outcome: approving.Outcome,
    *,
    evidence: list[str] | None = None,
) -> schema.Approval:
    """Record an approval; one that passes at once is recorded too, with its rule and who.

    ``kind`` is the deployment kind it gates, or ``changeset`` for a whole change set;
    ``evidence`` what a gated environment's gate proved (or that it was skipped)."""
    now = clock.now()
    approval = schema.Approval(
        project_id=environment.project_id,
        environment_id=environment.id,
        target=target.value,
        target_id=target_id,
        kind=kind,
        state=ApprovalState.PENDING.value,
        requested_by=requester,
        evidence=evidence,
        created_at=now,
        expires_at=now + settings.approval_ttl,
    )
    message = outcome.message
    if outcome.rule is not None:
        approval.state = ApprovalState.APPROVED.value
        approval.rule = outcome.rule.value
        approval.decided_by = requester
        approval.decided_via = DecisionChannel.RULE.value
        approval.decided_at = now
        message = f"Approved at once ({outcome.rule.value})"
    session.add(approval)
    session.flush()
    events.approval(session, now, approval, message, actor=requester)
    if approval.state == ApprovalState.PENDING.value:
        notices.approval_requested(session, clock, approval)
    return approval


def pending_for(session: Session, target: ApprovalTarget, target_id: int) -> schema.Approval | None:
    return session.scalars(
        select(schema.Approval).where(
            schema.Approval.target == target.value,
            schema.Approval.target_id == target_id,
            schema.Approval.state == ApprovalState.PENDING.value,
        )
    ).first()


def for_target(session: Session, target: ApprovalTarget, target_id: int) -> schema.Approval | None:
    return listings.newest_approval(session, target, target_id)


def close(
    session: Session,
    clock: Clock,
    approval: schema.Approval,
    state: ApprovalState,
    *,
    actor: str | None,
    via: DecisionChannel | None,
    reason: str | None = None,
) -> None:
    """Decide, expire or cancel a pending approval; ``IllegalTransition`` for a closed one."""
    approval.state = transitions.check_approval(ApprovalState(approval.state), state).value
    approval.decided_at = clock.now()
    if state in (ApprovalState.APPROVED, ApprovalState.REJECTED):
        approval.decided_by = actor
    approval.decided_via = via.value if via is not None else None
    approval.reason = reason
    events.approval(session, clock.now(), approval, reason, actor=actor)
    notices.approval_closed(session, clock, approval)


def cancel_for(
    session: Session,
    clock: Clock,
    target: ApprovalTarget,
    target_id: int,
    *,
    actor: str | None,
    reason: str | None = None,
) -> schema.Approval | None:
    """End the pending approval gating a target that ended some other way."""
    approval = pending_for(session, target, target_id)
    if approval is not None:
        close(
            session, clock, approval, ApprovalState.CANCELLED, actor=actor, via=None, reason=reason
        )
    return approval


def due(session: Session, clock: Clock) -> list[schema.Approval]:
    """Locked for expiring them; one being decided right now is left to its decider."""
    return list(
        session.scalars(
            select(schema.Approval)
            .where(
                schema.Approval.state == ApprovalState.PENDING.value,
                schema.Approval.expires_at <= clock.now(),
            )
            .with_for_update(skip_locked=True)
        )
    )


def refresh_waiting(session: Session, clock: Clock) -> int:
    """After a member or a policy changes: a deployment that said no one else could approve it
    says again what is true now (another admin was added, or self-approval allowed)."""
    waiting = session.scalars(
        select(schema.Deployment).where(
            schema.Deployment.state == DeploymentState.AWAITING_APPROVAL.value,
            schema.Deployment.message == messages.ONLY_ADMIN,
        )
    ).all()
    changed = 0
    for deployment in waiting:
        approval = pending_for(session, ApprovalTarget.DEPLOYMENT, deployment.id)
        if approval is None:
            continue
        outcome = evaluate(
            session,
            deployment.environment,
            DeploymentKind(deployment.kind),
            approval.requested_by,
            (),
        )
        # (A rule that would now pass it at once does not decide it after the fact: the
        # requester can approve it now, and the message says it waits.)
        message = outcome.message if outcome.rule is None else messages.WAITING_FOR_APPROVAL
        changed += recording.note(session, clock, deployment, blocker=None, message=message)
    return changed
