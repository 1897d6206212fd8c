"""The promotion gate beyond pushes (behaviour.md "Promotion gates", "Environment settings are
change-set lines"): ``nebula promote`` is gated by the soak, ``--skip-gate`` is an admin's and
is recorded; rollbacks and redeploys are not gated; the gate's own settings are lines that a
protected environment approves; two replicas pass one gate once."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from reconciler import bootstrap
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.requests import proceeding
from reconciler.settings import Settings
from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.requests.gating import (
    API_2,
    SOAK,
    deployed,
    gated,
    healthy_at,
    in_env,
    production_changeset,
    push,
)
from tests.web.world import ThreadedServer

UNGATED = {'promote_from = "staging"\nsoak = "30m"\n': ""}
TOO_YOUNG = "api r-2 has been healthy in staging for 12m; production needs 30m"


def soaking(nebula: Nebula, git_repo: GitRepo) -> None:
    """API_2 healthy in staging for 12 minutes; production's change set waits."""
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated(api=API_2))
    nebula.settle()
    nebula.clock.set(healthy_at(nebula, "api", "r-2") + SOAK * 0.4)


def test_promote_is_gated_by_the_soak(nebula: Nebula, git_repo: GitRepo) -> None:
    soaking(nebula, git_repo)
    refused = nebula.cli("promote shop api --from staging --to production --as bo")
    assert (refused.code, refused.err) == (
        1,
        f"error: {TOO_YOUNG}\n"
        "hint: wait until it has soaked, or (an admin or owner) pass --skip-gate\n",
    )
    nebula.ok("grant add cy deploy --project shop --env production")  # cy may promote there
    member = nebula.cli("promote shop api --from staging --to production --skip-gate --as cy")
    assert (member.code, member.err) == (
        1,
        f"error: cy may not skip the promotion gate ({TOO_YOUNG}): needs the admin role "
        "(cy is a member)\n",
    )
    nebula.clock.advance(minutes=18)
    done = nebula.json("promote shop api --from staging --to production --as bo")
    assert (done["deployment"]["state"], done["approval"]["state"]) == (
        "awaiting-approval",
        "pending",
    )
    assert done["approval"]["evidence"][0].startswith("Verified in staging: api r-2 healthy since")


