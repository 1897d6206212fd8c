"""Every page says when no reconciler has run for a while (issue 29, "honest waiting")."""

from __future__ import annotations

import httpx

from fixtures import loading
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula


def test_every_page_says_when_nothing_reconciles(
    nebula: Nebula, git_repos: GitRepoFactory, live: httpx.Client
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": loading.project("hello")})
    nebula.ok(f"project add shop --repo {repo.url}")
    for path in ("/", "/projects/shop", "/deployments"):
        assert "No reconciler has run yet: nothing moves until" in live.get(path).text
    nebula.reconcile()
    assert 'id="reconciler-idle"' not in live.get("/").text
    nebula.clock.advance(minutes=3)
    page = live.get("/").text
    assert (
        '<p class="alert wait" id="reconciler-idle" role="status">No reconciler has run for 3m'
        in page
    )
