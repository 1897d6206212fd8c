"""Two replicas acting on one deployment at the same moment, on PostgreSQL (READ COMMITTED):
a step landing while another replica cancels or supersedes it, and a supersession decided
while another replica's step moves the deployment on to activating.

Each race is forced, not hoped for: one side's transaction is held open at the conflicting
row while the other runs in a thread, until PostgreSQL shows that thread waiting for the row
lock; then the first commits. Whatever the order, the deployment must end in one coherent
state, with events that walk the transition table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from notifiers import gathering, keys, outbox
from reconciler import bootstrap
from reconciler.admin import principals
from reconciler.clock import FakeClock
from reconciler.core.states import DecisionChannel, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import queueing, recording, ticking
from reconciler.requests import deciding
from reconciler.settings import Settings
from reconciler.store import schema
from tests.chaos.invariants import STEPS
from tests.engine.driving import deploy_first, hold_at, push, show, states
from tests.engine.projects import app
from tests.notifiers.test_outbox import approval, close
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, Result
from tests.plugins.slack import CHANNEL_ID, SLACK_TOKEN, SlackServer

pytestmark = pytest.mark.postgres
ON_POSTGRES = pytest.mark.parametrize("nebula_any_db", ["postgres"], indirect=True)


def _second_release_at(nebula: Nebula, git_repo: GitRepo, state: str) -> int:
    """r-1 healthy; r-2's deployment held in ``state``."""
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"), "More logs")
    deployment = max(int(d["id"]) for d in nebula.deployments())
    hold_at(nebula, str(deployment), state)
    return deployment


def _waiting_for_a_lock(nebula: Nebula) -> bool:
    with nebula.ctx.db.engine.connect() as conn:
        return bool(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database()"
                )
            ).scalar_one()
        )


