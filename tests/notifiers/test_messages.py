"""The messages people see in Slack, built from facts (no store, no network)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from notifiers import messages
from notifiers.facts import (
    ApprovalRequest,
    Commit,
    Decision,
    Failure,
    Line,
    ManifestDiff,
    ProjectState,
    ServiceRelease,
)

AT = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
DIGEST = "a" * 64
URL = "https://nebula.example.com/projects/shop#production"


def request(**changes: Any) -> ApprovalRequest:
    base = ApprovalRequest(
        approval_id=12,
        project="shop",
        environment="production",
        target="changeset",
        target_id=7,
        kind="changeset",
        requested_by="project:shop",
        requested_at=AT,
        expires_at=datetime(2026, 1, 6, 12, 0, tzinfo=UTC),
        url=URL,
        commit=Commit(
            "4bd2a9f0c1" + "0" * 30, "Ada Lovelace <ada@example.com>", "Bump api\n\nbody"
        ),
        services=(
            ServiceRelease("api", "r-8", "deploy", "service", "r-7"),
            ServiceRelease("db", "r-2", "deploy", "database", None),
        ),
        lines=(
            Line(
                "api", "release", "image", f"reg/api@sha256:{'b' * 64}", f"reg/api@sha256:{DIGEST}"
            ),
            Line("api", "variable-set", "variables.LOG_LEVEL", "info", "warn"),
            Line("api", "variable-set", "variables.NEW", None, "1"),
            Line("api", "variable-delete", "variables.OLD", "x", None),
            Line("db", "first-deploy", "first_deploy", None, "postgres 16"),
            Line("search", "removal", "removal", "reg/search:1", None),
            Line("api", "replicas", "processes.web.replicas", 2, 4),
        ),
        manifests=ManifestDiff(
            created=("Deployment/api-r8", "Service/api-r8"),
            configured=("Service/api",),
            deleted=("Deployment/api-r7", "Service/api-r7"),
            unchanged=1,
        ),
    )
    return replace(base, **changes)


def texts(blocks: tuple[dict[str, Any], ...]) -> str:
    """Every text in the blocks, in order, as one string."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text"):
                out.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item)

    walk(blocks)
    return "\n".join(out)


def test_a_pending_request_has_approve_and_reject_buttons_valued_with_its_id() -> None:
    message = messages.approval(request())
    actions = [b for b in message.blocks if b["type"] == "actions"]
    assert len(actions) == 1
    buttons = actions[0]["elements"]
    assert [(b["text"]["text"], b["action_id"], b["value"], b["style"]) for b in buttons] == [
        ("Approve", "nebula_approve", "12", "primary"),
        ("Reject", "nebula_reject", "12", "danger"),
    ]


def test_a_request_names_project_environment_services_releases_and_the_push() -> None:
    message = messages.approval(request())
    shown = texts(message.blocks)
    assert message.blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "Approval needed: shop/production", "emoji": True},
    }
    assert "*Project*\nshop" in shown
    assert "*Environment*\nproduction" in shown
    assert "*Request*\nchange set 7" in shown
    assert "*Pushed*\n`4bd2a9f`" in shown
    assert "Commit `4bd2a9f` by Ada Lovelace &lt;ada@example.com&gt;: Bump api" in shown
    assert "• `api r-8` deploy (replaces r-7)" in shown
    assert "• `db r-2` deploy (database, first release)" in shown
    assert message.text == (
        "Approval needed: shop/production: api r-8, db r-2 (requested by commit 4bd2a9f)"
    )


def test_a_request_by_a_person_names_them_instead_of_a_commit() -> None:
    message = messages.approval(
        request(requested_by="alice", commit=None, target="deployment", kind="rollback")
    )
    shown = texts(message.blocks)
    assert "*Requested by*\nalice" in shown
    assert "*Request*\nrollback (deployment 7)" in shown
    assert "Commit" not in shown
    assert message.text.endswith("(requested by alice)")


def test_the_change_set_lines_read_as_a_diff() -> None:
    shown = texts(messages.approval(request()).blocks)
    assert "*Changes* (7 lines)\n```\n" in shown
    for line in [
        "~ api image: reg/api@sha256:bbbbbbbbbbbb… → reg/api@sha256:aaaaaaaaaaaa…",
        "~ api LOG_LEVEL: info → warn",
        "+ api NEW = 1",
        "- api OLD (was x)",
        "+ db: first deploy, postgres 16",
        "- search: removed (was reg/search:1)",
        "~ api processes.web.replicas: 2 → 4",
    ]:
        assert line in shown


def test_a_long_change_set_is_folded_with_a_count() -> None:
    lines = tuple(
        Line("api", "variable-set", f"variables.V{i:02d}", None, str(i)) for i in range(30)
    )
    shown = texts(messages.approval(request(lines=lines)).blocks)
    assert "*Changes* (30 lines)" in shown
    assert "+ api V11 = 11" in shown
    assert "V12" not in shown
    assert "… and 18 more lines" in shown


