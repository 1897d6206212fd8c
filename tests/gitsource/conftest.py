"""A repository reachable over each transport the git edge supports."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from tests.plugins.git import GitRepo, GitRepoFactory

TRANSPORTS = ["path", "file", "git", "http"]


class Remote(NamedTuple):
    repo: GitRepo
    url: str


def url_for(repo: GitRepo, transport: str) -> str:
    return {
        "path": lambda: repo.url,
        "file": lambda: repo.file_url,
        "git": lambda: repo.git_url,
        "http": lambda: repo.http_url,
    }[transport]()


@pytest.fixture(params=TRANSPORTS)
def remote(request: pytest.FixtureRequest, git_repos: GitRepoFactory) -> Remote:
    """A served bare repository, addressed through one transport per parameter."""
    repo = git_repos.served("app")
    return Remote(repo, url_for(repo, request.param))
