"""Approvals and policies (behaviour.md "Approvals and policies"), on every path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.gitops.shop import BASE, with_log_level
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

ONLY_ADMIN = (
    "Waiting for approval, but no one else in this organization can approve it: your policy "
    "forbids approving your own deploys and you are its only admin."
)


@pytest.fixture
def live(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    """A shop with staging and production healthy at r-1, decided by ada (admin)."""
    git_repo.commit({"nebula.toml": BASE})
    nebula.ok("member add ada --role admin")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    pending = [a for a in nebula.approvals() if a["state"] == "pending"]
    assert len(pending) == 1
    assert serving_once_approved(nebula, pending[0]["id"], "ada") == "r-1"
    return nebula


def pending(nebula: Nebula) -> list[dict[str, object]]:
    return [a for a in nebula.approvals() if a["state"] == "pending"]


def pushed_and_pending(nebula: Nebula, git_repo: GitRepo) -> dict[str, object]:
    """A push (LOG_LEVEL debug) polled, and the one approval it waits for."""
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "debug")
    nebula.reconcile()
    [approval] = pending(nebula)
    return approval


def serving_once_approved(nebula: Nebula, approval_id: object, decider: str) -> str:
    """The release production's api serves once ``decider`` approved and everything settled."""
    nebula.ok(f"approve {approval_id} --as {decider}")
    nebula.settle()
    return str(nebula.unit("production", "api")["active_release"])


def test_a_push_to_production_waits_for_one_approval_for_the_change_set(
    live: Nebula, git_repo: GitRepo
) -> None:
    approval = pushed_and_pending(live, git_repo)
    assert approval["target"] == "changeset"
    assert approval["kind"] == "changeset"
    assert approval["requested_by"] == "shop"
    api = live.unit("production", "api")["deployment"]
    assert api["state"] == "awaiting-approval"
    assert api["message"] == "Waiting for approval"
    assert serving_once_approved(live, approval["id"], "ada") == "r-2"
    decided = next(a for a in live.approvals() if a["id"] == approval["id"])
    assert (decided["state"], decided["decided_by"], decided["decided_via"]) == (
        "approved",
        "ada",
        "cli",
    )


def test_reject_ends_the_change_set_and_its_deployments_rejected(
    live: Nebula, git_repo: GitRepo
) -> None:
    approval = pushed_and_pending(live, git_repo)
    out = live.ok(f"reject {approval['id']} --as ada --reason not-today --json").json
    assert out["approval"]["state"] == "rejected"
    assert out["approval"]["reason"] == "not-today"
    changeset = live.json(f"changeset show {approval['target_id']}")["changeset"]
    assert changeset["state"] == "rejected"
    api = live.unit("production", "api")
    assert api["active_release"] == "r-1"
    assert api["deployment"]["state"] == "rejected"
    assert api["deployment"]["message"] == "Rejected by ada: not-today"


def test_only_admins_and_owners_decide(live: Nebula, git_repo: GitRepo) -> None:
    live.ok("member add mo --role member")
    approval = pushed_and_pending(live, git_repo)
    refused = live.cli(f"approve {approval['id']} --as mo")
    assert refused.code == 1
    assert refused.err == (
        "error: mo may not approve in shop/production: needs the approve grant or the admin role\n"
        "hint: an admin can grant it: nebula grant add mo approve --project shop --env production\n"
    )
    unknown = live.cli(f"approve {approval['id']} --as nobody")
    assert (unknown.code, unknown.err) == (
        1,
        "error: No member named 'nobody'\n"
        "hint: add one with: nebula member add nobody --role admin\n",
    )
    assert pending(live) == [approval]


def test_a_request_by_the_only_admin_says_no_one_else_can_approve(live: Nebula) -> None:
    out = live.ok("redeploy shop api --env production --as ada --json").json
    assert out["deployment"]["state"] == "awaiting-approval"
    assert out["deployment"]["message"] == ONLY_ADMIN
    assert out["approval"]["state"] == "pending"
    own = live.cli(f"approve {out['approval']['id']} --as ada")
    assert own.code == 1
    assert own.err == (
        "error: Your policy forbids approving your own deploys: someone else must approve this request.\n"
        "hint: no one else can approve it: an admin can grant it to someone (nebula grant add NAME "
        "approve --project shop --env production), or turn the policy off "
        "(nebula policy set forbid_self_approval false)\n"
    )
    live.ok("member add cy --role member")  # cannot approve: nothing changes
    assert live.unit("production", "api")["deployment"]["message"] == ONLY_ADMIN
    live.ok("member add bo --role owner")
    assert live.unit("production", "api")["deployment"]["message"] == "Waiting for approval"
    assert serving_once_approved(live, out["approval"]["id"], "bo") == "r-2"


