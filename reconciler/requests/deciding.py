"""Deciding approvals (CLI, API, Slack) and expiring the ones nobody decided.

Approving starts what the approval gates: a change set is applied (its deployments enter
pending, superseding what is in flight), a deployment enters pending. Rejecting ends it
``rejected``. Expiry ends the target ``cancelled`` (a change set, which has no cancelled
state, ends ``discarded``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from reconciler.admin import policies, principals
from reconciler.context import Context
from reconciler.core import approving
from reconciler.core.rights import Principal
from reconciler.core.states import (
    ApprovalState,
    ApprovalTarget,
    ChangeSetState,
    DecisionChannel,
    DeploymentKind,
    DeploymentState,
)
from reconciler.core.transitions import Trigger
from reconciler.durations import format_duration
from reconciler.engine import queueing, recording
from reconciler.engine.queueing import Ended
from reconciler.errors import AlreadyDecidedError
from reconciler.requests import applying, approvals, changesets, guards, records, starting
from reconciler.store import schema


@dataclass
class Decision:
    approval: schema.Approval
    ended: list[Ended] = field(default_factory=list)


def _describe(approval: schema.Approval) -> str:
    who = f" by {approval.decided_by}" if approval.decided_by else ""
    when = approval.decided_at.strftime("%Y-%m-%d %H:%M UTC") if approval.decided_at else ""
    return f"Approval {approval.id} is already {approval.state}{who}" + (
        f" at {when}" if when else ""
    )


def decide(
    session: Session,
    ctx: Context,
    approval_id: int,
    who: Principal,
    *,
    approve: bool,
    via: DecisionChannel,
    reason: str | None = None,
) -> Decision:
    """Approve or reject as ``who``; refused (and nothing changes) for a decided approval,
    someone without the approve grant there, one's own request (``forbid_self_approval``), a
    suspension, a freeze, or the concurrency cap."""
    approval = records.approval(session, approval_id, lock=True)
    if approval.state == ApprovalState.PENDING.value and approval.expires_at <= ctx.clock.now():
        expire(session, ctx, approval)
    if approval.state != ApprovalState.PENDING.value:
        raise AlreadyDecidedError(_describe(approval))
    approving.check_decider(
        who,
        approval.requested_by,
        policies.load(session),
        principals.where(approval.environment),
        approve=approve,
        deciders=principals.deciders(session, approval.environment),
    )
    decider = who.name
    decision = Decision(approval)
    if not approve:
        approvals.close(
            session,
            ctx.clock,
            approval,
            ApprovalState.REJECTED,
            actor=decider,
            via=via,
            reason=reason,
        )
        _reject_target(session, ctx, approval, decider, reason)
        return decision
    env = approval.environment
    is_changeset = approval.target == ApprovalTarget.CHANGESET.value
    kind = None if is_changeset else DeploymentKind(approval.kind)
    if kind is not DeploymentKind.ROLLBACK:  # a rollback stays allowed while suspended
        guards.check_suspended(env)  # nothing else is applied; the approval stays pending
    guards.check_freeze(session, ctx.clock, env, kind)
    targets = _gated_deployments(session, approval)
    ending = [d.id for t in targets for d in queueing.would_end(session, t)]
    guards.check_concurrency(session, env.project, [t.unit_id for t in targets], ending)
    approvals.close(
        session, ctx.clock, approval, ApprovalState.APPROVED, actor=decider, via=via, reason=reason
    )
    if is_changeset:
        decision.ended = applying.complete(
            session, ctx, records.changeset(session, approval.target_id), actor=decider
        )
    else:
        deployment = session.get(schema.Deployment, approval.target_id)
        assert deployment is not None
        decision.ended = starting.start(session, ctx.clock, deployment, decider)
    return decision


def _gated_deployments(session: Session, approval: schema.Approval) -> list[schema.Deployment]:
    if approval.target == ApprovalTarget.CHANGESET.value:
        found = changesets.deployments_of(session, approval.target_id)
    else:
        one = session.get(schema.Deployment, approval.target_id)
        found = [one] if one is not None else []
    return [d for d in found if d.state == DeploymentState.AWAITING_APPROVAL.value]


def _reject_target(
    session: Session, ctx: Context, approval: schema.Approval, actor: str, reason: str | None
) -> None:
    message = f"Rejected by {actor}" + (f": {reason}" if reason else "")
    for deployment in _gated_deployments(session, approval):
        recording.move(session, ctx.clock, deployment, Trigger.REJECT, message=message, actor=actor)
    if approval.target == ApprovalTarget.CHANGESET.value:
        changeset = records.changeset(session, approval.target_id)
        changesets.move(
            session, ctx.clock, changeset, ChangeSetState.REJECTED, message, actor=actor
        )


def expire(session: Session, ctx: Context, approval: schema.Approval) -> None:
    """Nobody decided in time: the approval ends ``expired``, what it gated ``cancelled`` (a
    change set, which has no cancelled state, ends ``discarded``)."""
    ttl = format_duration(ctx.settings.approval_ttl)
    note = f"Approval expired after {ttl} without a decision"
    approvals.close(
        session,
        ctx.clock,
        approval,
        ApprovalState.EXPIRED,
        actor=None,
        via=DecisionChannel.EXPIRY,
        reason=note,
    )
    for deployment in _gated_deployments(session, approval):
        recording.move(session, ctx.clock, deployment, Trigger.EXPIRE, message=note)
    if approval.target == ApprovalTarget.CHANGESET.value:
        changeset = records.changeset(session, approval.target_id)
        if changesets.is_open(changeset):
            changesets.move(
                session, ctx.clock, changeset, ChangeSetState.DISCARDED, note, actor=None
            )
            changesets.drop_drafted_units(session, ctx.clock, changeset, actor=None)


def expire_due(session: Session, ctx: Context) -> list[schema.Approval]:
    due = approvals.due(session, ctx.clock)
    for approval in due:
        expire(session, ctx, approval)
    return due