def test_the_manifest_summary_counts_and_names_objects() -> None:
    shown = texts(messages.approval(request()).blocks)
    assert "*Manifests*: 2 created, 1 configured, 2 deleted, 1 unchanged" in shown
    assert "Created: `Deployment/api-r8`, `Service/api-r8`" in shown
    assert "Configured: `Service/api`" in shown
    assert "Deleted: `Deployment/api-r7`, `Service/api-r7`" in shown
    unavailable = ManifestDiff(unavailable="the manifests could not be rendered: boom")
    assert "*Manifests*: no summary (the manifests could not be rendered: boom)" in texts(
        messages.approval(request(manifests=unavailable)).blocks
    )


def test_the_request_links_to_the_status_page() -> None:
    shown = texts(messages.approval(request()).blocks)
    assert f"<{URL}|Open on the status page>" in shown
    assert "Expires 2026-01-06 12:00 UTC" in shown


def test_values_from_nebula_toml_cannot_ping_or_link() -> None:
    lines = (Line("api", "variable-set", "variables.X", None, "<!channel> <https://x|y>"),)
    shown = texts(messages.approval(request(lines=lines)).blocks)
    assert "<!channel>" not in shown
    assert "&lt;!channel&gt; &lt;https://x|y&gt;" in shown


@pytest.mark.parametrize(
    ("decision", "header", "line"),
    [
        (
            Decision("approved", "alice", "slack", AT, None),
            "Approved: shop/production",
            ":white_check_mark: *Approved* by *alice* in Slack at 2026-01-05 12:00 UTC",
        ),
        (
            Decision("rejected", "bob", "cli", AT, "not on a Friday"),
            "Rejected: shop/production",
            ":x: *Rejected* by *bob* with the CLI at 2026-01-05 12:00 UTC: not on a Friday",
        ),
        (
            Decision(
                "expired", None, "expiry", AT, "Approval expired after 24h without a decision"
            ),
            "Expired: shop/production",
            ":hourglass: *Expired* at 2026-01-05 12:00 UTC: Approval expired after 24h without a decision",
        ),
        (
            Decision(
                "cancelled", "project:shop", None, AT, "Replaced by the change set from 1234567"
            ),
            "Cancelled: shop/production",
            ":no_entry_sign: *Cancelled* at 2026-01-05 12:00 UTC: Replaced by the change set from 1234567",
        ),
    ],
)
def test_a_decided_request_shows_who_and_when_instead_of_buttons(
    decision: Decision, header: str, line: str
) -> None:
    message = messages.approval(request(decision=decision))
    assert not [b for b in message.blocks if b["type"] == "actions"]
    assert message.blocks[0]["text"]["text"] == header
    assert message.blocks[-1] == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": line},
        "block_id": "nebula_decision",
    }


def test_a_failure_says_blocker_message_and_what_keeps_serving() -> None:
    failure = Failure(
        deployment_id=41,
        project="shop",
        environment="production",
        service="api",
        release="r-8",
        kind="deploy",
        blocker="readiness",
        message="api r-8 was not ready within 5m. r-7 keeps serving.",
        keeps_serving="r-7",
        url="https://nebula.example.com/deployments/41",
    )
    message = messages.failure(failure)
    shown = texts(message.blocks)
    assert message.text == "shop/production: api r-8 failed (readiness). R-7 keeps serving."
    assert message.blocks[0]["text"]["text"] == "Deployment failed: api r-8 in shop/production"
    assert "api r-8 was not ready within 5m. r-7 keeps serving." in shown
    assert "*Blocker*\n`readiness`" in shown
    assert "*Keeps serving*\nr-7" in shown
    assert "*Deployment*\n<https://nebula.example.com/deployments/41|#41>" in shown
    first = messages.failure(replace(failure, keeps_serving=None))
    assert "*Keeps serving*\nnothing (no release was serving)" in texts(first.blocks)
    assert first.text.endswith("Nothing was serving.")


def test_a_project_blocker_and_its_recovery() -> None:
    blocked = ProjectState(
        "shop", "configuration", "nebula.toml at 1234567 is invalid: x", "1234567" + "0" * 33
    )
    message = messages.project_state(replace(blocked, url="https://n.example/projects/shop"))
    assert message.text == "shop is blocked (configuration): nebula.toml at 1234567 is invalid: x"
    assert "Commit `1234567`" in texts(message.blocks)
    recovered = messages.project_state(
        replace(blocked, recovered=True, message="nebula.toml at 89abcde is valid again")
    )
    assert recovered.text == "shop recovered: nebula.toml at 89abcde is valid again"
    assert recovered.blocks[0]["text"]["text"] == "shop recovered from its configuration blocker"
