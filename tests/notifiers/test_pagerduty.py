"""PagerDuty Events API v2 against a local server recording requests (NEBULA_PAGERDUTY_URL):
a failure triggers an ``error`` alert keyed ``nebula/<project>/<environment>/<service>``, the
service's next healthy deployment resolves it (and only then), other listed events trigger
``info`` alerts that their end resolves, and an outage of PagerDuty delays, never loses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from notifiers import outbox
from reconciler.admin import principals
from reconciler.core.states import DecisionChannel
from reconciler.requests import deciding
from tests.notifiers import channelkit
from tests.notifiers.flows import Flow, image, nebula_toml
from tests.notifiers.test_flows import with_faults
from tests.plugins.receivers import Answer, Receiver

KEY = "R0123456789ABCDEF0123456789ABCDE"
OTHER_KEY = "ZZZZ456789ABCDEF0123456789ABCDEF"
# The fields of Events API v2 (developer.pagerduty.com/docs/events-api-v2/trigger-events).
TRIGGER = {"routing_key", "event_action", "dedup_key", "payload", "links", "client", "client_url"}
PAYLOAD = {"summary", "source", "severity", "timestamp", "component", "group", "class",
           "custom_details"}  # fmt: skip


def _pagerduty(flow: Flow, receiver: Receiver) -> None:
    flow.ctx.settings = flow.ctx.settings.with_(pagerduty_url=receiver.base_url)


def _events(receiver: Receiver) -> list[dict[str, Any]]:
    assert all(r.path == "/v2/enqueue" for r in receiver.received)
    assert all(r.headers["content-type"] == "application/json" for r in receiver.received)
    return [r.json for r in receiver.received]


def _brief(event: dict[str, Any]) -> tuple[str, str, str | None]:
    return event["event_action"], event["dedup_key"], event.get("payload", {}).get("severity")


def test_a_failure_triggers_an_alert_and_the_next_healthy_deployment_resolves_it(
    flow: Flow, receiver: Receiver, tmp_path: Path
) -> None:
    _pagerduty(flow, receiver)
    flow.project(text=nebula_toml(1))
    channelkit.add(flow.ctx, "pagerduty", KEY, on="failure", project="shop", environment="staging")
    with_faults(flow, tmp_path, {image("api", 2): "image-pull", image("api", 3): "image-pull"})
    flow.reconcile()
    flow.deliver()
    assert receiver.received == []  # healthy deployments with no alert open: nothing
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    (trigger,) = _events(receiver)
    assert set(trigger) == TRIGGER and set(trigger["payload"]) == PAYLOAD
    failed = next(d for d in flow.deployments("staging") if d["state"] == "failed")
    assert trigger["routing_key"] == KEY
    assert _brief(trigger) == ("trigger", "nebula/shop/staging/api", "error")
    payload = trigger["payload"]
    assert payload["summary"] == (
        f"shop/staging: api r-2 failed (image-pull): {failed['message']} (r-1 keeps serving)"
    )
    assert (payload["source"], payload["component"], payload["group"], payload["class"]) == (
        "shop-staging", "api", "shop/staging", "image-pull",
    )  # fmt: skip
    assert payload["custom_details"]["blocker"] == "image-pull"
    assert payload["custom_details"]["keeps_serving"] == "r-1"
    url = f"https://nebula.example.com/deployments/{failed['id']}"
    assert trigger["links"] == [{"href": url, "text": f"Deployment #{failed['id']} on Nebula"}]
    assert trigger["client_url"] == "https://nebula.example.com"

    flow.push(nebula_toml(3), "Still a bad api image")  # a second failure joins the open alert
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    flow.push(nebula_toml(4), "A good api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    assert [_brief(e) for e in _events(receiver)] == [
        ("trigger", "nebula/shop/staging/api", "error"),
        ("trigger", "nebula/shop/staging/api", "error"),
        ("resolve", "nebula/shop/staging/api", None),
    ]
    assert _events(receiver)[-1] == {
        "routing_key": KEY, "event_action": "resolve", "dedup_key": "nebula/shop/staging/api",
    }  # fmt: skip
    flow.push(nebula_toml(5), "Another good api image")  # healthy again: nothing is open
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    assert len(receiver.received) == 3


def test_other_events_are_info_alerts_only_when_listed_and_their_end_resolves_them(
    flow: Flow, receiver: Receiver
) -> None:
    _pagerduty(flow, receiver)
    flow.member("bob", "admin")
    flow.project(text=nebula_toml(1, staging=False))
    channelkit.add(flow.ctx, "pagerduty", KEY, on="approval")
    channelkit.add(flow.ctx, "pagerduty", OTHER_KEY)  # failures, approvals and drift
    channelkit.add(flow.ctx, "pagerduty", KEY, on="failure,healthy")  # healthy: not an alert
    flow.reconcile()
    flow.deliver()
    with flow.ctx.db.transaction() as session:
        deciding.decide(
            session, flow.ctx, 1, principals.by_name(session, "bob"), approve=True,
            via=DecisionChannel.CLI,
        )  # fmt: skip
    flow.reconcile()
    flow.deliver()
    sent = [(e["routing_key"][:4], *_brief(e)) for e in _events(receiver)]
    assert sent == [
        ("R012", "trigger", "nebula/shop/production/approval-1", "info"),
        ("ZZZZ", "trigger", "nebula/shop/production/approval-1", "info"),
        ("R012", "resolve", "nebula/shop/production/approval-1", None),
        ("ZZZZ", "resolve", "nebula/shop/production/approval-1", None),
    ]
    request = _events(receiver)[0]
    assert request["payload"]["summary"] == (
        "shop/production: approval needed for db r-1, api r-1 (requested by project:shop)"
    )
    assert request["links"][0]["href"] == "https://nebula.example.com/approvals#approval-1"


def test_an_outage_of_pagerduty_delays_the_alert_and_keeps_its_key(
    flow: Flow, receiver: Receiver, tmp_path: Path
) -> None:
    _pagerduty(flow, receiver)
    flow.project(text=nebula_toml(1))
    channelkit.add(flow.ctx, "pagerduty", KEY, on="failure")
    with_faults(flow, tmp_path, {image("api", 2): "image-pull"})
    flow.reconcile()
    receiver.answer(Answer(status=429, retry_after="60"), Answer(status=500))
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.clock.advance(seconds=20)
    flow.deliver()  # the default Slack channel's notices go; PagerDuty says 429
    assert len(receiver.received) == 1
    flow.clock.advance(seconds=59)
    assert flow.deliver() == 0 and len(receiver.received) == 1  # Retry-After: 60
    flow.clock.advance(seconds=1)
    assert flow.deliver() == 0 and len(receiver.received) == 2  # the 500
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    assert flow.deliver() == 1 and len(receiver.received) == 3
    assert {_brief(e) for e in _events(receiver)} == {
        ("trigger", "nebula/shop/staging/api", "error")
    }
    assert len({r.body for r in receiver.received}) == 1
