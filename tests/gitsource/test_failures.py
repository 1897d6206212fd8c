"""Unreachable remotes, refused credentials and bad URLs: our errors, with no secret in them."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.errors import PermanentError, TransientError
from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.credentials import GitCredentials
from reconciler.gitsource.results import HeadResult
from tests.plugins.git import (
    GIT_HTTP_TOKEN,
    GitDaemon,
    GitHttpServer,
    GitRepo,
    GitRepoFactory,
    free_port,
)

SECRET = "ghp_s3cretT0kenValue"


def only_error(cache: GitCache, url: str, branch: str = "main") -> TransientError | PermanentError:
    result = cache.heads([(url, branch)])[(url, branch)]
    assert result.commit is None
    assert result.error is not None
    assert result.error.code == "delivery"
    return result.error


@pytest.fixture
def closed_port() -> int:
    return free_port()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture
def served(git_repos: GitRepoFactory) -> GitRepo:
    repo = git_repos.served()
    repo.commit({"nebula.toml": 'name = "shop"\n'})
    return repo


def test_a_closed_port_is_a_delivery_error(git_cache: GitCache, closed_port: int) -> None:
    url = f"git://127.0.0.1:{closed_port}/shop.git"

    error = only_error(git_cache, url)

    assert isinstance(error, TransientError)
    assert str(error) == (
        f"Could not list the branches of {url}: failed to connect to 127.0.0.1: "
        "Connection refused. The next poll tries again."
    )


def test_a_missing_path_is_a_delivery_error(git_cache: GitCache, tmp_path: Path) -> None:
    url = str(tmp_path / "gone.git")

    error = only_error(git_cache, url)

    assert isinstance(error, TransientError)
    assert str(error) == (
        f"Could not list the branches of {url}: no repository at that path. "
        "The next poll tries again."
    )


def test_a_missing_file_url_is_a_delivery_error(git_cache: GitCache, tmp_path: Path) -> None:
    url = (tmp_path / "gone.git").as_uri()

    error = only_error(git_cache, url)

    assert isinstance(error, TransientError)
    assert str(error).startswith(f"Could not list the branches of {url}: failed to resolve path")


def test_a_remote_that_comes_back_answers_again(git_cache: GitCache, tmp_path: Path) -> None:
    repo_path = tmp_path / "later.git"
    assert only_error(git_cache, str(repo_path))

    sha = GitRepo(repo_path, bare=True).commit({"nebula.toml": "x = 1\n"})

    assert git_cache.heads([(str(repo_path), "main")]) == {
        (str(repo_path), "main"): HeadResult(sha)
    }


def test_a_server_that_never_answers_times_out(tmp_path: Path, silent_port: int) -> None:
    url = f"git://127.0.0.1:{silent_port}/shop.git"
    with GitCache(tmp_path / "cache", connect_timeout=0.2, io_timeout=0.2) as cache:
        error = only_error(cache, url)

    assert isinstance(error, TransientError)
    assert str(error) == (
        f"Could not list the branches of {url}: could not read from socket: timed out. "
        "The next poll tries again."
    )


def test_one_unreachable_remote_does_not_hide_the_others(
    git_cache: GitCache, served: GitRepo, closed_port: int
) -> None:
    down = f"git://127.0.0.1:{closed_port}/down.git"

    heads = git_cache.heads([(down, "main"), (served.git_url, "main")])

    assert heads[(served.git_url, "main")] == HeadResult(served.head())
    assert isinstance(heads[(down, "main")].error, TransientError)


def test_a_failed_fetch_is_a_delivery_error(git_cache: GitCache, closed_port: int) -> None:
    url = f"git://127.0.0.1:{closed_port}/shop.git"

    with pytest.raises(TransientError) as caught:
        git_cache.ensure(url, "main", "a" * 40)

    assert caught.value.code == "delivery"
    assert str(caught.value) == (
        f"Could not fetch main from {url}: failed to connect to 127.0.0.1: "
        "Connection refused. The next poll tries again."
    )
    assert git_cache.fetches == 1


@pytest.mark.parametrize("scheme", ["https", "http", "git"])
def test_credentials_in_the_url_never_appear_in_errors(
    git_cache: GitCache, closed_port: int, scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"{scheme}://deploy:{SECRET}@127.0.0.1:{closed_port}/shop.git"

    error = only_error(git_cache, url)
    with pytest.raises(TransientError) as fetch_error:
        git_cache.ensure(url, "main", "b" * 40)

    safe = f"{scheme}://***@127.0.0.1:{closed_port}/shop.git"
    assert str(error) == (
        f"Could not list the branches of {safe}: failed to connect to 127.0.0.1: "
        "Connection refused. The next poll tries again."
    )
    assert safe in str(fetch_error.value)
    for text in (str(error), str(fetch_error.value), repr(error), caplog.text):
        assert SECRET not in text
        assert "deploy" not in text


def test_a_token_from_the_settings_opens_a_protected_remote(
    tmp_path: Path, served: GitRepo
) -> None:
    credentials = GitCredentials.parse(f"127.0.0.1={GIT_HTTP_TOKEN}")
    with GitCache(tmp_path / "cache", credentials=credentials) as cache:
        sha = served.head()
        assert sha is not None
        assert cache.heads([(served.http_url, "main")]) == {
            (served.http_url, "main"): HeadResult(sha)
        }
        cache.ensure(served.http_url, "main", sha)
        assert cache.read_file(served.http_url, sha, "nebula.toml") == b'name = "shop"\n'


def test_a_token_in_the_url_opens_a_protected_remote(
    tmp_path: Path, served: GitRepo, git_http: GitHttpServer
) -> None:
    url = git_http.url(served.path.name, userinfo=GIT_HTTP_TOKEN)
    with GitCache(tmp_path / "cache") as cache:
        assert cache.heads([(url, "main")]) == {(url, "main"): HeadResult(served.head())}


def test_a_protected_remote_without_a_token_says_what_to_configure(
    tmp_path: Path, served: GitRepo, git_http: GitHttpServer
) -> None:
    with GitCache(tmp_path / "cache") as cache:
        error = only_error(cache, served.http_url)

    assert isinstance(error, PermanentError)
    assert str(error) == (
        f"{served.http_url} asks for credentials and none are configured for "
        f"127.0.0.1:{git_http.port}; add host=token to NEBULA_GIT_CREDENTIALS."
    )


def test_a_refused_token_from_the_settings_is_not_shown(
    tmp_path: Path, served: GitRepo, git_http: GitHttpServer
) -> None:
    credentials = GitCredentials.parse(f"127.0.0.1:{git_http.port}={SECRET}")
    before = len(git_http.requests)
    with GitCache(tmp_path / "cache", credentials=credentials) as cache:
        error = only_error(cache, served.http_url)

    assert isinstance(error, PermanentError)
    assert str(error) == (
        f"{served.http_url} refused the credentials Nebula sent; check the token or key for "
        f"127.0.0.1:{git_http.port} in NEBULA_GIT_CREDENTIALS."
    )
    assert SECRET not in repr(error)
    # Asked once without and once with the token, then gave up instead of replaying it.
    assert [authorized for _, _, authorized in git_http.requests[before:]] == [False, False]


def test_refused_credentials_in_the_url_are_not_shown(
    tmp_path: Path, served: GitRepo, git_http: GitHttpServer
) -> None:
    url = git_http.url(served.path.name, userinfo=f"deploy:{SECRET}")
    with GitCache(tmp_path / "cache") as cache:
        error = only_error(cache, url)

    safe = git_http.url(served.path.name, userinfo="***")
    assert isinstance(error, PermanentError)
    assert str(error) == (
        f"{safe} refused the credentials in the URL; fix them, or remove them and add "
        f"host=token for 127.0.0.1:{git_http.port} to NEBULA_GIT_CREDENTIALS."
    )
    assert SECRET not in repr(error)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "ftp://example.com/shop.git",
            "The repository URL ftp://example.com/shop.git uses the unsupported scheme 'ftp'; "
            "use a local path, file://, git://, http(s):// or ssh://.",
        ),
        (
            f"https://deploy:{SECRET}@example.com:99999/shop.git",
            "The repository URL https://***@example.com:99999/shop.git cannot be parsed: "
            "Port out of range 0-65535.",
        ),
        ("https:///shop.git", "The repository URL https:///shop.git names no host."),
        ("  ", "The repository URL is empty."),
    ],
)
def test_a_url_that_cannot_be_used_is_a_permanent_delivery_error(
    git_cache: GitCache, url: str, message: str
) -> None:
    error = only_error(git_cache, url)

    assert isinstance(error, PermanentError)
    assert str(error) == message
    assert git_cache.remote_calls == 0


def test_ssh_urls_reach_the_ssh_transport(git_cache: GitCache, closed_port: int) -> None:
    """No ssh server here; an unreachable one shows the URL goes to libgit2's ssh transport."""
    url = f"ssh://git@127.0.0.1:{closed_port}/shop.git"

    error = only_error(git_cache, url)

    assert isinstance(error, TransientError)
    assert str(error) == (
        f"Could not list the branches of ssh://***@127.0.0.1:{closed_port}/shop.git: "
        "failed to connect to 127.0.0.1: Connection refused. The next poll tries again."
    )


def test_scp_like_ssh_urls_are_understood(git_cache: GitCache) -> None:
    # Port 22 may or may not have a server; either way the answer names the sanitized URL.
    error = only_error(git_cache, "git@127.0.0.1:shop.git")

    assert "***@127.0.0.1:shop.git" in str(error)


def test_a_repository_the_server_does_not_have_is_a_delivery_error(
    git_cache: GitCache, git_http: GitHttpServer, git_daemon: GitDaemon
) -> None:
    over_http = git_http.url("missing.git")
    over_git = git_daemon.url("missing.git")

    heads = git_cache.heads([(over_http, "main"), (over_git, "main")])

    http_error, git_error = heads[(over_http, "main")].error, heads[(over_git, "main")].error
    assert isinstance(http_error, TransientError)
    assert str(http_error) == (
        f"Could not list the branches of {over_http}: unexpected http status code: 404. "
        "The next poll tries again."
    )
    assert isinstance(git_error, TransientError)
    assert str(git_error) == (
        f"Could not list the branches of {over_git}: remote error: access denied or "
        "repository not exported: /missing.git. The next poll tries again."
    )
