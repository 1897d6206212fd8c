"""One outbox carries every channel: each notice goes to the channels whose scope holds it and
whose events list it, once per (channel, event), with retries; a channel that is down never
holds a deployment or another channel; each channel keeps its last delivery and last error;
/metrics counts the attempts by channel kind and outcome."""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from notifiers import keys, outbox, routing
from notifiers.keys import Kind
from reconciler.admin import channels, principals
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.core.states import DecisionChannel
from reconciler.requests import deciding
from reconciler.store import schema
from reconciler.web.metrics import Metrics
from tests.notifiers import channelkit
from tests.notifiers.flows import Flow, image, nebula_toml
from tests.notifiers.test_flows import with_faults
from tests.plugins.receivers import Answer, Receiver
from tests.plugins.slack import SlackServer
from tests.store.rows import project_and_environment

FAILURE = {
    "deployment_id": 41,
    "project": "shop",
    "environment": "production",
    "service": "api",
    "release": "r-8",
    "kind": "deploy",
    "blocker": "readiness",
    "message": "api r-8 was not ready within 5m. r-7 keeps serving.",
    "keeps_serving": "r-7",
}


def test_each_notice_goes_to_the_channels_whose_scope_and_events_take_it(
    flow: Flow, receiver: Receiver, slack_server: SlackServer, tmp_path: Path, refused_url: str
) -> None:
    flow.member("bob", "admin")
    flow.project(text=nebula_toml(1))
    ctx = flow.ctx
    channelkit.add(ctx, "webhook", receiver.url("/org"))
    channelkit.add(ctx, "webhook", receiver.url("/staging"), on="healthy", project="shop",
                   environment="staging")  # fmt: skip
    channelkit.add(ctx, "webhook", receiver.url("/production"), on="failure,healthy",
                   project="shop", environment="production")  # fmt: skip
    channelkit.add(ctx, "webhook", receiver.url("/blocked"), on="blocked")
    down, _ = channelkit.add(ctx, "webhook", refused_url, on="approval,failure,healthy")
    for _ in range(2):
        flow.reconcile()
        flow.deliver()
    (approval,) = flow.approvals()
    with ctx.db.transaction() as session:
        deciding.decide(
            session, ctx, int(approval["id"]), principals.by_name(session, "bob"),
            approve=True, via=DecisionChannel.CLI,
        )  # fmt: skip
    flow.reconcile()
    flow.deliver()
    with_faults(flow, tmp_path, {image("api", 2): "image-pull"})
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)

    # The channel that refuses every connection held back no deployment.
    states = [(d["environment"], d["service"], d["state"]) for d in flow.deployments()]
    assert states == [
        ("staging", "db", "healthy"), ("staging", "api", "healthy"),
        ("production", "db", "healthy"), ("production", "api", "healthy"),
        ("staging", "api", "failed"), ("production", "api", "awaiting-approval"),
    ]  # fmt: skip
    got = receiver.received
    assert channelkit.types(got, "/org") == [
        "approval.requested", "approval.decided", "approval.requested", "deployment.failed",
    ]  # fmt: skip
    assert channelkit.types(got, "/staging") == ["deployment.healthy", "deployment.healthy"]
    assert channelkit.types(got, "/production") == ["deployment.healthy", "deployment.healthy"]
    assert channelkit.types(got, "/blocked") == []
    healthy = [r.json["data"] for r in got if r.path == "/production"]
    assert [(d["service"], d["environment"], d["release"]) for d in healthy] == [
        ("db", "production", "r-1"), ("api", "production", "r-1"),
    ]  # fmt: skip
    # The default Slack channel was sent what it always was, and nothing more.
    assert [m["text"].split(":")[0] for m in slack_server.messages.values()] == [
        "Approved", "Approval needed", "shop/staging",
    ]  # fmt: skip
    delivered, error = channelkit.record(ctx, down)
    assert delivered is None
    assert error is not None and error.startswith("the webhook cannot be reached")


def _failures(ctx: Context, *ids: int) -> None:
    with ctx.db.transaction() as session:
        project, _ = project_and_environment(session, ctx.clock)
        for n in ids:
            routing.fan_out(
                session, ctx.clock, keys.deployment_failed(n), Kind.DEPLOYMENT_FAILED,
                {**FAILURE, "deployment_id": n}, project_id=project.id, environment="production",
            )  # fmt: skip


def _count(metrics: Metrics, kind: str, outcome: str) -> float:
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name == "nebula_notifications_total" and sample.labels == {
                "channel_kind": kind,
                "outcome": outcome,
            }:
                return sample.value
    return 0.0


