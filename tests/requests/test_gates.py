"""Promotion gates on pushes (behaviour.md "Promotion gates"): production takes a new image
(or database version) only once staging proved it; a fake clock stands in for the soak."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from notifiers import gathering, messages
from reconciler import bootstrap
from reconciler.core.states import Blocker
from reconciler.store import schema
from tests.engine.projects import BROKEN_DB_VERSION, FAULTS_TOML, broken
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, nebula_with
from tests.requests.gating import (
    API_2,
    SOAK,
    deployed,
    gated,
    healthy_at,
    in_env,
    last_healthy,
    members,
    production_changeset,
    push,
)
from tests.web.world import ThreadedServer


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Nebula]:
    faults = tmp_path / "faults.toml"
    faults.write_text(FAULTS_TOML, encoding="utf-8")
    yield from nebula_with(tmp_path, simulated_faults=str(faults))


def verified(service: str, release: str, since: str, lasted: str) -> str:
    return f"Verified in staging: {service} {release} healthy since {since} UTC ({lasted})"


def test_production_waits_for_staging_then_asks_for_approval_with_the_evidence(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    members(nebula)
    git_repo.commit({"nebula.toml": gated()}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    waiting = production_changeset(nebula)
    assert waiting["state"] == "draft"
    # The first line in dependency order speaks: the database.
    assert waiting["gate"] == {
        "environment": "staging",
        "soak": "30m",
        "state": "waiting",
        "message": "Waiting for db to be healthy in staging",
    }
    assert waiting["message"] == "Waiting for db to be healthy in staging"
    assert nebula.approvals() == []
    assert in_env(nebula.deployments(), "production") == []

    nebula.settle()  # staging goes healthy: production soaks
    nebula.clock.set(healthy_at(nebula, "db", "r-1") + SOAK / 2.5)
    assert nebula.ok("reconcile --until-idle --timeout 5").code == 0  # a soak is not waited out
    waiting = production_changeset(nebula)
    assert (waiting["state"], waiting["gate"]["message"]) == (
        "draft",
        "Waiting for db r-1 in staging: healthy for 12m of 30m",
    )
    assert (
        "gate: waiting (staging, soak 30m): Waiting for db r-1 in staging: healthy for 12m of 30m"
        in nebula.ok(f"changeset show {waiting['id']}").out
    )
    assert nebula.approvals() == []

    nebula.clock.set(last_healthy(nebula) + SOAK)
    nebula.reconcile()
    passed = production_changeset(nebula)
    assert passed["state"] == "pending-approval"
    since = nebula.clock.now() - SOAK
    stamp = since.strftime("%Y-%m-%d %H:%M")
    evidence = [verified(s, "r-1", stamp, "30m") for s in ("db", "api", "worker")]
    assert passed["gate"] == {
        "environment": "staging",
        "soak": "30m",
        "state": "passed",
        "message": evidence[0],
    }
    assert passed["evidence"] == evidence
    (approval,) = nebula.approvals()
    assert (approval["target_id"], approval["evidence"]) == (passed["id"], evidence)
    listed = nebula.ok("approvals").out
    assert f"  approval {approval['id']}: {evidence[1]}\n" in listed
    assert f"  {evidence[2]}\n" in nebula.ok(f"changeset show {passed['id']}").out
    with nebula.ctx.db.transaction() as session:
        row = session.get(schema.Approval, int(approval["id"]))
        assert row is not None
        slack = messages.approval(gathering.approval_request(session, nebula.ctx.settings, row))
    assert all(e in json.dumps(slack.blocks) for e in evidence)
    assert evidence[0] in slack.text
    with ThreadedServer(nebula.ctx) as server, httpx.Client(base_url=server.url) as client:
        project_page = client.get("/projects/shop").text
        changeset_page = client.get(f"/changesets/{passed['id']}").text
    assert all(f'<p class="evidence">{e}</p>' in project_page for e in evidence)
    assert f"staging, soak 30m: {evidence[0]}" in changeset_page
    production = in_env(nebula.deployments(), "production")
    assert [(d["service"], d["state"]) for d in production] == [
        ("db", "awaiting-approval"),
        ("api", "awaiting-approval"),
        ("worker", "awaiting-approval"),
    ]


def test_a_failed_image_in_staging_fails_the_waiting_change_set(
    faulty: Nebula, git_repo: GitRepo
) -> None:
    deployed(faulty, git_repo)
    push(faulty, git_repo, gated(api=broken(Blocker.IMAGE_PULL)))
    assert production_changeset(faulty)["gate"]["message"] == (
        "Waiting for api to be healthy in staging"
    )
    faulty.settle()
    failed = production_changeset(faulty)
    message = "Not requested: api r-2 failed in staging (image-pull). Fix it in staging first."
    assert (failed["state"], failed["message"], failed["gate"]["state"]) == (
        "failed",
        message,
        "failed",
    )
    assert failed["gate"]["message"] == message
    assert [a for a in faulty.approvals() if a["state"] == "pending"] == []
    assert len(in_env(faulty.deployments(), "production")) == 3  # the first version only
    shown = faulty.ok(f"changeset show {failed['id']}").out
    assert f"  {message}\n" in shown


def test_a_cancelled_deployment_in_staging_fails_it_too(nebula: Nebula, git_repo: GitRepo) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    staging = in_env(nebula.deployments(), "staging")[-1]
    nebula.ok(f"cancel {staging['id']} --as bo")
    nebula.reconcile()
    failed = production_changeset(nebula)
    assert (failed["state"], failed["message"]) == (
        "failed",
        "Not requested: api r-2 cancelled in staging. Fix it in staging first.",
    )


def test_a_newer_push_replaces_a_waiting_change_set(nebula: Nebula, git_repo: GitRepo) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    waiting = production_changeset(nebula)
    assert waiting["gate"]["state"] == "waiting"
    git_repo.commit(
        {"nebula.toml": gated({'LOG_LEVEL = "info"': 'LOG_LEVEL = "debug"'}, api=API_2)}
    )
    sha = git_repo.repo.head.target
    nebula.reconcile()
    replaced = nebula.json(f"changeset show {waiting['id']}")["changeset"]
    assert (replaced["state"], replaced["note"]) == (
        "discarded",
        f"Replaced by the change set from {str(sha)[:7]}",
    )
    assert production_changeset(nebula)["gate"]["state"] == "waiting"


def test_applying_a_waiting_change_set_by_hand_is_refused(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    waiting = production_changeset(nebula)
    refused = nebula.cli(f"changeset apply {waiting['id']} --as bo")
    assert (refused.code, refused.err) == (
        1,
        f"error: Change set {waiting['id']} not applied: "
        "Waiting for api to be healthy in staging\n",
    )
    assert production_changeset(nebula)["state"] == "draft"
    assert [a for a in nebula.approvals() if a["state"] == "pending"] == []


def test_lines_of_this_environments_settings_are_not_gated(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated({'LOG_LEVEL = "info"': 'LOG_LEVEL = "debug"'}))
    staged = production_changeset(nebula)
    assert staged["state"] == "pending-approval"
    assert (staged["gate"]["state"], staged["gate"]["message"]) == (
        "passed",
        "No new image or database version to verify",
    )
    # Its approval still shows what staging proved of the image it runs.
    assert [e.split(" healthy since ")[0] for e in staged["evidence"]] == [
        "Verified in staging: api r-1"
    ]


def test_a_database_version_is_gated_like_an_image(faulty: Nebula, git_repo: GitRepo) -> None:
    deployed(faulty, git_repo)
    push(faulty, git_repo, gated({'version = "16"': f'version = "{BROKEN_DB_VERSION}"'}))
    waiting = production_changeset(faulty)
    assert [line["field"] for line in waiting["lines"]] == ["version"]
    assert waiting["gate"]["message"] == "Waiting for db to be healthy in staging"
    faulty.settle()
    assert production_changeset(faulty)["message"] == (
        "Not requested: db r-2 failed in staging (image-pull). Fix it in staging first."
    )


def test_a_change_set_waiting_through_a_restart_goes_on_by_itself(
    tmp_path: Path, nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    nebula.settle()
    assert production_changeset(nebula)["gate"]["state"] == "waiting"
    nebula.ctx.db.dispose()
    settings = nebula.ctx.settings
    again = Nebula(bootstrap.open_context(settings, nebula.clock), nebula.clock, tmp_path)
    try:
        again.clock.set(healthy_at(again, "api", "r-2") + SOAK)
        again.reconcile()
        passed = production_changeset(again)
        assert (passed["state"], passed["gate"]["state"]) == ("pending-approval", "passed")
        assert re.fullmatch(
            r"Verified in staging: api r-2 healthy since \S+ \S+ UTC \(30m\)",
            passed["gate"]["message"],
        )
    finally:
        again.ctx.db.dispose()


def test_a_newer_release_in_staging_does_not_undo_the_proof(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    nebula.settle()
    proven_at = healthy_at(nebula, "api", "r-2")
    nebula.clock.set(proven_at + SOAK)
    nebula.reconcile()
    assert production_changeset(nebula)["state"] == "pending-approval"
    # The same image again, as a new release in staging (a variable changed): production's
    # new change set needs no new soak, r-2's half hour proved the image.
    push(nebula, git_repo, gated({'LOG_LEVEL = "info"': 'LOG_LEVEL = "debug"'}, api=API_2))
    nebula.settle()
    staged = production_changeset(nebula)
    assert staged["state"] == "pending-approval"
    stamp = proven_at.strftime("%Y-%m-%d %H:%M")
    assert staged["gate"]["message"].startswith(
        f"Verified in staging: api r-2 healthy since {stamp} UTC (30m"
    )


def test_the_same_digest_pulled_from_a_mirror_is_the_image_staging_proved(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    """behaviour.md: "that exact image (same digest)": production pulls api from its own
    mirror, by the digest staging ran; a different digest there would wait."""
    mirrored = API_2.replace("registry.example.com", "mirror.internal")
    override = f'\n[services.api.environments.production]\nimage = "{mirrored}"\n'
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2) + override)
    nebula.settle()
    nebula.clock.set(healthy_at(nebula, "api", "r-2") + SOAK)
    nebula.reconcile()

    staged = production_changeset(nebula)
    assert (staged["state"], staged["gate"]["state"]) == ("pending-approval", "passed")
    assert staged["gate"]["message"].startswith("Verified in staging: api r-2 healthy since")