def test_allowing_self_approval_updates_what_a_waiting_request_says(live: Nebula) -> None:
    out = live.ok("redeploy shop api --env production --as ada --json").json
    assert out["deployment"]["message"] == ONLY_ADMIN
    live.ok("policy set forbid_self_approval false")
    assert live.unit("production", "api")["deployment"]["message"] == "Waiting for approval"
    assert serving_once_approved(live, out["approval"]["id"], "ada") == "r-2"


def test_requester_can_decide_when_self_approval_is_allowed(live: Nebula) -> None:
    live.ok("policy set forbid_self_approval false")
    out = live.ok("redeploy shop api --env production --as ada --json").json
    assert out["deployment"]["state"] == "pending"
    assert out["approval"]["state"] == "approved"
    assert out["approval"]["rule"] == "requester-can-decide"
    assert out["approval"]["decided_by"] == "ada"


def test_rollbacks_skip_approval(live: Nebula) -> None:
    live.ok("policy set forbid_self_approval false")
    live.ok("redeploy shop api --env production --as ada")
    live.settle()
    live.ok("policy set forbid_self_approval true")
    live.ok("member add mo --role member")
    live.ok("grant add mo deploy --project shop --env production")  # may roll back there
    waiting = live.ok("rollback shop api --env production --as mo --json").json
    assert waiting["deployment"]["state"] == "awaiting-approval"
    live.ok(f"cancel {waiting['deployment']['id']} --as mo")  # who asked for it may
    live.ok("policy set rollbacks_skip_approval true")
    out = live.ok("rollback shop api --env production --as mo --json").json
    assert out["approval"]["rule"] == "rollbacks-skip-approval"
    assert out["deployment"]["release"] == "r-1"
    assert out["deployment"]["kind"] == "rollback"
    live.settle()
    assert live.unit("production", "api")["active_release"] == "r-1"


def test_skip_production_approval_covers_pushes_when_self_approval_is_allowed(
    live: Nebula, git_repo: GitRepo
) -> None:
    live.ok("member add mo --role member")
    refused = live.cli(
        "service set shop api --env production skip_production_approval true --as mo"
    )
    assert (refused.code, refused.err) == (
        1,
        "error: mo may not change service settings: needs the admin role (mo is a member)\n",
    )
    live.ok("service set shop api --env production skip_production_approval true --as ada")
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "debug")
    live.reconcile()
    # Self-approval is forbidden (the default), so the rule does not apply.
    assert len(pending(live)) == 1
    live.ok("policy set forbid_self_approval false")
    git_repo.commit({"nebula.toml": with_log_level("warn")}, "warn")
    live.reconcile()
    latest = live.approvals()[-1]
    assert (latest["state"], latest["rule"]) == ("approved", "skip-production-approval")
    assert latest["requested_by"] == "shop"


def test_a_change_set_passes_by_skip_only_when_every_service_has_it(
    live: Nebula, git_repo: GitRepo
) -> None:
    live.ok("policy set forbid_self_approval false")
    live.ok("service set shop api --env production skip_production_approval true --as ada")
    both = with_log_level("debug").replace('API_URL = "http://', 'EXTRA = "1"\nAPI_URL = "http://')
    git_repo.commit({"nebula.toml": both}, "touch api and worker")
    live.reconcile()
    latest = live.approvals()[-1]
    assert latest["state"] == "pending"


