"""One project's poll failing in a way nobody planned for (a bug its commit runs into) is that
project's ``configuration`` blocker, logged once, polled again on its interval; every other
project polls, stages and deploys as usual, in ``nebula reconcile`` and ``nebula serve``'s
scheduler alike (issue 26)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from fixtures import loading
from reconciler.admin import projects as project_rows
from reconciler.errors import NotFoundError
from reconciler.gitops import polling
from reconciler.gitsource.results import HeadResult
from reconciler.model import validation
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

HELLO = loading.project("hello")


def test_a_bug_in_one_project_s_validation_stops_no_other_project(
    nebula: Nebula,
    git_repos: GitRepoFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, healthy = git_repos.local("broken"), git_repos.local("healthy")
    broken.commit({"nebula.toml": HELLO.replace("[project]", "# trips the bug\n[project]")})
    healthy.commit({"nebula.toml": HELLO})
    nebula.ok(f"project add broken --repo {broken.url}")
    nebula.ok(f"project add healthy --repo {healthy.url}")
    real = validation.check

    def check(text: str, path: str, **options: object) -> object:
        if "trips the bug" in text:
            raise OverflowError("Python int too large to convert to C int")
        return real(text, path, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(validation, "check", check)
    with caplog.at_level(logging.ERROR, logger="nebula.poll"):
        done = nebula.ok("reconcile --until-idle --timeout 1m")
        nebula.ok("reconcile --until-idle --timeout 1m")  # the same failure: logged once
    assert "1 change set staged" in done.out or "change sets staged" in done.out
    healthy_status = nebula.status("healthy")
    assert healthy_status["blocker"] is None
    assert {u["active_release"] for e in healthy_status["environments"] for u in e["services"]} == {
        "r-1"
    }
    status = nebula.status("broken")
    assert status["blocker"] == "configuration"
    assert status["message"].startswith("Nebula could not poll nebula.toml at ") and status[
        "message"
    ].endswith(
        ": OverflowError: Python int too large to convert to C int (an error in Nebula, "
        "logged). Nothing was staged; environments keep serving."
    )
    failures = [r for r in caplog.records if r.getMessage() == "polling a project failed"]
    assert len(failures) == 1 and failures[0].exc_info is not None
    # Not polled again at once (a hot loop), but on its interval.
    project = nebula.json("project list")["projects"][0]
    assert project["slug"] == "broken" and project["next_poll_at"] > project["last_polled_at"]
    # Fixed (the bug gone): the next poll of the same commit clears the blocker.
    monkeypatch.setattr(validation, "check", real)
    nebula.clock.advance(timedelta(minutes=2).total_seconds())
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.status("broken")["blocker"] is None


def test_a_project_removed_while_polled_stops_no_other_project(
    nebula: Nebula, git_repos: GitRepoFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone, healthy = git_repos.local("gone"), git_repos.local("healthy")
    gone.commit({"nebula.toml": HELLO})
    healthy.commit({"nebula.toml": HELLO})
    nebula.ok(f"project add gone --repo {gone.url}")
    nebula.ok(f"project add healthy --repo {healthy.url}")
    real_get, real_find = project_rows.get, project_rows.find

    def get(session: Session, slug: str, **kw: bool) -> object:
        if slug == "gone":  # removed by another replica between the listing and its poll
            raise NotFoundError("No project named gone")
        return real_get(session, slug, **kw)

    monkeypatch.setattr(project_rows, "get", get)
    monkeypatch.setattr(
        project_rows, "find", lambda s, slug: None if slug == "gone" else real_find(s, slug)
    )
    report = polling.poll(nebula.ctx)
    assert report.results.get("healthy") is not None and "gone" not in report.blocked


def test_what_the_page_shows_of_a_failed_poll_has_no_credentials(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": HELLO})
    nebula.ok(f"project add shop --repo {repo.url}")
    url = "https://bob:ghp_s3cr3tT0ken@git.example.com/shop.git"
    failure = RuntimeError(f"could not read {url}: ghp_s3cr3tT0ken refused")
    polling._failed(
        nebula.ctx,
        "shop",
        url,
        HeadResult(commit="a" * 40),
        failure,
        polling.PollReport(),
    )
    message = nebula.status("shop")["message"]
    assert "s3cr3t" not in message and "bob:" not in message
    assert "could not read https://***@git.example.com/shop.git: *** refused" in message