def test_a_channel_that_is_down_waits_alone_and_every_notice_arrives_once(
    ctx: Context, clock: FakeClock, receiver: Receiver, refused_url: str
) -> None:
    limited = Receiver()
    broken = Receiver()
    try:
        fine, _ = channelkit.add(ctx, "webhook", receiver.url("/fine"))
        refused, _ = channelkit.add(ctx, "webhook", refused_url)
        erring, _ = channelkit.add(ctx, "webhook", broken.url("/500"))
        busy, _ = channelkit.add(ctx, "webhook", limited.url("/429"))
        broken.outage(Answer(status=500))
        limited.answer(Answer(status=429, retry_after="120"))
        _failures(ctx, 1, 2, 3)
        metrics = Metrics(ctx)
        assert outbox.deliver_due(ctx, observe=metrics.notified) == 3  # the fine channel's
        assert [r.json["data"]["deployment_id"] for r in receiver.received] == [1, 2, 3]
        # Each troubled channel was tried once, then passed over for the round.
        assert (len(broken.received), len(limited.received)) == (1, 1)
        assert channelkit.record(ctx, fine) == (clock.now(), None)
        assert channelkit.record(ctx, refused)[1] == (
            "the webhook cannot be reached ([Errno 111] Connection refused)"
        )
        assert channelkit.record(ctx, erring)[1] == "the webhook answered HTTP 500"
        assert channelkit.record(ctx, busy)[1] == (
            "the webhook rate-limited the notice: retry after 120s"
        )
        assert (_count(metrics, "webhook", "delivered"), _count(metrics, "webhook", "failed")) == (
            3.0, 3.0,
        )  # fmt: skip
        # Their rows wait with them: 5s for the refused and the 500, 120s for the 429.
        clock.advance(seconds=5)
        assert outbox.deliver_due(ctx) == 0
        assert (len(broken.received), len(limited.received)) == (2, 1)
        broken.restore()
        clock.advance(seconds=115)
        assert outbox.deliver_due(ctx) == 6  # the 500 channel's three, the 429 channel's three
        assert [r.json["data"]["deployment_id"] for r in limited.received] == [1, 1, 2, 3]
        # The same event is the same webhook-id on every attempt.
        assert len({r.headers["webhook-id"] for r in limited.received[:2]}) == 1
        clock.advance(seconds=outbox.MAX_RETRY)
        outbox.deliver_due(ctx)
        ids = [r.headers["webhook-id"] for r in (*receiver.received, *broken.received[2:])]
        assert len(ids) == len(set(ids)) == 6  # delivered ones never again
    finally:
        limited.stop()
        broken.stop()


def test_concurrent_deliverers_deliver_each_channel_event_once(
    ctx: Context, receiver: Receiver
) -> None:
    for path in ("/a", "/b"):
        channelkit.add(ctx, "webhook", receiver.url(path))
    _failures(ctx, *range(1, 11))
    start = threading.Barrier(4)

    def deliver() -> None:
        start.wait()
        outbox.deliver_due(ctx)

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = sorted((r.path, r.json["data"]["deployment_id"]) for r in receiver.received)
    assert sent == sorted((p, n) for p in ("/a", "/b") for n in range(1, 11))


def test_a_removed_channel_takes_its_waiting_notices_with_it(
    ctx: Context, clock: FakeClock, refused_url: str, receiver: Receiver
) -> None:
    gone, _ = channelkit.add(ctx, "webhook", refused_url)
    channelkit.add(ctx, "webhook", receiver.url())
    _failures(ctx, 1)
    outbox.deliver_due(ctx)
    with ctx.db.transaction() as session:
        assert channels.remove(session, channels.get(session, gone)) == 1
    clock.advance(seconds=outbox.MAX_RETRY)
    assert outbox.deliver_due(ctx) == 0
    with ctx.db.reading() as session:
        assert outbox.pending(session) == 0


def test_a_notice_recorded_twice_fans_out_once(ctx: Context, receiver: Receiver) -> None:
    channelkit.add(ctx, "webhook", receiver.url())
    _failures(ctx, 7)
    with ctx.db.transaction() as session:  # the same cause again (a retried transaction)
        project = session.get(schema.Project, 1)
        assert project is not None
        recorded = routing.fan_out(
            session, ctx.clock, keys.deployment_failed(7), Kind.DEPLOYMENT_FAILED, FAILURE,
            project_id=project.id, environment="production",
        )  # fmt: skip
    assert recorded == 0
    assert outbox.deliver_due(ctx) == 1
    assert len(receiver.received) == 1


def test_a_slack_channel_gets_its_own_request_and_its_decision_edits_that_message(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.member("bob", "admin", "U2")
    flow.project(text=nebula_toml(staging=False))
    channelkit.add(flow.ctx, "slack", "C0DEPLOYS1", on="approval", project="shop")
    flow.reconcile()
    assert flow.deliver() == 2  # the default channel's request, and the channel's
    with flow.ctx.db.transaction() as session:
        deciding.decide(
            session, flow.ctx, 1, principals.by_name(session, "bob"), approve=True,
            via=DecisionChannel.CLI,
        )  # fmt: skip
    assert flow.deliver() == 2
    messages = {channel: m for (channel, _), m in slack_server.messages.items()}
    assert set(messages) == {"C0NEBULA01", "C0DEPLOYS1"}
    for message in messages.values():  # each edited in place: no second message
        assert message["blocks"][0]["text"]["text"] == "Approved: shop/production"
    assert sorted(u.args["channel"] for u in slack_server.updates) == ["C0DEPLOYS1", "C0NEBULA01"]
    assert [r.key for r in flow.outbox() if r.channel_id is not None] == [
        "approval-request:1@channel-1",
        "approval-update:1@channel-1",
    ]
