"""A SQLite store opened for reading with the standard library alone: what ``Database``
reads through, and what a local ``nebula status`` reads without loading SQLAlchemy
(``statusreads``). So both read a store on a read-only or full disk the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

# The newest migration: a store already there is only read, without loading Alembic
# (``database.MIGRATING``); tests/store/test_migrations.py checks this is Alembic's head.
HEAD = "0015"
RECONCILER = "reconciler"  # the heartbeat's name (``heartbeats``): one row, the last pass


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite ``url`` (None: another database, or SQLite in memory)."""
    if url.startswith("sqlite") and ":///" in url and not url.endswith(":memory:"):
        return Path(url.split(":///", 1)[1].split("?", 1)[0])
    return None


def reader(path: Path) -> Callable[[], sqlite3.Connection]:
    """Connections for reading ``path``: as usual, or, when SQLite cannot open the log's index
    (no room to create it, or a directory it may not write) and the log is empty, the file
    read as it stands (``immutable``: nothing is written, and with an empty log nothing newer
    exists to be missed)."""

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(str(path), check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
            return connection
        except sqlite3.OperationalError as exc:
            connection.close()
            wal = path.with_name(path.name + "-wal")
            name = str(getattr(exc, "sqlite_errorname", ""))
            cannot_index = ("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_READONLY")
            if not name.startswith(cannot_index) or (wal.exists() and wal.stat().st_size > 0):
                raise
        frozen = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
        return sqlite3.connect(frozen, uri=True, check_same_thread=False)

    return connect


def revision(connection: sqlite3.Connection) -> str | None:
    """The schema's revision as Alembic keeps it (None: none yet)."""
    found = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
    ).fetchone()
    if found is None:
        return None
    row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(row[0]) if row is not None else None
