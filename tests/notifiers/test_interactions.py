"""Approve and Reject from Slack: signed requests only, the same rules as everywhere else."""

from __future__ import annotations

import http.server
import sqlite3
import threading
import time
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from notifiers.clicks import answerable
from reconciler.admin import principals
from reconciler.context import Context
from reconciler.core.states import DecisionChannel
from reconciler.requests import applying, deciding, records
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.web import slack as interactions
from tests.notifiers.flows import Flow, eventually, nebula_toml
from tests.plugins.slack import (
    CHANNEL_ID,
    Fault,
    SlackServer,
    signed_headers,
    slack_interaction,
)
from tests.web.world import AppServer

APPROVE, REJECT = "nebula_approve", "nebula_reject"


@pytest.fixture
def pending(flow: Flow) -> int:
    """A push waiting for approval in production, its request posted in Slack."""
    flow.member("alice", "admin", "U1")
    flow.member("bob", "admin", "U2")
    flow.member("carol", "member", "U3")
    flow.project(text=nebula_toml(staging=False))
    flow.reconcile()
    assert flow.deliver() == 1
    (approval,) = flow.approvals()
    assert approval["state"] == "pending"
    return int(approval["id"])


def snapshot(flow: Flow) -> dict[str, Any]:
    """Everything a decision could change."""
    return {
        "approvals": flow.approvals(),
        "deployments": flow.deployments(),
        "events": flow.events(),
        "outbox": [(r.key, r.delivered_at) for r in flow.outbox()],
    }


def the_message(slack: SlackServer) -> dict[str, Any]:
    ((channel, ts),) = slack.messages
    assert channel == CHANNEL_ID
    return slack.message(channel, ts)


def ephemeral_replies(slack: SlackServer) -> list[dict[str, Any]]:
    return [c.args for c in eventually(lambda: slack.responses)]


# -- decisions -------------------------------------------------------------------------


def test_approve_from_slack_starts_the_deployment_and_updates_the_message(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    response = flow.click(web, "U1", APPROVE, pending)
    assert response.status_code == 200
    (approval,) = flow.approvals()
    assert (approval["state"], approval["decided_by"], approval["decided_via"]) == (
        "approved",
        "alice",
        "slack",
    )
    assert {d["state"] for d in flow.deployments("production")} == {"pending"}
    (update,) = eventually(lambda: slack_server.updates)
    message = the_message(slack_server)
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL_ID, message["ts"])
    assert message["blocks"][0]["text"]["text"] == "Approved: shop/production"
    assert not [b for b in message["blocks"] if b["type"] == "actions"]
    assert message["blocks"][-1]["text"]["text"] == (
        ":white_check_mark: *Approved* by *alice* in Slack at 2026-01-05 12:00 UTC"
    )
    assert slack_server.responses == []
    flow.reconcile()
    assert {d["state"] for d in flow.deployments("production")} == {"healthy"}


