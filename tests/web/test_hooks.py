"""``POST /hooks/git/{project}``: signed push notifications poll at once; replays do nothing."""

from __future__ import annotations

import json

import httpx
import pytest

from reconciler.store import schema
from reconciler.web.hooks import signature
from tests.web.conftest import Shop
from tests.web.world import API_NEXT, eventually, shop_toml

SECRET = "hook-secret-5e1b"
PAYLOAD = json.dumps({"ref": "refs/heads/main", "after": "0" * 40}).encode()


def _changesets(live: httpx.Client) -> list[dict[str, object]]:
    return live.get("/api/v1/changesets?project=shop").json()["changesets"]  # type: ignore[no-any-return]


def _last_polled(live: httpx.Client) -> str:
    return live.get("/api/v1/projects/shop").json()["project"]["last_polled_at"]  # type: ignore[no-any-return]


def _deliveries(shop: Shop) -> list[str]:
    with shop.nebula.ctx.db.transaction() as session:
        return [d.delivery_id for d in session.query(schema.WebhookDelivery)]


def _hook(
    live: httpx.Client, *, delivery: str | None = "d-1", signed: str | None = None
) -> httpx.Response:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "push"}
    if delivery is not None:
        headers["X-GitHub-Delivery"] = delivery
    if signed is not None:
        headers["X-Hub-Signature-256"] = signed
    return live.post("/hooks/git/shop", content=PAYLOAD, headers=headers)


@pytest.fixture
def secured(shop: Shop) -> Shop:
    shop.nebula.ok(f"project set shop webhook_secret {SECRET}")
    return shop


def test_a_signed_notification_polls_the_project_at_once(secured: Shop, live: httpx.Client) -> None:
    before = len(_changesets(live))
    secured.push(shop_toml(api_image=API_NEXT), "New api image")

    answer = _hook(live, signed=signature(SECRET, PAYLOAD))

    assert answer.status_code == 202
    assert answer.json() == {"project": "shop", "delivery": "d-1", "status": "polling"}
    staged = eventually(lambda: _changesets(live)[before:], timeout=10, what="a change set staged")
    assert {c["message"] for c in staged} == {"New api image"}
    assert _deliveries(secured) == ["d-1"]


@pytest.mark.parametrize(
    "signed",
    [None, "sha256=" + "0" * 64, signature("another secret", PAYLOAD), "sha1=abc"],
    ids=["missing", "zeros", "other-secret", "sha1"],
)
def test_a_bad_signature_is_401_and_does_nothing(
    secured: Shop, live: httpx.Client, signed: str | None
) -> None:
    before = _last_polled(live)
    secured.nebula.clock.advance(30)
    secured.push(shop_toml(api_image=API_NEXT))

    answer = _hook(live, signed=signed)

    assert answer.status_code == 401
    assert answer.json()["error"] == {
        "code": "unauthorized",
        "message": "The X-Hub-Signature-256 signature does not match this project's webhook secret",
        "hint": "set the same secret on the git host and with: nebula project set shop webhook_secret",
    }
    assert _deliveries(secured) == []
    assert _last_polled(live) == before


def test_a_replayed_delivery_does_nothing(secured: Shop, live: httpx.Client) -> None:
    signed = signature(SECRET, PAYLOAD)
    settled = _last_polled(live)
    first = _hook(live, delivery="d-7", signed=signed)
    assert first.status_code == 202
    polled = eventually(lambda: _last_polled(live) != settled and _last_polled(live), what="polled")
    secured.nebula.clock.advance(30)
    count = len(_changesets(live))
    secured.push(shop_toml(api_image=API_NEXT))

    replay = _hook(live, delivery="d-7", signed=signed)

    assert replay.status_code == 200
    assert replay.json() == {"project": "shop", "delivery": "d-7", "status": "duplicate"}
    assert _last_polled(live) == polled
    assert len(_changesets(live)) == count
    assert _deliveries(secured) == ["d-7"]


def test_a_project_without_a_secret_takes_unsigned_notifications(
    shop: Shop, live: httpx.Client
) -> None:
    before = len(_changesets(live))
    shop.push(shop_toml(api_image=API_NEXT), "Unsigned")

    answer = _hook(live, delivery=None)

    assert answer.status_code == 202
    assert answer.json()["delivery"] is None
    eventually(lambda: _changesets(live)[before:], timeout=10, what="a change set staged")


def test_an_unknown_project_is_404(live: httpx.Client) -> None:
    answer = live.post("/hooks/git/nope", content=b"{}")

    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == "No project named 'nope'"


def test_notifications_are_counted_in_the_metrics(secured: Shop, live: httpx.Client) -> None:
    _hook(live, delivery="d-1", signed=signature(SECRET, PAYLOAD))
    _hook(live, delivery="d-1", signed=signature(SECRET, PAYLOAD))
    _hook(live, delivery="d-2", signed="sha256=bad")

    metrics = live.get("/metrics").text

    assert 'nebula_webhooks_total{outcome="polling",project="shop"} 1.0' in metrics
    assert 'nebula_webhooks_total{outcome="duplicate",project="shop"} 1.0' in metrics
    assert 'nebula_webhooks_total{outcome="unauthorized",project="shop"} 1.0' in metrics
