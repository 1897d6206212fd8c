"""Suspend and resume (behaviour.md): who may, what a suspension holds back (change sets stay
drafts with the note, no approval, apply/redeploy/promote refused, self-heal stops), what it
does not (polls, rollbacks, deployments in flight), what resuming lets go on, and the events."""

from __future__ import annotations

import pytest

from reconciler.store.events import EventKind
from tests.engine.livestate import STAGING, deployed, later, live_events, text
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

WARN = {'LOG_LEVEL = "info"': 'LOG_LEVEL = "warn"'}


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    deployed(nebula, git_repo)
    return nebula


def note(nebula: Nebula, who: str = "alice", reason: str = "incident 42") -> str:
    """The note of a suspension made now."""
    return f"Suspended by {who} at {nebula.clock.now():%Y-%m-%d %H:%M} UTC: {reason}"


def suspensions(nebula: Nebula) -> list[tuple[str, str | None, str | None]]:
    return [
        (e.kind, e.message, e.actor)
        for e in nebula.events()
        if e.kind in (EventKind.SUSPEND, EventKind.RESUME)
    ]


def newest(nebula: Nebula, env: str) -> dict[str, object]:
    return [c for c in nebula.changesets() if c["environment"] == env][-1]


@pytest.mark.parametrize("who", ["mia", "nobody"])
def test_only_an_admin_or_owner_suspends_or_resumes(shop: Nebula, who: str) -> None:
    if who == "nobody":
        assert shop.cli("suspend shop --reason x --as nobody").code == 1
        return
    for command in (
        "suspend shop --env production --reason 'incident 42' --as mia",
        "resume shop --env production --as mia",
    ):
        result = shop.cli(command)
        assert result.code == 1
        assert result.err == (
            "error: mia may not suspend or resume projects: needs the admin role (mia is a member)\n"
        )
    assert shop.status()["environments"][1]["suspended"] is None
    assert suspensions(shop) == []


def test_a_suspended_environment_stages_drafts_and_asks_for_nothing(
    shop: Nebula, git_repo: GitRepo
) -> None:
    approvals = len(shop.approvals())
    held_note, at = note(shop), shop.clock.now()
    shop.ok("suspend shop --env production --reason 'incident 42' --as alice")
    status = shop.status()
    assert status["suspended"] is None
    assert status["environments"][1]["suspended"] == {
        "by": "alice",
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "reason": "incident 42",
    }
    assert status["environments"][0]["suspended"] is None

    git_repo.commit({"nebula.toml": text(WARN)}, "Warn")
    shop.settle()

    held = newest(shop, "production")
    assert (held["state"], held["note"]) == ("draft", held_note)
    assert len(shop.approvals()) == approvals  # no approval requested
    assert newest(shop, "staging")["state"] == "applied"  # staging is not suspended
    assert shop.unit("staging", "api")["active_release"] == "r-2"

    refused = shop.cli(f"changeset apply {held['id']} --as alice")
    assert (refused.code, refused.err) == (
        1,
        f"error: Change set {held['id']} not applied: {held_note}\n",
    )
    redeploy = shop.cli("redeploy shop api --env production --as alice")
    assert redeploy.code == 1
    assert redeploy.err == (
        f"error: {held_note}\nhint: an admin resumes it with: nebula resume shop --env production "
        "--as NAME\n"
    )
    promote = shop.cli("promote shop api --from staging --to production --as alice")
    assert (promote.code, promote.err.splitlines()[0]) == (1, f"error: {held_note}")
    assert newest(shop, "production")["state"] == "draft"


