"""Microsoft Teams: a Workflows webhook gets a message carrying one Adaptive Card, valid
against the published Adaptive Card 1.5 schema (fixtures/adaptivecards, with its source):
approval requests link to the approval page; failures show the blocker, the message and
what keeps serving. The workflow URL's signature stays out of everything shown."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from notifiers import cards, facts, summaries
from notifiers.facts import Failure
from tests.notifiers import channelkit
from tests.notifiers.flows import Flow, image, nebula_toml
from tests.notifiers.test_flows import with_faults
from tests.plugins.receivers import Receiver

SCHEMA = Path(__file__).resolve().parents[2] / "fixtures/adaptivecards/adaptive-card-1.5.json"
WORKFLOW = "/workflows/4f1c/triggers/manual/paths/invoke"
QUERY = "?api-version=2016-06-01&sp=%2Ftriggers&sv=1.0&sig=Zx9TeamsSignature0"


@cache
def _validator() -> jsonschema.Draft6Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft6Validator.check_schema(schema)
    return jsonschema.Draft6Validator(schema)


def _card(body: dict[str, Any]) -> dict[str, Any]:
    """The message's one card, validated; a card that is not valid fails here."""
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card: dict[str, Any] = attachment["content"]
    errors = [e.message for e in _validator().iter_errors(card)]
    assert errors == []
    return card


def _texts(card: dict[str, Any]) -> list[str]:
    return [b["text"] for b in card["body"] if b["type"] == "TextBlock"]


def _facts(card: dict[str, Any]) -> dict[str, str]:
    (facts,) = [b for b in card["body"] if b["type"] == "FactSet"]
    return {f["title"]: f["value"] for f in facts["facts"]}


def test_approvals_and_failures_arrive_as_valid_adaptive_cards(
    flow: Flow, receiver: Receiver, tmp_path: Path
) -> None:
    flow.project(text=nebula_toml(1))
    channelkit.add(flow.ctx, "teams", receiver.url(WORKFLOW) + QUERY, on="approval,failure")
    with_faults(flow, tmp_path, {image("api", 2): "image-pull"})
    flow.reconcile()
    flow.deliver()
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    assert {r.path for r in receiver.received} == {WORKFLOW}
    assert receiver.received[0].query["sig"] == ["Zx9TeamsSignature0"]  # the URL as given
    found = [_card(r.json) for r in receiver.received]
    assert [_texts(c)[0] for c in found] == [
        "Approval needed: shop/production",
        "Cancelled: shop/production",  # the newer push replaced it
        "Approval needed: shop/production",
        "Deployment failed: api r-2 in shop/staging",
    ]
    request, failure = found[0], found[-1]

    assert request["version"] == "1.5"
    assert _texts(request)[0] == "Approval needed: shop/production"
    assert _facts(request)["Services"] == "db r-1, api r-1"
    assert request["actions"] == [
        {
            "type": "Action.OpenUrl",
            "title": "Review and decide",
            "url": "https://nebula.example.com/approvals#approval-1",
        }
    ]
    failed = next(d for d in flow.deployments("staging") if d["state"] == "failed")
    assert _texts(failure)[0] == "Deployment failed: api r-2 in shop/staging"
    assert _texts(failure)[1] == cards.escape(failed["message"])
    assert _facts(failure) == {
        "Blocker": "image-pull",
        "Keeps serving": "r-1",
        "Kind": "deploy",
        "Deployment": f"#{failed['id']}",
    }
    assert failure["actions"][0]["url"] == f"https://nebula.example.com/deployments/{failed['id']}"


def test_every_kind_of_notice_makes_a_valid_card_and_markdown_in_data_stays_text() -> None:
    hostile = Failure(
        deployment_id=9, project="shop", environment="production", service="api",
        release="r-2", kind="deploy", blocker="readiness",
        message="[click me](https://evil.example.com) **now** <at>everyone</at>",
        keeps_serving=None, url="https://nebula.example.com/deployments/9",
    )  # fmt: skip
    card = _card(cards.message(summaries.of(hostile)))
    assert _texts(card)[1] == (
        "\\[click me\\](https://evil.example.com) \\*\\*now\\*\\* <at>everyone</at>"
    )
    assert _facts(card)["Keeps serving"] == "nothing (no release was serving)"


def test_the_schema_refuses_a_card_that_teams_would_not_render() -> None:
    """The fixture is a real check: a card with a typo in an element is not valid."""
    broken = cards.card(summaries.of(facts.Test("3", "alice", "https://n.example.com")))
    broken["body"][0]["type"] = "TextBlok"
    assert list(_validator().iter_errors(broken))
    with pytest.raises(AssertionError):
        _card({"type": "message", "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": broken}
        ]})  # fmt: skip
