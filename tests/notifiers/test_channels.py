"""``nebula notify add|list|remove|test`` through either door (local with ``--as``, remote
with the member's token): what is printed, what is refused (one line and a hint, nothing
stored), who may do it, and that a channel's secrets are encrypted at rest and never shown.

alice is an owner, carol a member, vera a viewer; project shop has one environment,
production (made in the store)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from notifiers import outbox
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.nebula import Nebula, nebula_with
from tests.plugins.receivers import Receiver
from tests.store.rows import project_and_environment

TEAMS = (
    "https://prod-12.westeurope.logic.azure.com:443/workflows/4f1c/triggers/manual/paths/"
    "invoke?api-version=2016-06-01&sp=%2Ftriggers&sv=1.0&sig=Zx9TeamsSignature0"
)
HOOK = "https://nebula:hunter2pw@hooks.example.com/services/T0K3NPATH?key=q5ecret"
ROUTING_KEY = "R0123456789ABCDEF0123456789ABCDE"
SMTP = "smtp://mailer:smtp-pa55word@127.0.0.1:2525"
SECRETS = ("hunter2pw", "T0K3NPATH", "q5ecret", "Zx9TeamsSignature0", ROUTING_KEY, "pa55word")


@pytest.fixture
def nebula(tmp_path: Path) -> Iterator[Nebula]:
    """Slack and e-mail configured, so that every kind of channel may be added."""
    yield from nebula_with(
        tmp_path, slack_bot_token="xoxb-test-1", slack_channel="C0NEBULA01", smtp_url=SMTP
    )


@pytest.fixture
def org(nebula: Nebula) -> Nebula:
    with nebula.ctx.db.transaction() as session:
        people.member(session, nebula.clock, "alice", "owner")
        people.member(session, nebula.clock, "carol", "member")
        people.member(session, nebula.clock, "vera", "viewer")
        project_and_environment(session, nebula.clock)
    return nebula


def _add_pagerduty(door: Door, monkeypatch: pytest.MonkeyPatch, key: str = ROUTING_KEY) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(key + "\n"))
    result = door.act("alice", "notify add pagerduty - --on failure")
    assert result.code == 0, result.err
    return result.out


def test_channels_are_added_listed_and_removed(
    door: Door, org: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = door.act("alice", f"notify add webhook '{HOOK}'")
    assert added.code == 0, added.err
    first, secret = added.out.splitlines()
    assert first == (
        "channel 1 added: webhook https://***@hooks.example.com/… for organization on "
        "approval,failure,drift"
    )
    assert secret.startswith("whsec_") and len(secret) == 50
    assert added.err == (
        "The signing secret of channel 1 is shown once; store it now (receivers check "
        "webhook-signature with it).\n"
    )
    teams = door.act(
        "alice", f"notify add teams '{TEAMS}' --project shop --env production --on failure,approval"
    )
    assert teams.out == (
        "channel 2 added: teams https://prod-12.westeurope.logic.azure.com:443/… for "
        "shop/production on approval,failure\n"
    )
    mail = door.act("alice", "notify add email ops@example.com,oncall@example.com --project shop")
    assert mail.code == 0, mail.err
    assert door.act("alice", "notify add slack C0DEPLOYS1 --on blocked,healthy").code == 0
    assert _add_pagerduty(door, monkeypatch) == (
        "channel 5 added: pagerduty routing key (hidden) for organization on failure\n"
    )
    listed = door.read("notify list", "vera")  # a viewer reads them
    assert listed.code == 0, listed.err
    assert listed.out.splitlines() == [
        "ID       KIND       SCOPE            EVENTS                          TARGET                                            LAST DELIVERY  LAST ERROR",
        "default  slack      organization     approval,failure,drift,blocked  C0NEBULA01                                        never          -",
        "1        webhook    organization     approval,failure,drift          https://***@hooks.example.com/…                   never          -",
        "2        teams      shop/production  approval,failure                https://prod-12.westeurope.logic.azure.com:443/…  never          -",
        "3        email      shop             approval,failure,drift          ops@example.com,oncall@example.com                never          -",
        "4        slack      organization     healthy,blocked                 C0DEPLOYS1                                        never          -",
        "5        pagerduty  organization     failure                         routing key (hidden)                              never          -",
    ]  # fmt: skip
    removed = door.act("alice", "notify remove 2")
    assert removed.out == (
        "channel 2 (teams https://prod-12.westeurope.logic.azure.com:443/…) removed\n"
    )
    document = door.read("notify list --json", "vera").json
    assert [c["id"] for c in document["channels"]] == ["default", "1", "3", "4", "5"]
    assert document["channels"][2] == {
        "id": "3", "kind": "email", "scope": "shop", "project": "shop", "environment": None,
        "events": ["approval", "failure", "drift"],
        "target": "ops@example.com,oncall@example.com", "last_delivery": None,
        "last_error": None, "last_error_at": None, "created_at": "2026-01-05T12:00:00Z",
        "created_by": "alice",
    }  # fmt: skip
    actions = [(e["actor"], e["action"], e["message"]) for e in org.json("audit")["events"]]
    assert actions[0] == (
        "alice",
        "notify.add",
        "Added webhook channel 1 (https://***@hooks.example.com/…) for organization: "
        "approval,failure,drift",
    )
    assert actions[-1] == (
        "alice",
        "notify.remove",
        "Removed teams channel 2 (https://prod-12.westeurope.logic.azure.com:443/…)",
    )


def test_no_secret_of_a_channel_is_shown_or_stored_in_the_clear(
    door: Door, org: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = [
        door.act("alice", f"notify add webhook '{HOOK}'"),
        door.act("alice", f"notify add teams '{TEAMS}'"),
        door.act("alice", "notify add email ops@example.com"),
        door.read("notify list -o wide", "alice"),
        door.read("notify list --json", "alice"),
        door.read("notify list -o yaml", "alice"),
        door.read("audit --json", "alice"),
    ]
    outputs[0].out = outputs[0].out.splitlines()[0]  # all but the signing secret, shown once
    _add_pagerduty(door, monkeypatch)
    shown = "".join(r.out + r.err for r in outputs) + door.read("notify list", "alice").out
    for secret in SECRETS:
        assert secret not in shown
    with org.ctx.db.engine.connect() as connection:
        dump = "\n".join(
            repr(row) for row in connection.execute(text("SELECT * FROM notify_channels"))
        )
        dump += "\n".join(repr(row) for row in connection.execute(text("SELECT * FROM events")))
    for secret in (*SECRETS, "whsec_"):
        assert secret not in dump


# Each refusal: one line and a hint; nothing is stored.
REFUSALS = [
    ("notify add webhook ftp://hooks.example.com/x", "webhook: TARGET must be a webhook URL starting with https:// (or http://) and naming a host", "e.g. https://hooks.example.com/nebula"),
    ("notify add webhook 'https://hooks.example.com/a b'", "webhook: TARGET must be a webhook URL (no spaces)", "e.g. https://hooks.example.com/nebula"),
    ("notify add webhook https://hooks.example.com:99999/x", "webhook: TARGET is not a webhook URL", "e.g. https://hooks.example.com/nebula"),
    ("notify add teams teams.microsoft.com/abc", "teams: TARGET must be a Teams workflow URL starting with https:// (or http://) and naming a host", "copy the URL of the workflow's 'When a Teams webhook request is received' trigger"),
    ("notify add email ops@example.com,nobody", "email: 'nobody' is not an e-mail address", "write it as name@example.com"),
    ("notify add email ops@example.com,,dev@example.com", "email: TARGET must be e-mail addresses separated by commas", "e.g. ops@example.com,oncall@example.com"),
    ("notify add slack '#deploys'", "slack: TARGET must be a Slack channel id, like C0123456789", "copy it from the channel's details in Slack (a name like #deploys is not an id)"),
    ("notify add webhook https://hooks.example.com --on failure,deploys", "--on: unknown event 'deploys'", "events are approval,failure,drift,healthy,blocked"),
    ("notify add webhook https://hooks.example.com --env production", "--env needs --project", "e.g. nebula notify add ... --project shop --env production"),
    ("notify add webhook https://hooks.example.com --project shop --env staging", "shop has no environment 'staging'", "its environments: production"),
    ("notify add webhook https://hooks.example.com --project nowhere", "No project named 'nowhere'", "projects: shop"),
    (f"notify add pagerduty {ROUTING_KEY}", "pagerduty: the routing key is read from stdin, not the command line", "nebula notify add pagerduty - < routing-key.txt"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "error", "hint"), REFUSALS)
def test_bad_input_is_refused_in_one_line_with_a_hint(
    door: Door, org: Nebula, command: str, error: str, hint: str | None
) -> None:
    refused = door.act("alice", command)
    assert refused.code == 1
    lines = refused.err.splitlines()
    assert lines[0] == f"error: {error}"
    if hint is not None:
        assert lines[1:] == [f"hint: {hint}"]
    assert refused.out == ""
    assert [c["id"] for c in org.json("notify list")["channels"]] == ["default"]


@pytest.mark.parametrize("key", ["short", "R0123456789ABCDEF0123456789ABCD!", ""])
def test_a_routing_key_of_the_wrong_shape_is_refused_and_not_echoed(
    door: Door, org: Nebula, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(key))
    refused = door.act("alice", "notify add pagerduty -")
    assert refused.code == 1
    assert len(refused.err.splitlines()) == 2
    assert refused.err.startswith("error: pagerduty: ")
    if key:
        assert key not in refused.err
    assert [c["id"] for c in org.json("notify list")["channels"]] == ["default"]


def test_only_an_admin_changes_channels_and_every_member_reads_them(
    door: Door, org: Nebula
) -> None:
    for command, what in (
        ("notify add webhook https://hooks.example.com", "add notification channels"),
        ("notify remove 1", "remove notification channels"),
        ("notify test 1", "test notification channels"),
    ):
        refused = door.act("carol", command)
        assert (
            refused.err
            == f"error: carol may not {what}: needs the admin role (carol is a member)\n"
        )
    assert door.read("notify list", "vera").code == 0
    if door.remote is not None:
        anonymous = door.remote.cli("notify list")
        assert (anonymous.code, anonymous.err.splitlines()[0]) == (
            1,
            "error: the server wants a token (401): Missing bearer token",
        )


def test_the_default_slack_channel_comes_from_the_settings(door: Door, org: Nebula) -> None:
    refused = door.act("alice", "notify remove default")
    assert refused.err.splitlines() == [
        "error: the default Slack channel comes from the settings, not from nebula notify add",
        "hint: unset NEBULA_SLACK_BOT_TOKEN (or NEBULA_SLACK_CHANNEL) on the server to stop it",
    ]
    unknown = door.act("alice", "notify remove 7")
    assert unknown.err.splitlines() == [
        "error: No notification channel 7",
        "hint: list them with: nebula notify list",
    ]


def test_without_the_server_settings_slack_and_email_channels_are_refused(tmp_path: Path) -> None:
    for nebula in nebula_with(tmp_path):
        assert nebula.json("notify list")["channels"] == []  # no default Slack channel either
        slack = nebula.cli("notify add slack C0DEPLOYS1")
        assert slack.err.splitlines() == [
            "error: slack channels need NEBULA_SLACK_BOT_TOKEN on the server",
            "hint: set it where nebula serve runs, then add the channel",
        ]
        mail = nebula.cli("notify add email ops@example.com")
        assert (
            mail.err.splitlines()[0] == "error: email channels need NEBULA_SMTP_URL on the server"
        )


def test_a_test_notification_reports_the_channel_down_and_list_keeps_the_error(
    door: Door, org: Nebula, refused_url: str, receiver: Receiver
) -> None:
    assert door.act("alice", f"notify add webhook {refused_url}").code == 0
    failed = door.act("alice", "notify test 1")
    assert failed.code == 1
    assert failed.err.splitlines() == [
        "error: the test notification to channel 1 failed: the webhook cannot be reached "
        "([Errno 111] Connection refused)",
        "hint: nebula notify list shows each channel's last error",
    ]
    org.clock.advance(seconds=60)
    assert door.act("alice", f"notify add webhook {receiver.url()}").code == 0
    assert door.act("alice", "notify test 2").out == "test notification delivered to channel 2\n"
    rows = {c["id"]: c for c in door.read("notify list --json", "alice").json["channels"]}
    assert (rows["1"]["last_delivery"], rows["1"]["last_error_at"]) == (
        None,
        "2026-01-05T12:00:00Z",
    )
    assert (
        rows["1"]["last_error"] == "the webhook cannot be reached ([Errno 111] Connection refused)"
    )
    assert (rows["2"]["last_delivery"], rows["2"]["last_error"]) == ("2026-01-05T12:01:00Z", None)
    assert [r.json["type"] for r in receiver.received] == ["nebula.test"]
    # A failed test is tried once: nothing is left to retry.
    org.clock.advance(seconds=3600)
    assert outbox.deliver_due(org.ctx) == 0