def test_skip_gate_is_recorded_in_the_event_and_the_approval_request(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    soaking(nebula, git_repo)
    done = nebula.json("promote shop api --from staging --to production --skip-gate --as bo")
    skipped = f"Promotion gate skipped by bo (--skip-gate): {TOO_YOUNG}"
    assert done["approval"]["evidence"] == [skipped]
    events = nebula.json(f"deployment show {done['deployment']['id']}")["deployment"]["events"]
    assert [(e["message"], e["actor"]) for e in events if e["message"] == skipped] == [
        (skipped, "bo")
    ]
    assert f"  approval {done['approval']['id']}: {skipped}\n" in nebula.ok("approvals").out
    audited = [e for e in nebula.json("audit")["events"] if e["action"] == "promote.skip-gate"]
    assert audited == [
        {
            "at": audited[0]["at"],
            "actor": "bo",
            "action": "promote.skip-gate",
            "target": "shop/production api",
            "message": f"Promoted api {done['deployment']['release']} past its gate: {TOO_YOUNG}",
        }
    ]


def test_the_http_promote_body_takes_skip_gate(nebula: Nebula, git_repo: GitRepo) -> None:
    soaking(nebula, git_repo)
    token = nebula.ok("token create --as bo").out.strip()
    url = "/api/v1/projects/shop/services/api/promote"
    body = {"from": "staging", "to": "production"}
    headers = {"Authorization": f"Bearer {token}"}
    with ThreadedServer(nebula.ctx) as server, httpx.Client(base_url=server.url) as client:
        refused = client.post(url, json=body, headers=headers)
        assert refused.status_code == 409
        assert refused.json()["error"] == TOO_YOUNG
        done = client.post(url, json={**body, "skip_gate": True}, headers=headers)
    assert done.status_code == 200
    assert done.json()["approval"]["evidence"] == [
        f"Promotion gate skipped by bo (--skip-gate): {TOO_YOUNG}"
    ]


def test_rollbacks_and_redeploys_are_not_gated(nebula: Nebula, git_repo: GitRepo) -> None:
    soaking(nebula, git_repo)
    done = nebula.json("promote shop api --from staging --to production --skip-gate --as bo")
    nebula.ok(f"approve {done['approval']['id']} --as ada")
    nebula.settle()
    assert nebula.unit("production", "api")["active_release"] == "r-2"
    # api r-2's image has not soaked in staging, yet redeploying or rolling back is not refused.
    nebula.clock.set(healthy_at(nebula, "api", "r-2") + SOAK * 0.5)
    redeploy = nebula.json("redeploy shop api --env production --as bo")
    assert redeploy["deployment"]["state"] == "awaiting-approval"
    rollback = nebula.json("rollback shop api --env production --to r-1 --as bo")
    assert rollback["deployment"]["state"] == "awaiting-approval"


def test_removing_the_gate_is_a_line_that_waits_for_approval(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    before = len(nebula.deployments())
    push(nebula, git_repo, gated(UNGATED))
    staged = production_changeset(nebula)
    assert [
        (line["service"], line["field"], line["before"], line["after"]) for line in staged["lines"]
    ] == [
        ("production", "environment.promote_from", "staging", None),
        ("production", "environment.soak", "30m", "0s"),
    ]
    assert staged["state"] == "pending-approval"
    assert staged["gate"]["state"] == "passed"  # still gated until it is approved
    assert len(nebula.deployments()) == before  # only settings: no deployment
    # Meanwhile a new image is still gated by the gate in effect.
    push(nebula, git_repo, gated(UNGATED, api=API_2))
    waiting = production_changeset(nebula)
    assert (waiting["state"], waiting["gate"]["message"]) == (
        "draft",
        "Waiting for api to be healthy in staging",
    )
    # Approved alone, the removal takes effect and starts nothing.
    push(nebula, git_repo, gated(UNGATED))
    alone = production_changeset(nebula)
    (approval,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {approval['id']} --as bo")
    assert nebula.json(f"changeset show {alone['id']}")["changeset"]["state"] == "applied"
    assert len(in_env(nebula.deployments(), "production")) == 3
    push(nebula, git_repo, gated(UNGATED, api=API_2))
    ungated = production_changeset(nebula)
    assert (ungated["state"], ungated["gate"]) == ("pending-approval", None)


def test_removing_protection_waits_for_the_approval_it_would_have_needed(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    deployed(nebula, git_repo)
    push(nebula, git_repo, gated({"protected = true\n": ""}))
    staged = production_changeset(nebula)
    assert [(line["field"], line["before"], line["after"]) for line in staged["lines"]] == [
        ("environment.protected", True, False)
    ]
    assert staged["state"] == "pending-approval"
    production = next(e for e in nebula.status()["environments"] if e["name"] == "production")
    assert production["protected"] is True
    (approval,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {approval['id']} --as bo")
    production = next(e for e in nebula.status()["environments"] if e["name"] == "production")
    assert (production["protected"], production["promote_from"]) == (False, "staging")


def _replica(url: str, state_dir: Path, clock: FakeClock) -> Context:
    settings = Settings(
        database_url=url,
        state_dir=state_dir,
        secret_key="k1ZqK6eFq2m6l5j7x2Jt0w8M0Jm1lH6Vb9Wq3Rk5Ys8=",
        simulated_delay=timedelta(0),
    )
    return bootstrap.open_context(settings, clock)


@pytest.mark.postgres
def test_two_replicas_on_postgresql_pass_one_gate_once(
    tmp_path: Path, git_repo: GitRepo, fresh_postgres_url: str
) -> None:
    clock = FakeClock()
    one, two = (_replica(fresh_postgres_url, tmp_path / "state", clock) for _ in range(2))
    nebula = Nebula(one, clock, tmp_path)
    try:
        soaking(nebula, git_repo)
        waiting = production_changeset(nebula)
        clock.advance(minutes=18)
        start = threading.Barrier(2)
        moved: list[int] = []

        def pass_gates(ctx: Context) -> None:
            start.wait()
            moved.append(proceeding.recheck(ctx))

        threads = [threading.Thread(target=pass_gates, args=(c,)) for c in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert sorted(moved) == [0, 1]
        passed = nebula.json(f"changeset show {waiting['id']}")["changeset"]
        assert passed["state"] == "pending-approval"
        assert [a["target_id"] for a in nebula.approvals() if a["state"] == "pending"] == [
            waiting["id"]
        ]
        assert [
            d["service"] for d in nebula.deployments() if d["changeset_id"] == waiting["id"]
        ] == ["api"]
        with one.db.transaction() as session:
            gate_events = (
                session.query(schema.Event)
                .filter(schema.Event.changeset_id == int(waiting["id"]))
                .filter(schema.Event.message.like("Gate passed:%"))
                .count()
            )
        assert gate_events == 1
    finally:
        for ctx in (one, two):
            ctx.db.dispose()
            if ctx.git is not None:
                ctx.git.close()


def test_a_suspension_note_wins_over_the_gate_until_resumed(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    """Staged while production is suspended: the draft carries the suspension's note (its gate
    is still checked and shown), no approval is asked, and nothing goes on when the soak ends;
    resumed, it waits on the gate again and goes on once it passes."""
    deployed(nebula, git_repo)
    at = nebula.clock.now()
    nebula.ok("suspend shop --env production --reason 'incident 42' --as bo")
    held = f"Suspended by bo at {at:%Y-%m-%d %H:%M} UTC: incident 42"
    push(nebula, git_repo, gated(api=API_2))
    nebula.settle()
    nebula.clock.set(healthy_at(nebula, "api", "r-2") + SOAK * 0.4)
    nebula.reconcile()

    waiting = production_changeset(nebula)
    assert (waiting["state"], waiting["note"]) == ("draft", held)
    assert (waiting["gate"]["state"], waiting["gate"]["message"]) == (
        "waiting",
        "Waiting for api r-2 in staging: healthy for 12m of 30m",
    )
    nebula.clock.advance(minutes=18)  # the soak is over, but production is suspended
    nebula.reconcile()
    assert (production_changeset(nebula)["state"], production_changeset(nebula)["note"]) == (
        "draft",
        held,
    )
    assert [a for a in nebula.approvals() if a["state"] == "pending"] == []

    nebula.ok("resume shop --env production --as bo")
    nebula.reconcile()
    resumed = production_changeset(nebula)
    assert (resumed["id"], resumed["state"]) == (waiting["id"], "pending-approval")
