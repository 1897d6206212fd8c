"""The schema is created and upgraded by Alembic on start, from the first revision to the latest,
and the migrations describe exactly the models (a model change without a migration fails here)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from reconciler.clock import FakeClock
from reconciler.store import database, migrating
from reconciler.store.database import Database
from reconciler.store.migrating import MIGRATIONS
from reconciler.store.schema import Base
from tests.plugins import people


def _revisions() -> list[str]:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    return [r.revision for r in reversed(list(script.walk_revisions()))]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("fresh_postgres_url"))


def test_every_revision_upgrades_in_order_to_the_models(url: str) -> None:
    db = Database(url, migrate=False)
    try:
        for revision in _revisions():
            db.migrate(revision)
            with db.engine.connect() as connection:
                version = connection.execute(
                    text("SELECT version_num FROM alembic_version")
                ).scalar()
            assert version == revision
        with db.engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        assert differences == []
    finally:
        db.dispose()


def test_the_store_knows_its_newest_migration_without_alembic() -> None:
    """``Database`` opens a store that is up to date without loading Alembic: by HEAD."""
    assert database.HEAD == migrating.head() == _revisions()[-1]


def test_downgrade_to_nothing_and_back(url: str) -> None:
    db = Database(url)
    try:
        migrating.downgrade(db.engine, "base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        db.migrate()
        assert "deployments" in inspect(db.engine).get_table_names()
    finally:
        db.dispose()


def test_opening_the_store_twice_migrates_once_and_keeps_rows(url: str) -> None:
    first = Database(url)
    with first.transaction() as session:
        session.execute(text("INSERT INTO settings (key, value) VALUES ('policy.x', 'true')"))
    first.dispose()
    second = Database(url)
    try:
        with second.transaction() as session:
            assert (
                session.execute(text("SELECT value FROM settings WHERE key = 'policy.x'")).scalar()
                == "true"
            )
        tables = set(inspect(second.engine).get_table_names())
        assert {"deployments", "events", "releases", "changesets", "approvals", "outbox"} <= tables
    finally:
        second.dispose()


def test_an_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    from reconciler.errors import StoreUnreachableError

    with pytest.raises(StoreUnreachableError) as caught:
        Database("postgresql+psycopg://nebula:hunter2@127.0.0.1:9/nebula")
    assert "the database cannot be reached" in caught.value.message
    assert "hunter2" not in caught.value.message


def test_going_back_to_1_1_leaves_a_viewer_unable_to_act(url: str) -> None:
    """1.1 knew no viewer: one becomes a member, but one who cannot sign in (tokens gone)."""
    db = Database(url)
    clock = FakeClock()
    try:
        with db.transaction() as session:
            people.member(session, clock, "vera", "viewer")
            people.member(session, clock, "bob", "admin")
            people.token(session, clock, "vera")
            people.token(session, clock, "bob")
        migrating.downgrade(db.engine, "0008")
        with db.engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT m.name, m.role, COUNT(t.id) FROM members m "
                    "LEFT JOIN api_tokens t ON t.member_id = m.id GROUP BY m.name, m.role "
                    "ORDER BY m.name"
                )
            ).all()
        assert [tuple(r) for r in rows] == [("bob", "admin", 1), ("vera", "member", 0)]
    finally:
        db.dispose()


def test_a_1_1_store_with_members_and_tokens_upgrades_keeping_them(url: str) -> None:
    """Rebuilding ``members`` (a batch migration on SQLite) while tokens point at it."""
    db = Database(url, migrate=False)
    try:
        db.migrate("0008")
        with db.engine.begin() as connection:
            connection.execute(
                text("INSERT INTO members (name, role, created_at) VALUES ('bob', 'admin', :at)"),
                {"at": datetime(2026, 1, 1)},
            )
            connection.execute(
                text(
                    "INSERT INTO api_tokens (member_id, prefix, digest, created_at) "
                    "SELECT id, 'abcd1234', 'x', :at FROM members"
                ),
                {"at": datetime(2026, 1, 1)},
            )
        db.migrate()
        with db.engine.connect() as connection:
            kept = connection.execute(
                text(
                    "SELECT m.name, m.role, t.prefix FROM members m JOIN api_tokens t "
                    "ON t.member_id = m.id"
                )
            ).all()
        assert [tuple(r) for r in kept] == [("bob", "admin", "abcd1234")]
        assert db.revision() == database.HEAD
    finally:
        db.dispose()
