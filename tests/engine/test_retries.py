"""Transient cluster errors (API 5xx, timeouts, conflicts) are retried with backoff, at most
3 times per stage, before the deployment fails with the stage's blocker."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.driving import deploy_first, hold_at, latest, push, show, states, tick
from tests.engine.flaky import FlakyCluster, make_flaky
from tests.engine.projects import app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

ERROR = "the API answered 503 Service Unavailable"
RETRIES = [f"Retrying ({n}/3) after: {ERROR}" for n in (1, 2, 3)]

# stage -> the cluster call it makes first, and the blocker it fails with once retries run out
STAGES = {
    "admitted": ("admit", "delivery"),
    "releasing": ("start_release_job", "release-command"),
    "starting": ("start", "delivery"),
    "qualifying": ("probe", "readiness"),
}


def _second_release_with(
    nebula: Nebula, git_repo: GitRepo, **failures: int
) -> tuple[FlakyCluster, dict[str, Any]]:
    """r-1 healthy, then r-2 (both with a release command) pushed and settled while the cluster
    fails each named call that many times; the cluster and r-2 as ``deployment show`` has it."""
    deploy_first(nebula, git_repo, app(release_command=True))
    flaky = make_flaky(nebula, **failures)
    push(nebula, git_repo, app(level="debug", release_command=True))
    nebula.settle()
    return flaky, show(nebula, latest(nebula, "api")["id"])


@pytest.mark.parametrize("stage", list(STAGES))
def test_three_retries_then_it_goes_on(nebula: Nebula, git_repo: GitRepo, stage: str) -> None:
    method, _ = STAGES[stage]
    flaky, done = _second_release_with(nebula, git_repo, **{method: 3})
    assert done["state"] == "healthy"
    notes = [(e["state"], e["message"]) for e in done["events"] if e["kind"] == "deployment.note"]
    assert notes[:3] == [(stage, m) for m in RETRIES]
    assert flaky.failures[method] == 0


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_fourth_failure_fails_with_the_stage_s_blocker(
    nebula: Nebula, git_repo: GitRepo, stage: str
) -> None:
    method, blocker = STAGES[stage]
    flaky, failed = _second_release_with(nebula, git_repo, **{method: 4})
    message = f"The cluster kept failing ({ERROR}) after 3 retries. r-1 keeps serving."
    assert (failed["state"], failed["blocker"], failed["message"]) == ("failed", blocker, message)
    assert states(nebula, failed["id"])[-2:] == [stage, "failed"]
    assert flaky.calls[method] >= 4 and flaky.failures[method] == 0
    assert nebula.unit("staging", "api")["active_release"] == "r-1"


def test_retries_back_off(nebula: Nebula, git_repo: GitRepo) -> None:
    """1 s, 2 s, 4 s between attempts: ticking sooner does not call the cluster again."""
    deploy_first(nebula, git_repo, app())
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    hold_at(nebula, deployment, "starting")
    flaky = make_flaky(nebula, start=3)
    calls = []
    for _ in range(8):
        tick(nebula, 3)  # ticks without time passing do nothing while backing off
        calls.append(flaky.calls["start"])
        nebula.clock.advance(1)
    assert calls == [1, 2, 2, 3, 3, 3, 3, 4]


def test_retries_are_counted_per_stage(nebula: Nebula, git_repo: GitRepo) -> None:
    _, done = _second_release_with(
        nebula, git_repo, admit=3, start_release_job=3, start=3, probe=3, drain=3
    )
    assert done["state"] == "healthy"


def test_activation_retries_until_the_route_activation_timeout(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    """A refused selector patch is retried for ``NEBULA_ROUTE_ACTIVATION_TIMEOUT`` (2m), not
    3 times: then it goes through."""
    deploy_first(nebula, git_repo, app())
    flaky = make_flaky(nebula, activate=10)
    push(nebula, git_repo, app(level="debug"))
    nebula.settle()
    done = show(nebula, latest(nebula, "api")["id"])
    assert done["state"] == "healthy"
    assert flaky.calls["activate"] == 11
    assert [e["message"] for e in done["events"] if e["kind"] == "deployment.note"] == [
        f"Retrying activation: {ERROR}"
    ]


def test_draining_never_fails_after_traffic_moved(nebula: Nebula, git_repo: GitRepo) -> None:
    """Past activation the new release serves: a drain the API keeps refusing is retried (and
    marked ``stalled``), never turned into a failure that would claim r-1 keeps serving."""
    deploy_first(nebula, git_repo, app())
    flaky = make_flaky(nebula, drain=6)
    push(nebula, git_repo, app(level="debug"))
    deployment = latest(nebula, "api")["id"]
    hold_at(nebula, deployment, "draining")
    for _ in range(40):
        tick(nebula)
        nebula.clock.advance(5)
        if flaky.failures["drain"] == 2:  # 4 refused drains
            break
    held = show(nebula, deployment)
    assert (held["state"], held["blocker"]) == ("draining", "stalled")
    assert held["message"] == f"Draining r-1 keeps failing ({ERROR}); retrying. r-2 serves."
    nebula.settle(step=60)
    done = show(nebula, deployment)
    assert (done["state"], done["blocker"], done["message"]) == ("healthy", None, None)
    assert nebula.unit("staging", "api")["active_release"] == "r-2"