def _against(nebula: Nebula, hold: Callable[[Any], None], race: Callable[[], object]) -> object:
    """``hold(session)`` runs and stays uncommitted while ``race()`` runs in a thread until it
    waits for a lock; then the held transaction commits. Returns what ``race()`` returned."""
    outcome: list[object] = []
    session = nebula.ctx.db.session()
    try:
        hold(session)
        session.flush()
        thread = threading.Thread(target=lambda: outcome.append(race()), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not _waiting_for_a_lock(nebula):
            assert thread.is_alive(), "the racing side finished without waiting for the row"
            assert time.monotonic() < deadline, "the racing side never waited for the row"
            time.sleep(0.01)
        session.commit()
    finally:
        session.close()
    thread.join(10)
    assert not thread.is_alive()
    return outcome[0] if outcome else None


def _coherent(nebula: Nebula, deployment: int) -> list[str]:
    path = states(nebula, str(deployment))
    assert len(path) == len(set(path)), path
    assert all((a, b) in STEPS for a, b in pairwise(path)), path
    assert path[-1] == show(nebula, str(deployment))["state"], path
    return path


@ON_POSTGRES
def test_a_step_that_lands_while_another_replica_cancels_is_dropped(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deployment = _second_release_at(nebula, git_repo, "starting")

    def cancel(session: Any) -> None:
        row = session.get(schema.Deployment, deployment)
        queueing.cancel(session, nebula.ctx.clock, row, "alice")

    # The step has claimed the deployment (a claim skips a row being locked, so it is taken
    # first) and calls the cluster when the cancel takes the row: its stage waits for the row.
    owner = "other-replica:1"
    assert ticking.claim(nebula.ctx, deployment, owner)
    cluster = nebula.ctx.clusters.simulated()
    stage = lambda: ticking._stage(nebula.ctx, deployment, owner, DeploymentState.STARTING, cluster)  # noqa: E731
    assert _against(nebula, cancel, stage) is False

    assert _coherent(nebula, deployment)[-2:] == ["starting", "cancelled"]


@ON_POSTGRES
def test_a_step_skips_a_deployment_another_replica_is_cancelling(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deployment = _second_release_at(nebula, git_repo, "starting")
    with nebula.ctx.db.session() as session:
        row = session.get(schema.Deployment, deployment, with_for_update=True)
        assert row is not None
        assert ticking.step(nebula.ctx, deployment) is False, "skipped, not waited for"
        queueing.cancel(session, nebula.ctx.clock, row, "alice")
        session.commit()
    assert _coherent(nebula, deployment)[-2:] == ["starting", "cancelled"]


@ON_POSTGRES
def test_a_supersession_decided_while_another_replica_activates_waits_instead(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    deployment = _second_release_at(nebula, git_repo, "qualifying")

    def activate(session: Any) -> None:
        """Another replica's step, between its UPDATE and its COMMIT."""
        row = session.get(schema.Deployment, deployment, with_for_update=True)
        recording.move(session, nebula.ctx.clock, row, Trigger.ACTIVATE)

    answer = _against(nebula, activate, lambda: nebula.json("redeploy shop api --env staging"))

    assert isinstance(answer, dict)
    assert answer["ended"] == []
    assert answer["deployment"]["message"] == "Waiting for r-2 to finish taking over traffic"
    assert _coherent(nebula, deployment)[-1] == "activating"
    nebula.settle()
    assert show(nebula, str(deployment))["state"] == "healthy"
    assert show(nebula, answer["deployment"]["id"])["state"] == "healthy"


@ON_POSTGRES
def test_two_admins_approving_at_once_start_the_deployment_once(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": app(protected=True)})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    [approval] = [a for a in nebula.approvals() if a["state"] == "pending"]
    [deployment] = [int(d["id"]) for d in nebula.deployments()]

    def ada(session: Any) -> None:
        ada = principals.by_name(session, "ada")
        deciding.decide(
            session, nebula.ctx, int(approval["id"]), ada, approve=True, via=DecisionChannel.API
        )

    bo = _against(nebula, ada, lambda: nebula.cli(f"approve {approval['id']} --as bo"))

    assert isinstance(bo, Result)
    assert bo.code == 1
    assert bo.err.startswith(f"error: Approval {approval['id']} is already approved by ada at ")
    assert _coherent(nebula, deployment) == ["awaiting-approval", "pending"]
    decided = next(a for a in nebula.approvals() if a["id"] == approval["id"])
    assert (decided["state"], decided["decided_by"]) == ("approved", "ada")


def test_an_approval_update_delivered_while_its_request_is_recorded_edits_the_message(
    fresh_postgres_url: str,
    tmp_path: Path,
    slack_server: SlackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the chaos run: the update read the approval (no message yet), then the request's
    row (delivered by another replica just then), and concluded the request was never posted."""
    clock = FakeClock()
    slack_server.use_clock(lambda: clock.now().timestamp())
    settings = Settings(
        database_url=fresh_postgres_url, state_dir=tmp_path / "state", slack_bot_token=SLACK_TOKEN,
        slack_api_url=slack_server.base_url, slack_channel=CHANNEL_ID, secret_key="",
    )  # fmt: skip
    ctx = bootstrap.open_context(settings, clock, git=False)
    try:
        approval_id = approval(ctx, clock)
        close(ctx, approval_id)
        real = gathering.approval_request
        other_replica: list[int] = []

        def meanwhile(*args: Any, **kwargs: Any) -> Any:
            found = real(*args, **kwargs)
            if not other_replica:  # the update's turn: another replica delivers the request now
                other_replica.append(0)
                request = [keys.approval_request(approval_id)]
                thread = threading.Thread(
                    target=lambda: other_replica.append(outbox.deliver_due(ctx, keys=request))
                )
                thread.start()
                thread.join(30)
            return found

        monkeypatch.setattr(gathering, "approval_request", meanwhile)
        outbox.deliver_due(ctx, keys=[keys.approval_update(approval_id)])

        assert other_replica == [0, 1]  # the request was posted meanwhile
        ((channel, ts),) = slack_server.messages
        assert [(u.args["channel"], u.args["ts"]) for u in slack_server.updates] == [(channel, ts)]
        assert slack_server.message(channel, ts)["edited"] is True
    finally:
        ctx.db.dispose()
