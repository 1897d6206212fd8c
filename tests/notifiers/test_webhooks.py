"""Webhooks signed per Standard Webhooks: every delivery of a whole flow checks out with the
reference library's own ``Webhook.verify``; the body is ``{"type", "timestamp", "data"}``
with the spec's type names; a retry keeps its ``webhook-id`` and is signed afresh; a changed
body, another secret or a replay long after is refused by the library."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from notifiers import outbox
from reconciler.admin import principals
from reconciler.core.states import DecisionChannel
from reconciler.requests import deciding
from reconciler.runtimes import tampering
from tests.notifiers import channelkit
from tests.notifiers.flows import Flow, image, nebula_toml
from tests.notifiers.test_flows import with_faults
from tests.plugins.receivers import Answer, Receiver

EVERYTHING = "approval,failure,drift,healthy,blocked"


def _decide(flow: Flow, approval_id: int) -> None:
    with flow.ctx.db.transaction() as session:
        deciding.decide(
            session, flow.ctx, approval_id, principals.by_name(session, "bob"),
            approve=True, via=DecisionChannel.CLI,
        )  # fmt: skip


def _verified(receiver: Receiver) -> list[dict[str, Any]]:
    """Every delivery so far, as the library returned it when it verified it on arrival."""
    checked = [r.checked for r in receiver.received]
    assert all(isinstance(c, dict) for c in checked), checked
    return checked


def test_every_event_of_a_flow_arrives_signed_with_its_type_and_data(
    flow: Flow, receiver: Receiver, tmp_path: Path
) -> None:
    flow.member("bob", "admin")
    flow.project(text=nebula_toml(1))
    _, secret = channelkit.add(flow.ctx, "webhook", receiver.url(), on=EVERYTHING)
    assert secret is not None
    channelkit.verifying(receiver, {"/hook": secret}, flow.clock)
    flow.reconcile()
    flow.deliver()
    _decide(flow, 1)
    flow.reconcile()
    flow.deliver()
    cluster = flow.ctx.clusters.simulated()
    tampering.edit(cluster, "shop-staging", "StatefulSet/db", "spec.replicas", 0)
    flow.clock.advance(minutes=3)
    flow.reconcile()
    tampering.edit(cluster, "shop-staging", "StatefulSet/db", "spec.replicas", 1)
    flow.clock.advance(minutes=3)
    flow.reconcile()
    flow.deliver()
    with_faults(flow, tmp_path, {image("api", 2): "image-pull"})
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.clock.advance(seconds=120)
    flow.clock.advance(hours=25)  # production's second request expires
    flow.reconcile()
    bad = flow.push(nebula_toml(2).replace('engine = "postgres"', "engine = 5"), "Broken")
    flow.reconcile()
    flow.deliver()

    got = receiver.received
    bodies = _verified(receiver)
    assert [b["type"] for b in bodies] == [
        "approval.requested", "deployment.healthy", "deployment.healthy", "approval.decided",
        "deployment.healthy", "deployment.healthy", "drift.started", "drift.cleared",
        "approval.requested", "deployment.failed", "approval.expired", "project.blocked",
    ]  # fmt: skip
    assert all(set(b) == {"type", "timestamp", "data"} for b in bodies)
    by_type = {str(b["type"]): b for b in bodies}
    assert by_type["deployment.failed"]["data"] == {
        "deployment_id": 5, "project": "shop", "environment": "staging", "service": "api",
        "release": "r-2", "kind": "deploy", "blocker": "image-pull",
        "message": by_type["deployment.failed"]["data"]["message"],  # type: ignore[index]
        "keeps_serving": "r-1", "url": "https://nebula.example.com/deployments/5",
    }  # fmt: skip
    requested = by_type["approval.requested"]["data"]
    assert isinstance(requested, dict)
    assert (requested["approval_id"], requested["state"], requested["url"]) == (
        2, "pending", "https://nebula.example.com/approvals#approval-2",
    )  # fmt: skip
    assert by_type["approval.decided"]["data"]["decided_by"] == "bob"  # type: ignore[index]
    assert by_type["approval.expired"]["data"]["state"] == "expired"  # type: ignore[index]
    drift = by_type["drift.started"]["data"]
    assert drift["differences"] == ["StatefulSet/db spec.replicas: 0 (r-1: 1)"]  # type: ignore[index]
    assert by_type["drift.cleared"]["data"] == {
        "project": "shop", "environment": "staging", "service": "db", "release": "r-1",
        "url": "https://nebula.example.com/projects/shop#staging",
    }  # fmt: skip
    blocked = by_type["project.blocked"]["data"]
    assert (blocked["blocker"], blocked["commit"]) == ("configuration", bad)  # type: ignore[index]
    # The body's timestamp is when it happened; webhook-timestamp, when it was sent.
    stamps = [
        (b["timestamp"], r.headers["webhook-timestamp"]) for b, r in zip(bodies, got, strict=True)
    ]
    assert stamps[:2] == [
        ("2026-01-05T12:00:00Z", "1767614433"),
        ("2026-01-05T12:00:15Z", "1767614433"),
    ]
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert len(set(ids)) == len(ids) and all(i.startswith("msg_") for i in ids)


def test_a_retry_keeps_its_id_and_is_signed_again_at_its_own_time(
    flow: Flow, receiver: Receiver
) -> None:
    flow.project(text=nebula_toml(1, staging=False))
    _, secret = channelkit.add(flow.ctx, "webhook", receiver.url(), on="approval")
    assert secret is not None
    receiver.answer(Answer(status=500), Answer(drop=True))
    flow.reconcile()
    flow.deliver()
    for wait in (5, 10):
        flow.clock.advance(seconds=wait)
        flow.deliver()
    first, second, third = receiver.received
    assert (
        first.headers["webhook-id"] == second.headers["webhook-id"] == third.headers["webhook-id"]
    )
    stamps = [int(r.headers["webhook-timestamp"]) for r in (first, second, third)]
    assert stamps[1] - stamps[0] == 5 and stamps[2] - stamps[1] == 10
    assert first.body == third.body
    assert first.headers["webhook-signature"] != third.headers["webhook-signature"]
    with channelkit.clock_of_the_receiver(flow.clock):
        assert Webhook(secret).verify(third.body, third.headers)["type"] == "approval.requested"
    with (
        pytest.raises(WebhookVerificationError, match="Message timestamp too old"),
        channelkit.clock_of_the_receiver(flow.clock),
    ):
        Webhook(secret).verify(first.body, first.headers)  # 15s late: fine ...
        flow.clock.advance(minutes=6)
        Webhook(secret).verify(first.body, first.headers)  # ... 6 minutes: a replay
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    assert flow.deliver() == 0 and len(receiver.received) == 3


def test_a_changed_body_or_another_secret_does_not_verify(
    flow: Flow, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    flow.project(text=nebula_toml(1, staging=False))
    _, secret = channelkit.add(flow.ctx, "webhook", receiver.url(), on="approval")
    _, other = channelkit.add(flow.ctx, "webhook", receiver.url("/other"), on="approval")
    assert secret is not None and other is not None and secret != other
    flow.reconcile()
    flow.deliver()
    mine, theirs = receiver.received
    assert channelkit.verify(mine, secret, flow.clock)["type"] == "approval.requested"
    assert channelkit.verify(theirs, other, flow.clock)["type"] == "approval.requested"
    tampered = mine.body.replace(b'"pending"', b'"approved"')
    assert tampered != mine.body
    for body, key in ((tampered, secret), (mine.body, other)):
        with (
            pytest.raises(WebhookVerificationError, match="No matching signature found"),
            channelkit.clock_of_the_receiver(flow.clock),
        ):
            Webhook(key).verify(body, mine.headers)
    assert secret not in caplog.text and other not in caplog.text
