"""Bringing the schema to a revision with Alembic: loaded by name (``Database.MIGRATING``)
only when the store is behind, since Alembic and its script directory cost a command that
only reads a tenth of a second."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from reconciler.errors import StoreError

MIGRATIONS = Path(__file__).parent / "migrations"


def config() -> Config:
    made = Config()
    made.set_main_option("script_location", str(MIGRATIONS))
    return made


def head() -> str:
    """The newest revision of the migrations (``database.HEAD`` must say the same)."""
    found = ScriptDirectory.from_config(config()).get_current_head()
    assert found is not None
    return found


def upgrade(engine: Engine, revision: str) -> None:
    _run(engine, lambda made: command.upgrade(made, revision))


def downgrade(engine: Engine, revision: str) -> None:
    """Back to ``revision`` (going back to an earlier Nebula; tests)."""
    _run(engine, lambda made: command.downgrade(made, revision))


def _run(engine: Engine, step: Callable[[Config], None]) -> None:
    """One migration step in one transaction. On SQLite, with foreign keys off meanwhile and
    checked before it commits: a batch migration rebuilds a table (copy, drop, rename), and
    dropping ``members`` while ``api_tokens`` point at it fails while they are enforced (the
    procedure SQLite documents for schema changes; the pragma only takes outside a
    transaction)."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if sqlite:
            _foreign_keys(connection, "OFF")
        try:
            with connection.begin():
                made = config()
                made.attributes["connection"] = connection
                step(made)
                broken = (
                    connection.exec_driver_sql("PRAGMA foreign_key_check").all() if sqlite else []
                )
                if broken:
                    raise StoreError(
                        f"migrating the store would break {len(broken)} reference(s), the first "
                        f"in table {broken[0][0]}: nothing was changed"
                    )
        finally:
            if sqlite:
                _foreign_keys(connection, "ON")


def _foreign_keys(connection: Connection, state: str) -> None:
    raw = connection.connection.dbapi_connection  # not a transaction: the pragma takes
    assert raw is not None
    raw.execute(f"PRAGMA foreign_keys={state}")
