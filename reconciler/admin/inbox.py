"""A member's inbox (behaviour.md "Notifications (1.2)"): the approvals they may decide while
pending, the decisions on their own requests, and the failures of deployments they asked for;
each read or unread.

The items are read, when the inbox is asked for, from the rows that caused them, the same
facts the notification channels are told of: a pending approval, a decided or expired one
(``approvals.requested_by`` is who asked: a change set's ``changeset apply``, a rollback, a
promote, a redeploy), a deployment ended ``failed`` (``deployments.requested_by``). So an item
exists exactly when its cause was committed, a decided approval leaves its deciders' inboxes
by itself, and who may decide is the rule deciding applies (``approving.may_decide``), with
each member's grants as they stand now. Only the read marks are stored (``InboxRead``).

An item's id says what it is about: ``approval-12`` (decide approval 12), ``decision-12`` (your
request, approval 12, was decided), ``failure-40`` (your deployment 40 failed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from notifiers.facts import approval_url, deployment_url
from reconciler.admin import policies, principals
from reconciler.admin.members import shown_actor
from reconciler.clock import Clock
from reconciler.core import approving
from reconciler.core.rights import Principal
from reconciler.core.states import (
    ApprovalState,
    ApprovalTarget,
    DecisionChannel,
    DeploymentState,
)
from reconciler.errors import ConfigurationError, NotFoundError
from reconciler.store import inserting, schema

KEPT = 100  # the newest decisions and failures an inbox shows (each)
DECIDED = (ApprovalState.APPROVED, ApprovalState.REJECTED, ApprovalState.EXPIRED)
ID_PATTERN = r"^(approval|decision|failure)-[0-9]{1,18}$"
_ID = re.compile(ID_PATTERN)


class ItemKind(StrEnum):
    APPROVAL = "approval"  # pending, and this member may decide it
    DECISION = "decision"  # this member's request was approved, rejected, or expired
    FAILURE = "failure"  # a deployment this member asked for ended failed


@dataclass(frozen=True)
class Item:
    id: str
    kind: ItemKind
    project: str
    environment: str
    service: str | None
    summary: str
    link: str
    created_at: datetime
    approval_id: int | None
    deployment_id: int | None
    read: bool = False
    project_id: int = 0


def parse_id(text: str) -> str:
    if not _ID.match(text):
        raise ConfigurationError(
            f"{text!r} is not an inbox item",
            hint="items are named like approval-12, decision-12 or failure-40: nebula inbox "
            "lists them",
        )
    return text


def items(session: Session, clock: Clock, public_url: str, who: Principal) -> list[Item]:
    """``who``'s inbox, newest first."""
    found = [
        *_to_decide(session, clock, public_url, who),
        *_decisions(session, public_url, who.name),
        *_failures(session, public_url, who.name),
    ]
    keys = [item.id for item in found]
    read = set(
        session.scalars(
            select(schema.InboxRead.item).where(
                schema.InboxRead.member == who.name, schema.InboxRead.item.in_(keys)
            )
        )
    )
    found = [replace(item, read=item.id in read) for item in found]
    return sorted(found, key=lambda item: (item.created_at, item.id), reverse=True)


def mark_read(
    session: Session, clock: Clock, who: Principal, listed: list[Item], item_id: str | None
) -> list[Item]:
    """Mark one item of ``listed`` (``who``'s inbox) read, or every unread one (``item_id``
    None); returns those that were unread. One that is not in the inbox is ``NotFoundError``."""
    if item_id is None:
        chosen = [item for item in listed if not item.read]
    else:
        chosen = [item for item in listed if item.id == item_id]
        if not chosen:
            raise NotFoundError(
                f"No item {item_id} in the inbox of {who.name}",
                hint="nebula inbox lists them (a decided approval leaves its deciders' inboxes)",
            )
        chosen = [item for item in chosen if not item.read]
    for item in chosen:  # (marked read at once elsewhere too: then it stays marked once)
        inserting.add_new(
            session, schema.InboxRead, ["member", "item"],
            member=who.name, item=item.id, project_id=item.project_id, read_at=clock.now(),
        )  # fmt: skip
    return chosen


