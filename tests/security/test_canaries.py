"""No secret value reaches anything a user or an operator can see.

One flow (``flow.py``) seeds a canary of every kind of secret Nebula holds and records every
output; each test greps one kind of output for every canary (and its base64 form).
"""

from __future__ import annotations

import pytest

from tests.security.installation import Recorded
from tests.security.world import leaks


def _clean(recorded: Recorded, *kinds: str, allow: tuple[str, ...] = ()) -> int:
    seen = recorded.outputs.of(*kinds)
    assert seen, f"nothing recorded for {kinds}: the flow did not run as planned"
    needles = {k: v for k, v in recorded.canaries.needles().items() if k.split(" ")[0] not in allow}
    found = leaks(seen, needles)
    assert not found, "\n".join(found[:20])
    return len(seen)


def test_the_flow_seeded_every_kind_of_canary(recorded: Recorded) -> None:
    assert set(recorded.canaries.learnt) == {
        "alice_token",
        "bob_token",
        "olga_token",
        "database_password",
    }
    assert recorded.slack_calls > 0
    assert recorded.pages >= 10 and recorded.api_documents >= 10
    assert recorded.serve_polled, "nebula serve did not poll the pushed commit"
    # The canaries were really in use: the protected git servers were reached with them.
    assert recorded.projects["shop"]["commit"] and recorded.projects["blog"]["commit"]


def test_cli_output_never_shows_a_secret(recorded: Recorded) -> None:
    cli = recorded.outputs.of("cli")
    tokens = recorded.canaries.learnt
    # ``nebula token create`` prints its token once, by design: only there, and only its own.
    created = [
        s for s in cli if s.where.startswith("nebula token create") and "(stdout)" in s.where
    ]
    assert [any(t in s.text for t in tokens.values()) for s in created] == [True, True, True]
    rest = [s for s in cli if s not in created]
    found = leaks(rest, recorded.canaries.needles())
    found += leaks(
        created,
        {k: v for k, v in recorded.canaries.needles().items() if not k.endswith("_token")},
    )
    assert not found, "\n".join(found[:20])


def test_log_records_at_debug_never_hold_a_secret(recorded: Recorded) -> None:
    assert _clean(recorded, "log") > 50


def test_the_served_log_at_debug_never_holds_a_secret(recorded: Recorded) -> None:
    _clean(recorded, "serve-log")


@pytest.mark.parametrize("kind", ["http", "serve-http"])
def test_pages_and_api_answers_never_show_a_secret(recorded: Recorded, kind: str) -> None:
    assert _clean(recorded, kind) > 20


def test_slack_requests_never_carry_a_secret(recorded: Recorded) -> None:
    _clean(recorded, "slack")


def test_the_store_holds_secrets_only_encrypted(recorded: Recorded) -> None:
    """Events, change set lines, deployments, approvals, projects (repository URLs with a
    password in them included), outbox, api_tokens...: every column of every table but the
    encrypted secrets and the simulated cluster's own objects (which, like a real cluster's
    Secrets, hold the values)."""
    tables = {where.split(".")[0] for where, _ in recorded.store_dump}
    assert {"events", "changeset_lines", "deployments", "approvals", "outbox"} <= tables
    store = recorded.outputs.of("store")
    urls = [s.text for s in store if s.where.startswith("projects.repo_url#")]
    assert any("***@" in url for url in urls), urls  # the URL with a password is there, masked
    found = leaks(store, recorded.canaries.needles())
    assert not found, "\n".join(found[:20])


def test_rendered_manifests_show_placeholders_not_secrets(recorded: Recorded) -> None:
    _clean(recorded, "render")
    secrets = [s for s in recorded.outputs.of("render") if "Secret" in s.text]
    assert secrets and all(
        "<secret STRIPE_KEY" in s.text or "<generated" in s.text for s in secrets
    )