def test_approving_ends_older_pending_requests_for_the_same_service(live: Nebula) -> None:
    live.ok("member add bo --role admin")
    first = live.ok("redeploy shop api --env production --as ada --json").json
    # Another request for api (a repeat of the first would be the first: test_repeated_requests)
    second = live.ok("promote shop api --from staging --to production --as ada --json").json
    out = live.ok(f"approve {second['approval']['id']} --as bo --json").json
    assert out["ended"] == [
        {"id": first["deployment"]["id"], "service": "api", "release": "r-2", "state": "superseded"}
    ]
    older = next(a for a in live.approvals() if a["id"] == first["approval"]["id"])
    assert older["state"] == "cancelled"
    shown = live.json(f"deployment show {first['deployment']['id']}")["deployment"]
    assert (shown["state"], shown["message"]) == ("superseded", "Superseded by r-3")


def test_a_change_set_whose_deployment_is_superseded_is_discarded_and_staged_again(
    live: Nebula, git_repo: GitRepo
) -> None:
    """A redeploy approved while a push's change set waits: that change set can no longer be
    applied as staged, so it ends with its approval, and the next push proposes it again."""
    live.ok("member add bo --role admin")
    waiting = pushed_and_pending(live, git_repo)
    changeset = next(c for c in live.changesets() if c["id"] == waiting["target_id"])
    staged = next(d for d in live.deployments() if d["state"] == "awaiting-approval")
    redeploy = live.ok("redeploy shop api --env production --as ada --json").json
    out = live.ok(f"approve {redeploy['approval']['id']} --as bo --json").json
    assert [e["id"] for e in out["ended"]] == [staged["id"]]

    note = (
        f"Discarded: its deployment of api {staged['release']} ended superseded "
        f"(Superseded by {redeploy['deployment']['release']})"
    )
    ended = next(c for c in live.changesets() if c["id"] == changeset["id"])
    assert (ended["state"], ended["message"]) == ("discarded", note)
    closed = next(a for a in live.approvals() if a["id"] == waiting["id"])
    assert closed["state"] == "cancelled"
    late = live.cli(f"approve {waiting['id']} --as bo")
    assert (
        late.code,
        late.err.startswith(f"error: Approval {waiting['id']} is already cancelled"),
    ) == (1, True)
    live.settle()

    git_repo.commit({"nebula.toml": with_log_level("debug") + "\n# a comment\n"}, "again")
    live.reconcile()
    [again] = [c for c in live.changesets() if c["state"] == "pending-approval"]
    assert again["environment"] == "production"
    assert [(ln["service"], ln["field"], ln["after"]) for ln in again["lines"]] == [
        ("api", "variables.LOG_LEVEL", "debug")
    ]


def test_an_undecided_approval_expires_and_cancels_its_target(
    live: Nebula, git_repo: GitRepo
) -> None:
    approval = pushed_and_pending(live, git_repo)
    live.clock.advance(hours=23, minutes=59)
    live.reconcile()
    assert len(pending(live)) == 1
    live.clock.advance(minutes=2)
    live.reconcile()
    expired = next(a for a in live.approvals() if a["id"] == approval["id"])
    assert expired["state"] == "expired"
    assert expired["reason"] == "Approval expired after 24h without a decision"
    api = live.unit("production", "api")["deployment"]
    assert (api["state"], api["message"]) == (
        "cancelled",
        "Approval expired after 24h without a decision",
    )
    late = live.cli(f"approve {approval['id']} --as ada")
    assert late.code == 1
    assert late.err.startswith(f"error: Approval {approval['id']} is already expired")


def _saturday(nebula: Nebula) -> None:
    nebula.clock.set(datetime(2026, 1, 10, 12, 0, tzinfo=UTC))  # a Saturday


def test_a_freeze_refuses_production_deploys_at_once_and_allows_rollbacks(live: Nebula) -> None:
    live.ok("policy set forbid_self_approval false")
    live.ok("redeploy shop api --env production --as ada")
    live.settle()
    live.ok("freeze add --days sat,sun --from 00:00 --to 24:00 --tz Europe/Berlin")
    _saturday(live)
    frozen = (
        "Deploys to protected environments are frozen until Mon 2026-01-12 00:00 (Europe/Berlin)."
    )
    refused = live.cli("redeploy shop api --env production --as ada")
    assert (refused.code, refused.err) == (1, f"error: {frozen}\n")
    # Staging is not protected: it is not frozen.
    live.ok("redeploy shop api --env staging --as ada")
    # Rollbacks stay allowed.
    live.ok("rollback shop api --env production --as ada")
    live.clock.set(datetime(2026, 1, 12, 0, 1, tzinfo=UTC))
    live.ok("redeploy shop api --env production --as ada")


