"""Webhooks signed per the Standard Webhooks specification (https://www.standardwebhooks.com).

The body is ``{"type", "timestamp", "data"}`` with the types of behaviour.md; the headers are
``webhook-id`` (one per (channel, event): the same on every retry, so a receiver can drop a
repeat), ``webhook-timestamp`` (the attempt's, in seconds) and ``webhook-signature``
(``v1,`` and the base64 HMAC-SHA256 of ``id.timestamp.body`` keyed with the bytes of the
channel's ``whsec_`` secret). Pure: the time of the attempt is passed in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from notifiers.channels import SECRET_PREFIX
from notifiers.facts import (
    ApprovalRequest,
    Facts,
    Test,
)
from notifiers.keys import WebhookType
from reconciler.clock import utc


def message_id(key: str) -> str:
    """``msg_`` and a digest of the outbox key: the same for every attempt of one delivery."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()[:18]
    return "msg_" + base64.urlsafe_b64encode(digest).decode("ascii")


def body(kind: WebhookType, at: datetime, facts: Facts) -> bytes:
    document = {"type": kind.value, "timestamp": _iso(at), "data": data(facts, kind)}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def headers(msg_id: str, now: datetime, content: bytes, secret: str) -> dict[str, str]:
    stamp = str(int(now.timestamp()))
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": stamp,
        "webhook-signature": "v1," + sign(secret, msg_id, stamp, content),
    }


def sign(secret: str, msg_id: str, stamp: str, content: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{msg_id}.{stamp}.".encode() + content
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def data(facts: Facts, kind: WebhookType | None = None) -> dict[str, Any]:
    """The event's facts. An approval is read when the notice is sent, so a request sent
    after its decision (a receiver that was down) still says what was requested: pending."""
    if isinstance(facts, ApprovalRequest):
        if kind is WebhookType.APPROVAL_REQUESTED:
            facts = replace(facts, decision=None)
        return _approval(facts)
    if isinstance(facts, Test):
        return {"channel": facts.channel, "by": facts.by, "url": facts.url}
    document = dict(facts.to_payload())
    document["url"] = facts.url
    return document


def _approval(r: ApprovalRequest) -> dict[str, Any]:
    decision = r.decision
    return {
        "approval_id": r.approval_id,
        "project": r.project,
        "environment": r.environment,
        "state": r.state,
        "kind": r.kind,
        "target": r.target,
        "target_id": r.target_id,
        "requested_by": r.requested_by,
        "requested_at": _iso(r.requested_at),
        "expires_at": _iso(r.expires_at),
        "commit": r.commit.sha if r.commit is not None else None,
        "services": [
            {"service": s.service, "release": s.release, "kind": s.kind, "previous": s.previous}
            for s in r.services
        ],
        "decided_by": decision.by if decision is not None else None,
        "decided_at": _iso(decision.at) if decision is not None and decision.at else None,
        "reason": decision.reason if decision is not None else None,
        "url": r.page or r.url,
    }


def _iso(at: datetime) -> str:
    return utc(at).strftime("%Y-%m-%dT%H:%M:%SZ")
