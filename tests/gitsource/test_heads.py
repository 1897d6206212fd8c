"""Asking remotes for branch heads: one call per URL, no objects transferred."""

from __future__ import annotations

from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.results import HeadResult
from tests.gitsource.conftest import Remote
from tests.plugins.git import GitRepoFactory

TOML = 'name = "shop"\n'


def test_the_head_of_a_new_repository(remote: Remote, git_cache: GitCache) -> None:
    sha = remote.repo.commit({"nebula.toml": TOML}, "First")

    heads = git_cache.heads([(remote.url, "main")])

    assert heads == {(remote.url, "main"): HeadResult(sha)}
    assert git_cache.remote_calls == 1
    assert git_cache.fetches == 0


def test_asking_for_heads_transfers_no_objects(remote: Remote, git_cache: GitCache) -> None:
    remote.repo.commit({"nebula.toml": TOML})

    git_cache.heads([(remote.url, "main")])

    assert not git_cache.repository_path(remote.url).exists()


def test_a_branch_that_does_not_exist_has_no_head(remote: Remote, git_cache: GitCache) -> None:
    remote.repo.commit({"nebula.toml": TOML})

    result = git_cache.heads([(remote.url, "release")])[(remote.url, "release")]

    assert result == HeadResult(None)
    assert result.missing


def test_a_deleted_branch_has_no_head(remote: Remote, git_cache: GitCache) -> None:
    remote.repo.commit({"nebula.toml": TOML})
    remote.repo.commit({"nebula.toml": TOML}, branch="staging")
    assert git_cache.heads([(remote.url, "staging")])[(remote.url, "staging")].commit

    remote.repo.delete_branch("staging")

    assert git_cache.heads([(remote.url, "staging")]) == {(remote.url, "staging"): HeadResult(None)}


def test_an_empty_repository_has_no_head(remote: Remote, git_cache: GitCache) -> None:
    assert git_cache.heads([(remote.url, "main")]) == {(remote.url, "main"): HeadResult(None)}


def test_projects_on_the_same_branch_cost_one_remote_call(
    remote: Remote, git_cache: GitCache
) -> None:
    sha = remote.repo.commit({"nebula.toml": TOML})

    heads = git_cache.heads([(remote.url, "main"), (remote.url, "main")])

    assert heads == {(remote.url, "main"): HeadResult(sha)}
    assert git_cache.remote_calls == 1


def test_two_branches_of_one_repository_cost_one_remote_call(
    remote: Remote, git_cache: GitCache
) -> None:
    main = remote.repo.commit({"nebula.toml": TOML})
    staging = remote.repo.commit({"nebula.toml": 'name = "staging"\n'}, branch="staging")

    heads = git_cache.heads([(remote.url, "main"), (remote.url, "staging")])

    assert heads == {
        (remote.url, "main"): HeadResult(main),
        (remote.url, "staging"): HeadResult(staging),
    }
    assert git_cache.remote_calls == 1


def test_many_repositories_are_asked_once_each(
    git_repos: GitRepoFactory, git_cache: GitCache
) -> None:
    repos = [git_repos.served(f"svc{i}") for i in range(12)]
    expected = {
        (repo.git_url, "main"): HeadResult(repo.commit({"nebula.toml": f"n = {i}\n"}))
        for i, repo in enumerate(repos)
    }

    heads = git_cache.heads([*expected, *expected])

    assert heads == expected
    assert git_cache.remote_calls == len(repos)


def test_a_moved_head_is_seen_on_the_next_ask(remote: Remote, git_cache: GitCache) -> None:
    first = remote.repo.commit({"nebula.toml": TOML})
    assert git_cache.heads([(remote.url, "main")])[(remote.url, "main")] == HeadResult(first)

    second = remote.repo.commit({"nebula.toml": 'name = "shop2"\n'})

    assert git_cache.heads([(remote.url, "main")])[(remote.url, "main")] == HeadResult(second)
    assert git_cache.remote_calls == 2
