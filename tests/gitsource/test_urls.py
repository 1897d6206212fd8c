"""Remote URLs: transports, sanitizing, cache keys; credentials from the settings string."""

from __future__ import annotations

import pytest

from reconciler.errors import ConfigurationError
from reconciler.gitsource.credentials import GitCredentials, HostToken
from reconciler.gitsource.urls import Transport, parse, sanitize_url, scrub


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:token@host/x", "https://***@host/x"),
        ("https://ghp_abcdefgh12345@github.com/o/r.git", "https://***@github.com/o/r.git"),
        ("https://u:p%40ss@host:8443/x.git", "https://***@host:8443/x.git"),
        ("https://a@b:c@host/x", "https://***@host/x"),
        ("https://host/x.git?private_token=abc", "https://host/x.git?***"),
        ("ssh://git@host:2222/x.git", "ssh://***@host:2222/x.git"),
        ("git@github.com:o/r.git", "***@github.com:o/r.git"),
        ("git://host/x.git", "git://host/x.git"),
        ("https://host/x.git", "https://host/x.git"),
        ("file:///srv/git/x.git", "file:///srv/git/x.git"),
        ("/srv/git/x.git", "/srv/git/x.git"),
        ("https://user:tok@host:99999/x", "https://***@host:99999/x"),
        ("https://user:tok@[::1/x", "https://***@[::1/x"),
    ],
)
def test_sanitize_url(url: str, shown: str) -> None:
    assert sanitize_url(url) == shown


@pytest.mark.parametrize(
    ("url", "transport", "host"),
    [
        ("/srv/git/shop.git", Transport.LOCAL, None),
        ("./shop", Transport.LOCAL, None),
        ("shop", Transport.LOCAL, None),
        ("file:///srv/git/shop.git", Transport.FILE, None),
        ("git://Git.Example.com/shop.git", Transport.GIT, "git.example.com"),
        ("http://127.0.0.1:8080/shop.git", Transport.HTTP, "127.0.0.1:8080"),
        ("https://u:t@github.com/o/shop.git", Transport.HTTPS, "github.com"),
        ("ssh://git@github.com/o/shop.git", Transport.SSH, "github.com"),
        ("git+ssh://git@github.com/o/shop.git", Transport.SSH, "github.com"),
        ("git@github.com:o/shop.git", Transport.SSH, "github.com"),
    ],
)
def test_transports(url: str, transport: Transport, host: str | None) -> None:
    remote = parse(url)

    assert (remote.transport, remote.host) == (transport, host)


@pytest.mark.parametrize("transport", list(Transport))
def test_only_local_transports_fetch_in_full(transport: Transport) -> None:
    assert transport.supports_shallow is (transport not in (Transport.LOCAL, Transport.FILE))


def test_the_cache_key_ignores_credentials() -> None:
    keys = {
        parse(url).cache_key
        for url in (
            "https://github.com/o/shop.git",
            "https://old:token1@github.com/o/shop.git",
            "https://new:token2@github.com/o/shop.git",
        )
    }

    assert len(keys) == 1
    assert parse("https://github.com/o/other.git").cache_key not in keys


def test_a_parsed_url_never_shows_its_credentials() -> None:
    remote = parse("https://deploy:s3cr3t-value@github.com/o/shop.git")

    assert "s3cr3t" not in repr(remote)
    assert remote.safe == "https://***@github.com/o/shop.git"


def test_scrub_masks_the_url_and_every_secret() -> None:
    url = "https://deploy:s3cr3t-value@host/x.git"
    text = f"failed for {url}; retried with s3cr3t-value and tok-from-settings"

    assert scrub(text, url, ["s3cr3t-value", "tok-from-settings"]) == (
        "failed for https://***@host/x.git; retried with *** and ***"
    )


def test_credentials_from_the_setting() -> None:
    credentials = GitCredentials.parse(" github.com=ghp_one , GIT.example.com:8443=glpat-two,")

    assert credentials.token_for("github.com") == HostToken("ghp_one")
    assert credentials.token_for("git.example.com:8443") == HostToken("glpat-two")
    assert credentials.token_for("git.example.com") is None
    assert credentials.token_for("gitlab.com") is None
    assert "ghp_one" not in repr(credentials)


def test_a_token_for_a_host_serves_every_port() -> None:
    credentials = GitCredentials.parse("127.0.0.1=tok")

    assert credentials.token_for("127.0.0.1:9418") == HostToken("tok")


def test_an_empty_setting_means_no_credentials() -> None:
    assert GitCredentials.parse("").tokens == {}


@pytest.mark.parametrize(
    ("text", "entry"),
    [("ghp_s3cr3t", 1), ("=ghp_s3cr3t", 1), ("github.com=", 1), ("a=b,,ghp_s3cr3t", 3)],
)
def test_a_malformed_setting_is_refused_without_showing_tokens(text: str, entry: int) -> None:
    with pytest.raises(ConfigurationError) as caught:
        GitCredentials.parse(text)

    assert (
        str(caught.value) == f"NEBULA_GIT_CREDENTIALS entry {entry} is not of the form host=token."
    )
    assert caught.value.hint == "write host=token pairs separated by commas"
