"""A password written in a repository URL is stored encrypted: the raw SQLite files (database,
write-ahead log) never hold it, while git still authenticates with it, and no output shows it.
A store written before (the URL in clear text) is sealed when Nebula next opens it."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import text

from reconciler import bootstrap
from reconciler.web.app import create_app
from tests.plugins.git import GitHttpServer, GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import AppServer


def _forms(secret: str) -> list[bytes]:
    """How a secret could sit in a file: as is, url-quoted, base64 of the userinfo."""
    return [
        secret.encode(),
        quote(secret).encode(),
        base64.b64encode(f"deploy:{secret}".encode()),
    ]


def _raw_files(nebula: Nebula) -> dict[str, bytes]:
    database = Path(nebula.ctx.db.url.split(":///", 1)[1])
    files = [database, database.with_name(database.name + "-wal")]
    files.append(database.with_name(database.name + "-shm"))
    return {p.name: p.read_bytes() for p in files if p.exists()}


def _leaks(nebula: Nebula, secret: str) -> list[str]:
    return [
        f"{form!r} in {name}"
        for name, data in _raw_files(nebula).items()
        for form in _forms(secret)
        if form in data
    ]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[GitRepo, GitHttpServer, str]]:
    password = "cnry-urlpass-" + secrets.token_hex(8)
    repo = GitRepo(tmp_path / "served" / "shop.git", bare=True)
    repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    server = GitHttpServer(tmp_path / "served", token=password).start()
    yield repo, server, password
    server.stop()


def test_the_database_files_never_hold_a_repository_password(
    nebula: Nebula, served: tuple[GitRepo, GitHttpServer, str]
) -> None:
    repo, server, password = served
    url = server.url("shop.git", userinfo=f"deploy:{password}")

    added = nebula.ok(f"project add shop --repo {url}")
    report = nebula.reconcile()

    shown = f"http://***@127.0.0.1:{server.port}/shop.git"
    assert report.poll.blocked == {}  # the remote took the password: git authenticated
    assert nebula.json("project list")["projects"][0]["commit"] == repo.head()
    assert added.out == f"project shop watches {shown} (main, nebula.toml)\n"
    listed = nebula.ok("project list")
    with AppServer(create_app(nebula.ctx)) as app:
        api = httpx.get(f"{app.url}/api/v1/projects/shop").text
        page = httpx.get(f"{app.url}/projects/shop").text
    for where, output in {"list": listed.out + listed.err, "api": api, "page": page}.items():
        assert password not in output, where
        assert shown in output, where
    assert _leaks(nebula, password) == []


def test_a_repository_changed_to_a_url_with_a_password_is_stored_encrypted(
    nebula: Nebula, served: tuple[GitRepo, GitHttpServer, str]
) -> None:
    _, server, password = served
    nebula.ok(f"project add shop --repo {server.url('shop.git')} --no-check")
    assert nebula.reconcile().poll.blocked == {"shop": "delivery"}  # it wants the password

    with_password = server.url("shop.git", userinfo=f"deploy:{password}")
    changed = nebula.ok(f"project set shop repo {with_password}")
    report = nebula.reconcile()

    assert changed.out == f"shop: repo = http://***@127.0.0.1:{server.port}/shop.git\n"
    assert report.poll.blocked == {}
    assert _leaks(nebula, password) == []


def test_a_store_written_before_is_sealed_when_opened(
    nebula: Nebula, served: tuple[GitRepo, GitHttpServer, str]
) -> None:
    """Before issue 16 the URL was stored as given: opening the store encrypts it, and the
    old text is gone from the database and its write-ahead log."""
    _, server, password = served
    url = server.url("shop.git", userinfo=f"deploy:{password}")
    nebula.ok(f"project add shop --repo {server.url('shop.git')} --no-check")
    with nebula.ctx.db.transaction() as session:  # what the previous version wrote
        session.execute(text("UPDATE projects SET repo_url = :url"), {"url": url})
    assert _leaks(nebula, password) != []

    first = nebula.ctx
    nebula.ctx = bootstrap.open_context(first.settings, nebula.clock)  # the next start
    try:
        assert _leaks(nebula, password) == []
        assert nebula.reconcile().poll.blocked == {}  # the sealed URL still authenticates
        assert nebula.json("project list")["projects"][0]["repo"] == (
            f"http://***@127.0.0.1:{server.port}/shop.git"
        )
    finally:
        nebula.ctx.db.dispose()
        if nebula.ctx.git is not None:
            nebula.ctx.git.close()
        nebula.ctx = first