def test_rollbacks_stay_allowed_and_deployments_in_flight_finish(
    shop: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": text(WARN)}, "Warn")
    shop.settle()
    (pending,) = [a for a in shop.approvals() if a["state"] == "pending"]
    shop.ok(f"approve {pending['id']} --as alice")
    shop.reconcile()  # production's r-2 starts...
    in_flight = [
        d
        for d in shop.deployments()
        if d["environment"] == "production" and d["finished_at"] is None
    ]
    assert in_flight

    shop.ok("suspend shop --reason 'incident 42' --as alice")  # ... and the project is suspended
    shop.settle()
    states = {shop.json(f"deployment show {d['id']}")["deployment"]["state"] for d in in_flight}
    assert states == {"healthy"}

    result = shop.json("rollback shop api --env production --to r-1 --as alice")
    assert result["deployment"]["kind"] == "rollback"
    shop.ok(f"approve {result['approval']['id']} --as bob")  # production is protected
    shop.settle()
    assert shop.unit("production", "api")["active_release"] == "r-1"


def test_resuming_lets_the_newest_draft_go_on_by_the_normal_rules(
    shop: Nebula, git_repo: GitRepo
) -> None:
    held_note = note(shop)
    shop.ok("suspend shop --env production --reason 'incident 42' --as alice")
    git_repo.commit({"nebula.toml": text(WARN)}, "Warn")
    shop.settle()
    git_repo.commit({"nebula.toml": text({'LOG_LEVEL = "info"': 'LOG_LEVEL = "error"'})}, "Error")
    shop.settle()
    held = newest(shop, "production")
    assert (held["state"], held["note"]) == ("draft", held_note)

    resumed = shop.json("resume shop --env production --as bob")

    assert resumed["suspended"] is None and resumed["environment"] == "production"
    assert [c["id"] for c in resumed["changesets"]] == [held["id"]]
    after = newest(shop, "production")
    assert (after["id"], after["state"], after["note"]) == (held["id"], "pending-approval", None)
    (pending,) = [a for a in shop.approvals() if a["state"] == "pending"]
    assert pending["target_id"] == held["id"]
    assert resumed["changesets"][0]["approval_id"] == str(pending["id"])
    assert suspensions(shop) == [
        ("suspend", "Suspended shop/production: incident 42", "alice"),
        ("resume", "Resumed shop/production", "bob"),
    ]
    audited = [
        (e["actor"], e["action"], e["target"], e["message"])
        for e in shop.json("audit")["events"]
        if e["action"] in ("suspend", "resume")
    ]
    assert audited == [
        ("alice", "suspend", "shop/production", "Suspended shop/production: incident 42"),
        ("bob", "resume", "shop/production", "Resumed shop/production"),
    ]


def test_a_project_suspension_holds_every_environment_until_it_is_resumed(
    shop: Nebula, git_repo: GitRepo
) -> None:
    held_note = note(shop)
    shop.ok("suspend shop --reason 'incident 42' --as alice")
    status = shop.status()
    assert status["suspended"]["reason"] == "incident 42"
    # each environment is held by it, and says so
    assert [e["suspended"] for e in status["environments"]] == [status["suspended"]] * 2
    git_repo.commit({"nebula.toml": text(WARN)}, "Warn")
    shop.settle()
    assert {newest(shop, env)["note"] for env in ("staging", "production")} == {held_note}

    not_own = shop.cli("resume shop --env staging --as alice")
    assert not_own.code == 1
    assert not_own.err == f"error: shop/staging is not suspended (its project is: {held_note})\n"
    again = shop.cli("suspend shop --reason other --as bob")
    assert again.code == 1 and "already suspended" in again.err

    shop.ok("resume shop --as alice")
    shop.settle()
    assert newest(shop, "staging")["state"] == "applied"
    assert shop.unit("staging", "api")["active_release"] == "r-2"
    assert newest(shop, "production")["state"] == "pending-approval"


def test_an_approval_waiting_when_suspended_is_refused_until_resumed(
    shop: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": text(WARN)}, "Warn")
    shop.settle()
    (pending,) = [a for a in shop.approvals() if a["state"] == "pending"]
    held_note = note(shop)
    shop.ok("suspend shop --env production --reason 'incident 42' --as alice")

    refused = shop.cli(f"approve {pending['id']} --as bob")
    assert (refused.code, refused.err) == (
        1,
        f"error: {held_note}\nhint: an admin resumes it with: nebula resume shop --env production "
        "--as NAME\n",
    )
    shop.settle()
    (still,) = [a for a in shop.approvals() if a["id"] == pending["id"]]
    assert still["state"] == "pending"
    assert newest(shop, "production")["state"] == "pending-approval"
    assert shop.unit("production", "api")["active_release"] == "r-1"  # nothing applied

    shop.ok("resume shop --env production --as alice")
    shop.ok(f"approve {pending['id']} --as bob")
    shop.settle()
    assert shop.unit("production", "api")["active_release"] == "r-2"


def test_self_heal_stops_while_suspended_and_drift_is_still_shown(shop: Nebula) -> None:
    shop.ok("suspend shop --env staging --reason 'incident 42' --as alice")
    shop.ok(f"simulated edit {STAGING} Deployment/api-r1 spec.replicas 5")
    later(shop)
    assert shop.unit("staging", "api")["sync"] == "drifted"
    assert [kind for kind, _, _ in live_events(shop)] == ["unit.drift"]

    shop.ok("resume shop --env staging --as alice")
    later(shop)
    assert shop.unit("staging", "api")["sync"] == "synced"
    assert [message for _, message, _ in live_events(shop)][1:] == [
        "Self-heal: re-applied Deployment/api-r1 (spec.replicas 5 -> 2)",
        "Drift cleared",
    ]


def test_a_suspension_needs_a_reason(shop: Nebula) -> None:
    assert shop.cli("suspend shop --as alice").code == 2  # --reason is required
    blank = shop.cli("suspend shop --reason '  ' --as alice")
    assert (blank.code, blank.err.splitlines()[0]) == (1, "error: a suspension needs a reason")
