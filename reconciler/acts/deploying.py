"""What people ask of deployments: decide an approval, roll back, promote, redeploy, cancel,
apply or discard a change set, suspend and resume. Each acts as the caller: the deploy and
approve grants are checked where the request is made (``requests``, shared with Slack's
buttons), so every door refuses the same things with the same words.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from reconciler import views
from reconciler.acts.calls import Call, Document
from reconciler.admin import principals
from reconciler.context import Context
from reconciler.core import rights
from reconciler.core.rights import Principal
from reconciler.core.states import DecisionChannel, GrantKind
from reconciler.errors import RefusedError
from reconciler.requests import actions, applying, changesets, deciding, records, suspending


def _act(call: Call, act: Callable[[Session, Context, Principal], Document]) -> Document:
    """Act as the caller in one transaction, then wake the tick."""
    with call.ctx.db.transaction() as session:
        data = act(session, call.ctx, call.who)
    call.wake()
    return data


def _channel(call: Call) -> DecisionChannel:
    return DecisionChannel.CLI if call.caller.local else DecisionChannel.API


def _requested(result: actions.Requested) -> Document:
    return {
        "deployment": views.deployment(result.deployment),
        "approval": views.approval(result.approval) if result.approval else None,
        "ended": views.ended(result.ended),
        "already_requested": result.repeated,
    }


def _decide(call: Call, *, approve: bool) -> Document:
    approval_id = call.id("approval_id", "approval")
    reason = call.maybe("reason")

    def decide(session: Session, ctx: Context, who: Principal) -> Document:
        decision = deciding.decide(
            session, ctx, approval_id, who, approve=approve, via=_channel(call), reason=reason
        )
        return {"approval": views.approval(decision.approval), "ended": views.ended(decision.ended)}

    return _act(call, decide)


def approve(call: Call) -> Document:
    return _decide(call, approve=True)


def reject(call: Call) -> Document:
    return _decide(call, approve=False)


def rollback(call: Call) -> Document:
    slug, service = call.param("slug"), call.param("service")
    env, to = call.text("environment"), call.maybe("to")
    return _act(
        call,
        lambda s, c, who: _requested(actions.rollback(s, c, slug, service, env, to, who)),
    )


def promote(call: Call) -> Document:
    slug, service = call.param("slug"), call.param("service")
    source, target, skip = call.text("from"), call.text("to"), call.flag("skip_gate")
    return _act(
        call,
        lambda s, c, who: _requested(
            actions.promote(s, c, slug, service, source, target, who, skip_gate=skip)
        ),
    )


def redeploy(call: Call) -> Document:
    slug, service, env = call.param("slug"), call.param("service"), call.text("environment")
    return _act(call, lambda s, c, who: _requested(actions.redeploy(s, c, slug, service, env, who)))


def cancel(call: Call) -> Document:
    deployment_id = call.id("deployment_id", "deployment")
    return _act(
        call,
        lambda s, c, who: {
            "deployment": views.deployment(actions.cancel(s, c, deployment_id, who))
        },
    )


def apply_changeset(call: Call) -> Document:
    """Apply a draft, or ask for its approval. A refusal applying records (the change set's
    note: a freeze, drift, the cap) is kept, and still reaches the caller as a refusal."""
    changeset_id = call.id("changeset_id", "change set")
    message = call.maybe("message")

    def apply(session: Session, ctx: Context, who: Principal) -> Document:
        changeset = records.changeset(session, changeset_id)
        where = principals.where(changeset.environment)
        rights.require(who, GrantKind.DEPLOY, where, verb="apply change sets")
        result = applying.apply(session, ctx, changeset, requester=who.name, message=message)
        return {
            "changeset": views.changeset_of(session, changeset),
            "deployments": [views.deployment(d) for d in result.deployments],
            "ended": views.ended(result.ended),
            "refused": result.refused,
        }

    data = _act(call, apply)
    refused = data.pop("refused")
    if refused:
        raise RefusedError(f"Change set {changeset_id} not applied: {refused}")
    return data


def discard_changeset(call: Call) -> Document:
    changeset_id = call.id("changeset_id", "change set")

    def discard(session: Session, ctx: Context, who: Principal) -> Document:
        changeset = records.changeset(session, changeset_id)
        where = principals.where(changeset.environment)
        rights.require(who, GrantKind.DEPLOY, where, verb="discard change sets")
        changesets.discard(
            session, ctx.clock, changeset, f"Discarded by {who.name}", actor=who.name
        )
        return {"changeset": views.changeset_of(session, changeset)}

    return _act(call, discard)


def suspend(call: Call) -> Document:
    slug, env, reason = call.param("slug"), call.maybe("environment"), call.text("reason")
    return _act(
        call,
        lambda s, c, who: views.suspension_outcome(
            suspending.suspend(s, c, slug, env, reason, who)
        ),
    )


def resume(call: Call) -> Document:
    slug, env = call.param("slug"), call.maybe("environment")
    return _act(
        call, lambda s, c, who: views.suspension_outcome(suspending.resume(s, c, slug, env, who))
    )