def test_a_freeze_refuses_pushes_and_approvals(live: Nebula, git_repo: GitRepo) -> None:
    live.ok("member add bo --role admin")
    live.clock.set(datetime(2026, 1, 9, 23, 0, tzinfo=UTC))  # Friday night
    approval = pushed_and_pending(live, git_repo)
    live.ok("freeze add --days sat --from 00:00 --to 24:00 --tz UTC")
    _saturday(live)
    frozen = "Deploys to protected environments are frozen until Sun 2026-01-11 00:00 (UTC)."
    refused = live.cli(f"approve {approval['id']} --as bo")
    assert (refused.code, refused.err) == (1, f"error: {frozen}\n")
    assert len(pending(live)) == 1
    git_repo.commit({"nebula.toml": with_log_level("warn")}, "warn")
    live.reconcile()
    latest = [c for c in live.changesets() if c["environment"] == "production"][-1]
    assert (latest["state"], latest["note"]) == ("draft", frozen)
    windows = live.json("freeze list")["freezes"]
    live.ok(f"freeze remove {windows[0]['id']}")
    live.ok(f"changeset apply {latest['id']}")
    applied = next(c for c in live.changesets() if c["id"] == latest["id"])
    assert (applied["state"], applied["note"], applied["message"]) == (
        "pending-approval",
        None,
        "warn",
    )


def test_the_concurrency_cap_refuses_past_the_limit_on_every_path(
    live: Nebula, git_repo: GitRepo
) -> None:
    live.ok("project set shop concurrency 1")
    live.ok("policy set forbid_self_approval false")
    message = "The project is already running its maximum number of concurrent deployments (1)."
    first = live.ok("redeploy shop api --env staging --as ada --json").json
    assert first["deployment"]["state"] == "pending"
    refused = live.cli("redeploy shop worker --env staging --as ada")
    assert (refused.code, refused.err) == (1, f"error: {message}\n")
    # Superseding the running one makes room: the same service can be redeployed.
    live.ok("redeploy shop api --env staging --as ada")
    # A push touching two services is refused as a whole, and its change set kept as a draft.
    both = with_log_level("debug").replace('API_URL = "http://', 'EXTRA = "1"\nAPI_URL = "http://')
    git_repo.commit({"nebula.toml": both}, "debug")
    live.reconcile()
    staging = [c for c in live.changesets() if c["environment"] == "staging"][-1]
    assert (staging["state"], staging["note"]) == ("draft", message)
    live.settle()
    # Two deployments at once never fit a cap of 1, even with nothing running.
    assert live.cli(f"changeset apply {staging['id']}").code == 1
    live.ok("project set shop concurrency 2")
    live.ok(f"changeset apply {staging['id']}")


def test_cancel_ends_a_deployment_and_its_approval(live: Nebula) -> None:
    out = live.ok("redeploy shop api --env production --as ada --json").json
    cancelled = live.ok(f"cancel {out['deployment']['id']} --as ada --json").json
    assert cancelled["deployment"]["state"] == "cancelled"
    assert cancelled["deployment"]["message"] == "Cancelled by ada"
    approval = next(a for a in live.approvals() if a["id"] == out["approval"]["id"])
    assert approval["state"] == "cancelled"
    again = live.cli(f"cancel {out['deployment']['id']} --as ada")
    assert (again.code, again.err) == (
        1,
        f"error: Deployment {out['deployment']['id']} has already ended (cancelled)\n",
    )


def test_expiry_uses_the_configured_ttl(tmp_path: object, git_repo: GitRepo) -> None:
    from pathlib import Path

    from tests.plugins.nebula import nebula_with

    gen = nebula_with(Path(str(tmp_path)), approval_ttl=timedelta(minutes=30))
    nebula = next(gen)
    try:
        git_repo.commit({"nebula.toml": BASE})
        nebula.ok(f"project add shop --repo {git_repo.url}")
        nebula.reconcile()
        nebula.clock.advance(minutes=31)
        nebula.reconcile()
        [approval] = nebula.approvals()
        assert approval["state"] == "expired"
        assert approval["reason"] == "Approval expired after 30m without a decision"
    finally:
        gen.close()
