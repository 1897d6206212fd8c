"""Honest waiting (issue 29): ``status``, ``wait`` and the page say when no reconciler has run
for a while (the heartbeat each reconcile pass records), and ``status`` shows how old each
unit's last drift check is."""

from __future__ import annotations

import re

from fixtures import loading
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

NEVER = (
    "warning: No reconciler has run yet: nothing moves until `nebula serve` runs or someone "
    "runs `nebula reconcile`."
)


def _registered(nebula: Nebula, git_repos: GitRepoFactory) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": loading.project("hello")})
    nebula.ok(f"project add shop --repo {repo.url}")


def test_status_says_when_no_reconciler_runs(nebula: Nebula, git_repos: GitRepoFactory) -> None:
    _registered(nebula, git_repos)
    result = nebula.ok("status")
    assert NEVER in result.err
    assert nebula.json("status")["reconciler"] == {
        "as_of": "2026-01-05T12:00:00Z",
        "last_run_at": None,
        "by": None,
        "stale": True,
        "message": NEVER.removeprefix("warning: "),
    }

    nebula.ok("reconcile --until-idle --timeout 1m")
    assert "No reconciler" not in nebula.ok("status").err
    reconciler = nebula.json("status")["reconciler"]
    ran, replica = reconciler["last_run_at"], reconciler["by"]
    assert (reconciler["stale"], reconciler["message"]) == (False, None)

    nebula.clock.advance(minutes=12)
    result = nebula.ok("status")
    assert (
        f"warning: No reconciler has run for 12m (the last pass: {ran} on {replica}): nothing moves "
        "until `nebula serve` runs or someone runs `nebula reconcile`." in result.err
    )
    # The drift check's age, counted on the server's clock.
    assert re.search(r"staging\s+hello\s+service\s+r-1 .* synced 12m ago", result.out)


def test_wait_says_why_nothing_moves(nebula: Nebula, git_repos: GitRepoFactory) -> None:
    _registered(nebula, git_repos)
    nebula.reconcile()  # staged and applied: deployment 1 pending, then nothing runs
    nebula.clock.advance(minutes=5)
    result = nebula.cli("wait 1 --timeout 1s")
    assert result.code == 3
    message = "No reconciler has run for 5m"
    assert f"warning: {message}" in result.err
    assert re.search(
        rf"error: timed out after 1s: deployment 1 is still \w+\n\s*hint: {message}", result.err
    )