def test_reject_from_slack_ends_it_rejected(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    assert flow.click(web, "U2", REJECT, pending).status_code == 200
    (approval,) = flow.approvals()
    assert (approval["state"], approval["decided_by"], approval["decided_via"]) == (
        "rejected",
        "bob",
        "slack",
    )
    assert {d["state"] for d in flow.deployments("production")} == {"rejected"}
    assert {d["message"] for d in flow.deployments("production")} == {"Rejected by bob"}
    eventually(lambda: slack_server.updates)
    message = the_message(slack_server)
    assert message["blocks"][-1]["text"]["text"] == (
        ":x: *Rejected* by *bob* in Slack at 2026-01-05 12:00 UTC"
    )


def test_the_click_is_answered_before_slack_is_updated(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    slack_server.fail("chat.update", Fault(status=200, delay=2.0))
    started = time.monotonic()
    assert flow.click(web, "U1", APPROVE, pending).status_code == 200
    assert time.monotonic() - started < 1.0
    assert eventually(lambda: slack_server.updates)


# -- refusals: an ephemeral reply, and nothing changes -------------------------------------


@pytest.mark.parametrize(
    ("user", "action", "reply"),
    [
        (
            "U9",
            APPROVE,
            "Your Slack account (U9) is not linked to a Nebula member, so you cannot approve "
            "approval 1. An owner can link it with: nebula member add NAME --role admin "
            "--slack-id U9",
        ),
        (
            "U3",
            REJECT,
            "Not done: carol may not reject in shop/production: needs the approve grant or the admin "
            "role (an admin can grant it: nebula grant add carol approve --project shop --env "
            "production)",
        ),
    ],
    ids=["unknown-user", "non-admin"],
)
def test_who_may_not_decide_gets_told_why_and_nothing_changes(
    flow: Flow,
    pending: int,
    web: httpx.Client,
    slack_server: SlackServer,
    user: str,
    action: str,
    reply: str,
) -> None:
    before = snapshot(flow)
    assert flow.click(web, user, action, pending).status_code == 200
    assert ephemeral_replies(slack_server) == [
        {"text": reply, "response_type": "ephemeral", "replace_original": False}
    ]
    assert snapshot(flow) == before
    assert slack_server.updates == []


def test_an_already_decided_approval_is_not_decided_again(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    with flow.ctx.db.transaction() as session:
        deciding.decide(
            session,
            flow.ctx,
            pending,
            principals.by_name(session, "bob"),
            approve=True,
            via=DecisionChannel.CLI,
        )
    before = snapshot(flow)
    assert flow.click(web, "U1", REJECT, pending).status_code == 200
    (reply,) = ephemeral_replies(slack_server)
    assert (
        reply["text"] == "Not done: Approval 1 is already approved by bob at 2026-01-05 12:00 UTC"
    )
    assert snapshot(flow) == before


def test_an_expired_approval_cannot_be_decided(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    flow.clock.advance(hours=25)
    before = snapshot(flow)
    assert flow.click(web, "U1", APPROVE, pending).status_code == 200
    (reply,) = ephemeral_replies(slack_server)
    assert reply["text"] == "Not done: Approval 1 is already expired at 2026-01-06 13:00 UTC"
    assert snapshot(flow) == before  # the scheduler records the expiry, not a refused click


def test_approving_your_own_request_is_refused_when_the_policy_forbids_it(
    flow: Flow, web: httpx.Client, slack_server: SlackServer
) -> None:
    flow.member("alice", "admin", "U1")
    flow.member("bob", "admin", "U2")
    flow.project(text=nebula_toml(staging=False, auto_deploy=False))
    flow.reconcile()
    with flow.ctx.db.transaction() as session:
        (draft,) = records.changesets(session)
        applied = applying.apply(session, flow.ctx, draft, requester="alice")
        assert applied.approval is not None
        approval_id = applied.approval.id
    flow.deliver()
    before = snapshot(flow)
    assert flow.click(web, "U1", APPROVE, approval_id).status_code == 200
    (reply,) = ephemeral_replies(slack_server)
    assert reply["text"] == (
        "Not done: Your policy forbids approving your own deploys: someone else must approve "
        "this request. (who can approve it: bob)"
    )
    assert snapshot(flow) == before
    assert flow.click(web, "U2", APPROVE, approval_id).status_code == 200
    assert flow.approvals()[0]["decided_by"] == "bob"


def test_a_button_without_an_approval_id_changes_nothing(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    before = snapshot(flow)
    assert flow.click(web, "U1", APPROVE, "12; drop table").status_code == 200
    (reply,) = ephemeral_replies(slack_server)
    assert reply["text"] == "This button does not name an approval ('12; drop table')."
    assert flow.click(web, "U1", APPROVE, 404).status_code == 200
    assert eventually(lambda: len(slack_server.responses) == 2)
    assert slack_server.responses[1].args["text"] == (
        "Not done: No approval 404 (list them with: nebula approvals)"
    )
    assert snapshot(flow) == before


@pytest.mark.parametrize("value", ["\u00b2", "\u0661", "\uff11"])
def test_a_button_value_of_other_digits_names_no_approval(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer, value: str
) -> None:
    """``'²'.isdigit()`` is true (and ``int('²')`` fails: it was a 500), ``int('\\u0661')`` is 1
    (another approval): ids are ASCII digits only."""
    before = snapshot(flow)
    assert flow.click(web, "U1", APPROVE, value).status_code == 200
    (reply,) = ephemeral_replies(slack_server)
    assert reply["text"] == f"This button does not name an approval ({value!r})."
    assert snapshot(flow) == before


# -- requests that are not Slack's: 401 before anything is read ----------------------------


@pytest.mark.parametrize(
    "case", ["forged", "tampered", "stale", "future", "unsigned", "superscript-timestamp"]
)
def test_a_request_not_signed_by_slack_gets_401_and_changes_nothing(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer, case: str
) -> None:
    body = slack_interaction(
        user="U1", action=REJECT, value=str(pending), response_url=slack_server.response_url()
    )
    now = int(flow.clock.now().timestamp())
    headers = signed_headers(body, now)
    if case == "forged":
        headers = signed_headers(body, now, secret="not-the-signing-secret")
    elif case == "tampered":
        body = body.replace(b"nebula_reject", b"nebula_approve")
    elif case == "stale":
        headers = signed_headers(body, now - 301)
    elif case == "future":
        headers = signed_headers(body, now + 301)
    elif case == "superscript-timestamp":  # passes str.isdigit(); int() used to fail: a 500
        headers = {**signed_headers(body, now), "X-Slack-Request-Timestamp": "\u00b2"}
        headers = {k: v.encode("latin-1") for k, v in headers.items()}
    else:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
    before = snapshot(flow)
    calls = len(slack_server.calls)
    response = web.post("/slack/interactions", content=body, headers=headers)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    assert snapshot(flow) == before
    assert len(slack_server.calls) == calls


def test_a_timestamp_inside_the_window_is_accepted(
    flow: Flow, pending: int, web: httpx.Client
) -> None:
    now = int(flow.clock.now().timestamp())
    assert flow.click(web, "U1", APPROVE, pending, timestamp=now - 299).status_code == 200
    assert flow.approvals()[0]["state"] == "approved"


def test_a_replayed_request_is_refused(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    body = slack_interaction(
        user="U2", action=REJECT, value=str(pending), response_url=slack_server.response_url()
    )
    headers = signed_headers(body, int(flow.clock.now().timestamp()))
    assert web.post("/slack/interactions", content=body, headers=headers).status_code == 200
    assert eventually(lambda: slack_server.updates)
    before = snapshot(flow)
    replay = web.post("/slack/interactions", content=body, headers=headers)
    assert replay.status_code == 401
    assert replay.json() == {
        "error": "Replayed Slack request",
        "hint": None,
        "code": "unauthorized",
    }
    assert snapshot(flow) == before


def test_without_a_signing_secret_every_request_is_refused(
    flow: Flow, pending: int, ctx: Context
) -> None:
    app = FastAPI()
    unsigned = replace(ctx, settings=ctx.settings.with_(slack_signing_secret=""))
    app.include_router(interactions.router(unsigned))
    with AppServer(app) as server, httpx.Client(base_url=server.url) as client:
        response = flow.click(client, "U1", APPROVE, pending)
    assert response.status_code == 401
    assert "NEBULA_SLACK_SIGNING_SECRET is not set" in response.json()["error"]
    assert flow.approvals()[0]["state"] == "pending"


def test_other_interactions_are_acknowledged_and_ignored(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    body = b"payload=%7B%22type%22%3A%22view_closed%22%7D"
    headers = signed_headers(body, int(flow.clock.now().timestamp()))
    before = snapshot(flow)
    assert web.post("/slack/interactions", content=body, headers=headers).status_code == 200
    assert snapshot(flow) == before
    bad = b"not a form"
    response = web.post(
        "/slack/interactions",
        content=bad,
        headers=signed_headers(bad, int(flow.clock.now().timestamp())),
    )
    assert response.status_code == 400
    with flow.ctx.db.transaction() as session:
        assert session.scalars(select(schema.Approval.state)).all() == ["pending"]


def test_a_slow_store_still_gets_the_click_answered_within_slacks_3_seconds(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer, settings: Settings
) -> None:
    path = settings.resolved_database_url.split(":///", 1)[1]
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")  # a long write elsewhere holds the store
    release = threading.Timer(3.0, writer.rollback)
    release.start()
    try:
        started = time.monotonic()
        response = flow.click(web, "U1", APPROVE, pending)
        assert time.monotonic() - started < 2.9
        assert response.status_code == 200
    finally:
        release.join()
        writer.close()
    assert eventually(lambda: slack_server.updates)
    assert flow.approvals()[0]["decided_by"] == "alice"


def test_an_answer_is_posted_only_to_slack_s_own_address(
    flow: Flow, pending: int, web: httpx.Client, slack_server: SlackServer
) -> None:
    """A signed click whose response_url points elsewhere (an address inside the network) is
    decided as any other, but its answer goes nowhere: only hooks.slack.com, or the host of
    NEBULA_SLACK_API_URL, is followed."""
    elsewhere: list[bytes] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            elsewhere.append(self.rfile.read(int(self.headers["Content-Length"] or 0)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    inside = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=inside.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{inside.server_address[1]}/internal"
        body = slack_interaction(user="U3", action=REJECT, value=str(pending), response_url=url)
        now = int(flow.clock.now().timestamp())
        answer = web.post("/slack/interactions", content=body, headers=signed_headers(body, now))
        assert answer.status_code == 200
        time.sleep(0.5)  # the answer would have been posted by now (it is, to Slack's address)
    finally:
        inside.shutdown()
        inside.server_close()
    assert elsewhere == []
    assert ephemeral_replies(slack_server) == []
    assert answerable("https://hooks.slack.com/actions/T1/1/x", "https://slack.com/api/")
    assert not answerable("https://hooks.slack.com.evil.example/x", "https://slack.com/api/")
    assert not answerable("http://169.254.169.254/latest", "https://slack.com/api/")
