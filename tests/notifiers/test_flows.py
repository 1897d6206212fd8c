"""Whole flows with Slack in the loop: outages, failures, blockers, decisions made elsewhere."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from notifiers import outbox
from reconciler import reconciling
from reconciler.admin import principals
from reconciler.context import Context
from reconciler.core.states import DecisionChannel
from reconciler.requests import deciding
from reconciler.runtimes import tampering
from reconciler.runtimes.registry import Clusters
from tests.notifiers.flows import Flow, eventually, image, nebula_toml
from tests.plugins.slack import (
    SLACK_SIGNING_SECRET,
    SLACK_TOKEN,
    Fault,
    SlackServer,
    signed_headers,
    slack_interaction,
)


def delivered_keys(slack: SlackServer) -> Counter[str]:
    """How many messages each notice left in the channel (a retry must not add one)."""
    return Counter(
        m["metadata"]["event_payload"]["key"] for m in slack.messages.values() if "metadata" in m
    )


def headers(slack: SlackServer) -> list[str]:
    return [m["blocks"][0]["text"]["text"] for _, m in sorted(slack.messages.items())]


def with_faults(flow: Flow, tmp_path: Path, failing: dict[str, str]) -> None:
    """Restart the simulated cluster with faults keyed by image (NEBULA_SIMULATED_FAULTS)."""
    path = tmp_path / "faults.toml"
    path.write_text(
        "".join(f'[images."{image}"]\nfail = "{fail}"\n' for image, fail in failing.items())
    )
    ctx = flow.ctx
    ctx.settings = ctx.settings.with_(simulated_faults=str(path))
    ctx.clusters = Clusters(ctx.settings, ctx.db, ctx.clock, ctx.vault)


def test_a_slack_outage_holds_back_no_deployment_and_every_message_goes_out_once_after(
    flow: Flow, slack_server: SlackServer
) -> None:
    slack_server.outage()
    flow.member("alice", "admin", "U1")
    flow.member("bob", "admin", "U2")
    flow.project()
    for _ in range(3):
        flow.reconcile()
        assert flow.deliver() == 0  # the scheduler keeps trying while Slack is down
        flow.clock.advance(seconds=60)
    assert {d["state"] for d in flow.deployments("staging")} == {"healthy"}
    (approval,) = flow.approvals()
    with flow.ctx.db.transaction() as session:  # Slack is down: bob approves with the CLI
        deciding.decide(
            session,
            flow.ctx,
            int(approval["id"]),
            principals.by_name(session, "bob"),
            approve=True,
            via=DecisionChannel.CLI,
        )
    flow.reconcile()
    assert {d["state"] for d in flow.deployments()} == {"healthy"}
    assert slack_server.calls and slack_server.messages == {}
    assert [(r.key, r.delivered_at) for r in flow.outbox()] == [
        ("approval-request:1", None),
        ("approval-update:1", None),
    ]
    assert flow.outbox()[0].attempts == 3

    slack_server.restore()
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    assert flow.deliver() == 2
    assert delivered_keys(slack_server) == {"approval-request:1": 1}
    assert len(slack_server.updates) == 1
    assert headers(slack_server) == ["Approved: shop/production"]
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    assert flow.deliver() == 0
    assert all(r.delivered_at is not None for r in flow.outbox())


def test_a_failure_notice_per_failed_deployment_and_never_twice(
    flow: Flow, slack_server: SlackServer, tmp_path: Path
) -> None:
    with_faults(flow, tmp_path, {image("api", 2): "image-pull", image("api", 3): "image-pull"})
    flow.project(text=nebula_toml(1))
    flow.reconcile()
    flow.deliver()  # the production approval request
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    flow.push(nebula_toml(3), "Another bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)
    failed = [d for d in flow.deployments("staging") if d["state"] == "failed"]
    assert [(d["service"], d["release"]) for d in failed] == [("api", "r-2"), ("api", "r-3")]
    notices = {k: n for k, n in delivered_keys(slack_server).items() if "failed" in k}
    assert notices == {f"deployment-failed:{d['id']}": 1 for d in failed}
    failures = [m for m in slack_server.messages.values() if "failed" in m["text"]]
    assert [m["text"] for m in failures] == [
        "shop/staging: api r-2 failed (image-pull). R-1 keeps serving.",
        "shop/staging: api r-3 failed (image-pull). R-1 keeps serving.",
    ]
    fields = [f["text"] for f in failures[0]["blocks"][2]["fields"]]
    assert fields[:2] == ["*Blocker*\n`image-pull`", "*Keeps serving*\nr-1"]
    assert failed[0]["message"] in failures[0]["blocks"][1]["text"]["text"]


def test_a_bad_file_is_announced_once_per_commit_and_its_recovery_once(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    bad = flow.push(nebula_toml(staging=False).replace('engine = "postgres"', "engine = 5"))
    for _ in range(3):  # polled again and again: the same bad commit
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=61)
    worse = flow.push("[project\n", "Broken TOML")
    flow.reconcile()
    flow.clock.advance(seconds=61)
    flow.reconcile()
    flow.push(nebula_toml(2, staging=False), "Fixed")
    for _ in range(2):
        flow.reconcile()
        flow.clock.advance(seconds=61)
    flow.deliver()
    texts = [m["text"] for m in slack_server.messages.values() if m["text"].startswith("shop ")]
    assert len(texts) == 3
    assert texts[0].startswith(
        f"shop is blocked (configuration): nebula.toml at {bad[:7]} is invalid"
    )
    assert texts[1].startswith(f"shop is blocked (configuration): nebula.toml at {worse[:7]}")
    assert texts[2].startswith("shop recovered: nebula.toml at ")
    assert all(n == 1 for n in delivered_keys(slack_server).values())


@pytest.mark.parametrize("how", ["cli", "api", "expiry"])
def test_decisions_made_elsewhere_update_the_message(
    flow: Flow, slack_server: SlackServer, how: str
) -> None:
    flow.member("bob", "admin", "U2")
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    assert flow.deliver() == 1
    if how == "expiry":
        flow.clock.advance(hours=24)
        assert reconciling.expire(flow.ctx) == 1
    else:
        with flow.ctx.db.transaction() as session:
            deciding.decide(
                session,
                flow.ctx,
                1,
                principals.by_name(session, "bob"),
                approve=False,
                via=DecisionChannel(how),
            )
    assert flow.deliver() == 1
    ((_, message),) = slack_server.messages.items()
    decision = message["blocks"][-1]["text"]["text"]
    expected = {
        "cli": ":x: *Rejected* by *bob* with the CLI at 2026-01-05 12:00 UTC",
        "api": ":x: *Rejected* by *bob* through the API at 2026-01-05 12:00 UTC",
        "expiry": ":hourglass: *Expired* at 2026-01-06 12:00 UTC: Approval expired after 24h "
        "without a decision",
    }[how]
    assert decision == expected
    assert not [b for b in message["blocks"] if b["type"] == "actions"]


def test_no_token_or_signing_secret_reaches_a_log_line(
    flow: Flow,
    slack_server: SlackServer,
    web: httpx.Client,
    ctx: Context,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    flow.member("alice", "admin", "U1")
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    slack_server.fail("chat.postMessage", Fault(status=429, retry_after=2))
    flow.deliver()
    flow.clock.advance(seconds=2)
    slack_server.fail("chat.postMessage", Fault(status=200, error="invalid_auth"))
    flow.deliver()
    flow.clock.advance(seconds=10)
    slack_server.fail("chat.postMessage", Fault(drop_after=True))
    flow.deliver()
    flow.clock.advance(seconds=20)
    flow.deliver()
    wrong = replace(ctx, settings=ctx.settings.with_(slack_bot_token="xoxb-wrong-token-31337"))
    outbox.deliver_due(wrong)
    body = slack_interaction(user="U1", action="nebula_approve", value="1", response_url="")
    stamp = int(flow.clock.now().timestamp())
    web.post("/slack/interactions", content=body, headers=signed_headers(body, stamp, "forged"))
    assert flow.click(web, "U1", "nebula_approve", 1).status_code == 200
    eventually(lambda: slack_server.updates)
    lines = [caplog.text] + [r.getMessage() for r in caplog.records]
    assert any("nebula.slack" in r.name for r in caplog.records)  # the SDK's debug lines too
    assert any("Sending a request" in r.getMessage() for r in caplog.records)
    for secret in (SLACK_TOKEN, SLACK_SIGNING_SECRET, "xoxb-wrong-token-31337"):
        assert not [line for line in lines if secret in line]
        assert not [r for r in flow.outbox() if secret in str(r.last_error) + str(r.payload)]
        assert secret not in repr(ctx.settings)
    assert delivered_keys(slack_server) == {"approval-request:1": 1}


def test_a_request_replaced_by_a_newer_push_is_marked_cancelled(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    assert flow.deliver() == 1
    newer = flow.push(nebula_toml(2, staging=False), "Newer api")
    flow.reconcile()
    assert [a["state"] for a in flow.approvals()] == ["cancelled", "pending"]
    assert flow.deliver() == 2  # the old message updated, the new request posted
    first, second = (m for _, m in sorted(slack_server.messages.items()))
    assert first["blocks"][0]["text"]["text"] == "Cancelled: shop/production"
    assert first["blocks"][-1]["text"]["text"].endswith(
        f"Replaced by the change set from {newer[:7]}"
    )
    assert second["blocks"][-1]["type"] == "actions"
    assert second["blocks"][-1]["elements"][0]["value"] == "2"


def test_each_outage_of_the_repository_is_announced_once_and_so_is_its_end(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    away = flow.repo.path.with_name("moved-away")
    for _ in range(2):  # two outages, each polled several times
        flow.repo.path.rename(away)
        for _ in range(3):
            flow.reconcile()
            flow.clock.advance(seconds=61)
        away.rename(flow.repo.path)
        for _ in range(2):
            flow.reconcile()
            flow.clock.advance(seconds=61)
    flow.deliver()
    texts = [m["text"] for _, m in sorted(slack_server.messages.items())][1:]
    assert [t.split(":")[0] for t in texts] == [
        "shop is blocked (delivery)",
        "shop recovered",
        "shop is blocked (delivery)",
        "shop recovered",
    ]
    assert texts[1] == "shop recovered: The repository is reachable again"
    assert all(n == 1 for n in delivered_keys(slack_server).values())


def test_the_request_for_an_update_shows_its_diff_and_what_the_manifests_change(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.member("bob", "admin", "U2")
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    with flow.ctx.db.transaction() as session:
        deciding.decide(
            session,
            flow.ctx,
            1,
            principals.by_name(session, "bob"),
            approve=True,
            via=DecisionChannel.CLI,
        )
    flow.reconcile()
    sha = flow.push(nebula_toml(2, log_level="warn", staging=False), "Faster api")
    flow.reconcile()
    flow.deliver()
    request = [m for m in slack_server.messages.values() if m["text"].startswith("Approval")][-1]
    shown = "\n".join(
        b["text"]["text"] for b in request["blocks"] if b["type"] == "section" and "text" in b
    )
    assert request["text"] == (
        f"Approval needed: shop/production: api r-2 (requested by commit {sha[:7]})"
    )
    assert "• `api r-2` deploy (replaces r-1)" in shown
    assert "*Changes* (2 lines)" in shown
    before, after = (image("api", n).split(":")[1][:12] for n in (1, 2))
    assert (
        f"~ api image: registry.example.com/shop/api@sha256:{before}… → "
        f"registry.example.com/shop/api@sha256:{after}…"
    ) in shown
    assert "~ api LOG_LEVEL: info → warn" in shown
    assert "*Manifests*: 3 created, 1 configured, 3 deleted" in shown
    assert "Created: `ConfigMap/api-r2-vars`, `Deployment/api-r2`, `Service/api-r2`" in shown
    assert "Configured: `Service/api`" in shown
    assert "Deleted: `ConfigMap/api-r1-vars`, `Deployment/api-r1`, `Service/api-r1`" in shown


def test_a_drift_episode_is_announced_once_and_the_next_episode_again(
    flow: Flow, slack_server: SlackServer
) -> None:
    flow.project(text=nebula_toml())  # staging deploys; production waits for its approval
    flow.reconcile()
    cluster = flow.ctx.clusters.simulated()
    db = "StatefulSet/db"
    for replicas in (0, 2):  # one episode, growing: one notice
        tampering.edit(cluster, "shop-staging", db, "spec.replicas", replicas)
        flow.clock.advance(minutes=3)
        flow.reconcile()
        flow.deliver()
    tampering.edit(cluster, "shop-staging", db, "spec.replicas", 1)  # cleared ...
    flow.clock.advance(minutes=3)
    flow.reconcile()
    tampering.delete(cluster, "shop-staging", "Service/db")  # ... and a second episode
    flow.clock.advance(minutes=3)
    flow.reconcile()
    flow.deliver()

    drifts = [m for _, m in sorted(slack_server.messages.items()) if "drifted" in m["text"]]
    assert [m["text"] for m in drifts] == [
        "shop/staging: db drifted from r-1 (1 difference)",
        "shop/staging: db drifted from r-1 (1 difference)",
    ]
    assert drifts[0]["blocks"][0]["text"]["text"] == "Drift: db r-1 in shop/staging"
    assert "StatefulSet/db spec.replicas: 0 (r-1: 1)" in drifts[0]["blocks"][1]["text"]["text"]
    assert "Service/db is missing" in drifts[1]["blocks"][1]["text"]["text"]
    assert "nebula diff shop --env staging" in drifts[0]["blocks"][2]["text"]["text"]
    keys = [k for k in delivered_keys(slack_server) if k.startswith("unit-drifted:")]
    assert len(keys) == 2 and all(delivered_keys(slack_server)[k] == 1 for k in keys)