def _to_decide(session: Session, clock: Clock, public_url: str, who: Principal) -> list[Item]:
    pending = session.scalars(
        select(schema.Approval)
        .where(
            schema.Approval.state == ApprovalState.PENDING.value,
            schema.Approval.expires_at > clock.now(),
        )
        .order_by(schema.Approval.id)
    ).all()
    if not pending:
        return []
    rules = policies.load(session)
    found = []
    for approval in pending:
        where = principals.where(approval.environment)
        if not approving.may_decide(who, approval.requested_by, rules, where):
            continue
        what, service = _what(session, approval)
        asked = shown_actor(approval.requested_by)
        summary = f"{what[0].upper()}{what[1:]} in {where} waits for your approval"
        summary += f" (requested by {asked})"
        found.append(_item(ItemKind.APPROVAL, approval, service, summary, public_url))
    return found


def _decisions(session: Session, public_url: str, name: str) -> list[Item]:
    """Decided by someone else (or by nobody in time): not one's own decision, nor a rule's."""
    A = schema.Approval
    newest = (A.decided_at.desc(), A.id.desc())
    found = []
    for approval in _newest(
        session, A, newest,
        A.requested_by == name,
        A.state.in_([s.value for s in DECIDED]),
        A.decided_via.is_distinct_from(DecisionChannel.RULE.value),
        A.decided_by.is_distinct_from(name),
    ):  # fmt: skip
        what, service = _what(session, approval)
        where = principals.where(approval.environment)
        if approval.state == ApprovalState.EXPIRED.value:
            outcome = "expired without a decision"
        else:
            outcome = f"was {approval.state} by {approval.decided_by}"
            outcome += f": {approval.reason}" if approval.reason else ""
        summary = f"Your {what} in {where} {outcome}"
        found.append(_item(ItemKind.DECISION, approval, service, summary, public_url))
    return found


def _failures(session: Session, public_url: str, name: str) -> list[Item]:
    D = schema.Deployment
    found = []
    failed = D.state == DeploymentState.FAILED.value
    for d in _newest(session, D, (D.id.desc(),), D.requested_by == name, failed):
        env = d.environment
        where = principals.where(env)
        blocker = f" ({d.blocker})" if d.blocker else ""
        said = f": {d.message}" if d.message else ""
        what = f"{d.kind} of {d.unit.name} {d.release.name}"
        summary = f"Your {what} in {where} failed{blocker}{said}"
        found.append(
            Item(
                id=f"{ItemKind.FAILURE.value}-{d.id}",
                kind=ItemKind.FAILURE,
                project=env.project.slug,
                environment=env.name,
                service=d.unit.name,
                summary=summary,
                link=deployment_url(public_url, d.id),
                created_at=d.finished_at or d.created_at,
                approval_id=None,
                deployment_id=d.id,
                project_id=d.project_id,
            )
        )
    return found


Row = TypeVar("Row", schema.Approval, schema.Deployment)


def _newest(
    session: Session, model: type[Row], order: tuple[Any, ...], *where: Any
) -> Sequence[Row]:
    """The newest ``KEPT`` rows of ``model`` that match (a member's own requests)."""
    return session.scalars(select(model).where(*where).order_by(*order).limit(KEPT)).all()


def _what(session: Session, approval: schema.Approval) -> tuple[str, str | None]:
    """What an approval gates, as the summary names it, and its service (a deployment's)."""
    if approval.target == ApprovalTarget.CHANGESET.value:
        return f"change set {approval.target_id}", None
    deployment = session.get(schema.Deployment, approval.target_id)
    if deployment is None:
        return f"{approval.kind} (deployment {approval.target_id})", None
    service = deployment.unit.name
    return f"{deployment.kind} of {service} {deployment.release.name}", service


def _item(
    kind: ItemKind, approval: schema.Approval, service: str | None, summary: str, public_url: str
) -> Item:
    env = approval.environment
    at = approval.created_at if kind is ItemKind.APPROVAL else approval.decided_at
    return Item(
        id=f"{kind.value}-{approval.id}",
        kind=kind,
        project=env.project.slug,
        environment=env.name,
        service=service,
        summary=summary,
        link=approval_url(public_url, approval.id),
        created_at=at or approval.created_at,
        approval_id=approval.id,
        deployment_id=approval.target_id if service is not None else None,
        project_id=approval.project_id,
    )
