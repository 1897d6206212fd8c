"""The shared git fixtures other tests build on, checked against the real git command line."""

from __future__ import annotations

import os
import subprocess

import pygit2

from tests.plugins.git import GIT_HTTP_TOKEN, GitHttpServer, GitRepo, GitRepoFactory


def ls_remote(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "ls-remote", url],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false"},
    )


def test_a_commit_builds_on_the_branch_tip(git_repo: GitRepo) -> None:
    first = git_repo.commit({"nebula.toml": "a = 1\n", "deploy/app.toml": "x"})
    second = git_repo.commit({"nebula.toml": "a = 2\n", "deploy/app.toml": None, "README": "r"})

    commit = git_repo.repo.get(second)
    assert isinstance(commit, pygit2.Commit)
    assert [str(p) for p in commit.parent_ids] == [first]
    assert git_repo.files(second) == {"nebula.toml": b"a = 2\n", "README": b"r"}
    assert git_repo.files(first) == {"nebula.toml": b"a = 1\n", "deploy/app.toml": b"x"}


def test_rewrite_replaces_the_history(git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": "a = 1\n", "old": "o"})

    rewritten = git_repo.rewrite({"nebula.toml": "b = 1\n"})

    commit = git_repo.repo.get(rewritten)
    assert isinstance(commit, pygit2.Commit)
    assert commit.parent_ids == []
    assert git_repo.head() == rewritten
    assert git_repo.files(rewritten) == {"nebula.toml": b"b = 1\n"}


def test_branches_can_be_reset_and_deleted(git_repo: GitRepo) -> None:
    first = git_repo.commit({"nebula.toml": "a = 1\n"})
    git_repo.commit({"nebula.toml": "a = 2\n"})
    git_repo.commit({"nebula.toml": "s\n"}, branch="staging")

    git_repo.reset(first)
    git_repo.delete_branch("staging")

    assert git_repo.head() == first
    assert git_repo.head("staging") is None


def test_served_repositories_answer_git_over_the_daemon(git_repos: GitRepoFactory) -> None:
    repo = git_repos.served()
    sha = repo.commit({"nebula.toml": "a = 1\n"})

    listed = ls_remote(repo.git_url)

    assert listed.returncode == 0, listed.stderr
    assert f"{sha}\trefs/heads/main" in listed.stdout.splitlines()


def test_the_http_server_wants_the_token(
    git_repos: GitRepoFactory, git_http: GitHttpServer
) -> None:
    repo = git_repos.served()
    sha = repo.commit({"nebula.toml": "a = 1\n"})

    without = ls_remote(repo.http_url)
    wrong = ls_remote(git_http.url(repo.path.name, userinfo="deploy:wrong"))
    right = ls_remote(git_http.url(repo.path.name, userinfo=f"deploy:{GIT_HTTP_TOKEN}"))

    assert without.returncode != 0
    assert wrong.returncode != 0
    assert right.returncode == 0, right.stderr
    assert f"{sha}\trefs/heads/main" in right.stdout.splitlines()
