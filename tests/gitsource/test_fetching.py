"""Fetching only what moved, and reading files as blobs of a commit."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest

from reconciler.errors import PermanentError, TransientError
from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.results import CommitInfo, HeadResult
from tests.gitsource.conftest import Remote
from tests.plugins.git import Author, GitRepoFactory

V1 = 'name = "shop"\n[environments.production]\n'
V2 = 'name = "shop"\n[environments.production]\nprotected = true\n'


def poll(cache: GitCache, url: str, branch: str = "main") -> str:
    """What the poller does: ask for the head, make sure it is cached, return it."""
    head = cache.heads([(url, branch)])[(url, branch)]
    assert head.error is None and head.commit is not None
    cache.ensure(url, branch, head.commit)
    return head.commit


def test_a_new_head_is_fetched_once_and_its_file_read(remote: Remote, git_cache: GitCache) -> None:
    sha = remote.repo.commit({"nebula.toml": V1})

    assert poll(git_cache, remote.url) == sha

    assert git_cache.fetches == 1
    assert git_cache.read_file(remote.url, sha, "nebula.toml") == V1.encode()


def test_an_unchanged_head_does_no_fetch(remote: Remote, git_cache: GitCache) -> None:
    sha = remote.repo.commit({"nebula.toml": V1})
    poll(git_cache, remote.url)

    assert poll(git_cache, remote.url) == sha
    assert poll(git_cache, remote.url) == sha

    assert git_cache.fetches == 1
    assert git_cache.remote_calls == 3


def test_a_moved_head_costs_exactly_one_fetch(remote: Remote, git_cache: GitCache) -> None:
    old = remote.repo.commit({"nebula.toml": V1})
    poll(git_cache, remote.url)
    new = remote.repo.commit({"nebula.toml": V2}, "Protect production")

    assert poll(git_cache, remote.url) == new

    assert git_cache.fetches == 2
    assert git_cache.read_file(remote.url, new, "nebula.toml") == V2.encode()
    assert git_cache.read_file(remote.url, old, "nebula.toml") == V1.encode()


def test_a_force_push_fetches_and_reads_the_rewritten_head(
    remote: Remote, git_cache: GitCache
) -> None:
    remote.repo.commit({"nebula.toml": V1})
    remote.repo.commit({"nebula.toml": V2})
    poll(git_cache, remote.url)

    rewritten = remote.repo.rewrite({"nebula.toml": 'name = "rewritten"\n'}, "Start over")

    assert poll(git_cache, remote.url) == rewritten
    assert git_cache.read_file(remote.url, rewritten, "nebula.toml") == b'name = "rewritten"\n'
    assert git_cache.fetches == 2


def test_a_force_push_back_to_an_older_commit_is_followed(
    remote: Remote, git_cache: GitCache
) -> None:
    first = remote.repo.commit({"nebula.toml": V1})
    poll(git_cache, remote.url)
    remote.repo.commit({"nebula.toml": V2})
    poll(git_cache, remote.url)

    remote.repo.reset(first)

    assert poll(git_cache, remote.url) == first
    assert git_cache.read_file(remote.url, first, "nebula.toml") == V1.encode()


def test_fetches_over_the_network_are_shallow(
    git_repos: GitRepoFactory, git_cache: GitCache
) -> None:
    repo = git_repos.served()
    for n in range(5):
        repo.commit({"nebula.toml": f"n = {n}\n"})

    poll(git_cache, repo.git_url)

    cached = git_cache.repository_path(repo.git_url)
    assert (cached / "shallow").read_text().split() == [repo.head()]


def test_a_branch_that_moved_again_during_the_fetch_is_left_to_the_next_poll(
    git_repos: GitRepoFactory, git_cache: GitCache
) -> None:
    repo = git_repos.served()
    seen = repo.commit({"nebula.toml": V1})
    repo.rewrite({"nebula.toml": V2})  # the head moves between heads() and ensure()

    with pytest.raises(TransientError) as caught:
        git_cache.ensure(repo.git_url, "main", seen)

    assert caught.value.code == "delivery"
    assert str(caught.value) == (
        f"main of {repo.git_url} moved while {seen[:7]} was being fetched. "
        "The next poll fetches the new head."
    )


def test_two_branches_share_one_cache(remote: Remote, git_cache: GitCache) -> None:
    main = remote.repo.commit({"nebula.toml": V1})
    staging = remote.repo.commit({"nebula.toml": V2}, branch="staging")

    poll(git_cache, remote.url, "main")
    poll(git_cache, remote.url, "staging")

    assert git_cache.read_file(remote.url, main, "nebula.toml") == V1.encode()
    assert git_cache.read_file(remote.url, staging, "nebula.toml") == V2.encode()
    assert len([p for p in git_cache.root.iterdir() if p.name != "probe.git"]) == 1


def test_ensure_many_fetches_each_remote(git_repos: GitRepoFactory, git_cache: GitCache) -> None:
    repos = [git_repos.served(f"svc{i}") for i in range(6)]
    wanted = [
        (r.git_url, "main", r.commit({"nebula.toml": f"n = {i}\n"})) for i, r in enumerate(repos)
    ]

    results = git_cache.ensure_many(wanted)

    assert results == dict.fromkeys(wanted)
    assert git_cache.fetches == len(repos)
    assert [git_cache.read_file(u, c, "nebula.toml") for u, _, c in wanted] == [
        f"n = {i}\n".encode() for i in range(6)
    ]


def test_a_missing_file_reads_as_none(remote: Remote, git_cache: GitCache) -> None:
    sha = poll_after(remote, git_cache, {"nebula.toml": V1, "deploy/nebula.toml": V2})

    assert git_cache.read_file(remote.url, sha, "other.toml") is None
    assert git_cache.read_file(remote.url, sha, "deploy/missing.toml") is None
    assert git_cache.read_file(remote.url, sha, "deploy") is None  # a directory, not a file
    assert git_cache.read_file(remote.url, sha, "../nebula.toml") is None


def test_a_file_in_a_subdirectory_is_read(remote: Remote, git_cache: GitCache) -> None:
    sha = poll_after(remote, git_cache, {"nebula.toml": V1, "deploy/nebula.toml": V2})

    assert git_cache.read_file(remote.url, sha, "deploy/nebula.toml") == V2.encode()
    assert git_cache.read_file(remote.url, sha, "./deploy/nebula.toml") == V2.encode()
    assert git_cache.read_file(remote.url, sha, "/nebula.toml") == V1.encode()


def test_a_deleted_file_reads_as_none_at_the_new_commit(
    remote: Remote, git_cache: GitCache
) -> None:
    old = poll_after(remote, git_cache, {"nebula.toml": V1})
    new = poll_after(remote, git_cache, {"nebula.toml": None, "README": "moved"})

    assert git_cache.read_file(remote.url, new, "nebula.toml") is None
    assert git_cache.read_file(remote.url, old, "nebula.toml") == V1.encode()


def test_commit_info(remote: Remote, git_cache: GitCache) -> None:
    when = datetime(2026, 3, 2, 14, 30, 5, tzinfo=UTC)
    sha = remote.repo.commit(
        {"nebula.toml": V1},
        "Protect production\n\nReviewers asked for it.\n",
        author=Author("Grace Hopper", "grace@example.com"),
        when=when,
    )
    poll(git_cache, remote.url)

    assert git_cache.commit_info(remote.url, sha) == CommitInfo(
        sha=sha,
        short_sha=sha[:7],
        author_name="Grace Hopper",
        author_email="grace@example.com",
        summary="Protect production",
        message="Protect production\n\nReviewers asked for it.\n",
        committed_at=when,
    )


def test_reading_a_commit_that_was_never_fetched_says_so(
    remote: Remote, git_cache: GitCache
) -> None:
    sha = remote.repo.commit({"nebula.toml": V1})

    with pytest.raises(PermanentError) as caught:
        git_cache.read_file(remote.url, sha, "nebula.toml")

    assert str(caught.value) == (
        f"Commit {sha[:7]} of {remote.url} is not in the git cache; "
        "ensure() must fetch it before it is read."
    )


def test_ensure_refuses_what_is_not_a_commit_id(git_cache: GitCache) -> None:
    with pytest.raises(PermanentError, match=r"^'main' is not a commit id\.$"):
        git_cache.ensure("/nowhere", "main", "main")


def poll_after(remote: Remote, cache: GitCache, files: dict[str, str | None]) -> str:
    remote.repo.commit(files)
    return poll(cache, remote.url)


def test_heads_can_fetch_what_moved_as_they_go(remote: Remote, git_cache: GitCache) -> None:
    first = remote.repo.commit({"nebula.toml": V1})
    target = (remote.url, "main")

    assert git_cache.heads([target], fetch=True) == {target: HeadResult(first)}
    assert git_cache.heads([target], fetch=True) == {target: HeadResult(first)}
    assert git_cache.fetches == 1

    second = remote.repo.commit({"nebula.toml": V2})

    assert git_cache.heads([target], fetch=True) == {target: HeadResult(second)}
    assert git_cache.fetches == 2
    assert git_cache.read_file(remote.url, second, "nebula.toml") == V2.encode()


def test_a_head_that_cannot_be_fetched_comes_back_with_its_error(
    git_repos: GitRepoFactory, git_cache: GitCache
) -> None:
    repo = git_repos.served()
    sha = repo.commit({"nebula.toml": V1})
    for loose in (repo.path / "objects").glob("[0-9a-f][0-9a-f]"):
        shutil.rmtree(loose)  # the ref is still advertised; its objects are gone

    result = git_cache.heads([(repo.git_url, "main")], fetch=True)[(repo.git_url, "main")]

    assert result.commit == sha
    assert isinstance(result.error, TransientError)
    assert str(result.error).startswith(f"Could not fetch main from {repo.git_url}: ")
