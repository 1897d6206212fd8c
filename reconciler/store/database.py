"""The database: engine, sessions, and schema migrations run on open.

SQLite (the default, a file in ``.nebula/``) runs in WAL mode with a busy timeout so the CLI
and a running server can share it. PostgreSQL (``postgresql+psycopg://``) is for several
replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from reconciler.errors import ConfigurationError, TransientError

MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's "begin" event start transactions (as BEGIN IMMEDIATE, below) instead of
    # the driver's lazy BEGIN: a transaction that reads and then writes would otherwise fail
    # with "database is locked" when another process wrote in between (the CLI beside a server).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_immediate(connection: Any) -> None:
    """SQLite has one writer: take the write lock up front and wait for it (busy_timeout)."""
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _begin_deferred(connection: Any) -> None:
    """A read: a consistent snapshot (WAL) that never waits for the writer."""
    connection.exec_driver_sql("BEGIN")


class Database:
    def __init__(self, url: str, *, migrate: bool = True, echo: bool = False) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite and ":///" in url and not url.endswith(":memory:"):
            Path(url.split(":///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
        # A driver error quotes the statement's parameters, and a row may hold a secret (the
        # simulated cluster keeps Secret objects in the store): errors and logs never show them.
        kwargs: dict[str, Any] = {"echo": echo, "hide_parameters": True}
        if not self.is_sqlite:
            kwargs.update(pool_pre_ping=True, pool_size=5, max_overflow=5)
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except (SQLAlchemyError, ValueError, ImportError) as exc:
            raise ConfigurationError(f"NEBULA_DATABASE_URL is not usable: {_clean(exc)}") from exc
        self._read_engine = self.engine
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _begin_immediate)
            self._read_engine = create_engine(url, **kwargs)
            event.listen(self._read_engine, "connect", _sqlite_pragmas)
            event.listen(self._read_engine, "begin", _begin_deferred)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._readers = sessionmaker(self._read_engine, expire_on_commit=False)
        if migrate:
            self.migrate()

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision``; safe to run on every start."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        try:
            with self.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
        except OperationalError as exc:
            raise TransientError(
                f"the database cannot be reached: {_clean(exc)}", code="database"
            ) from exc

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed when the block ends, rolled back if it raises."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A read-only unit of work (pages, API reads): on SQLite it does not queue behind the
        writer; nothing it changes is committed."""
        session = self._readers()
        try:
            yield session
        finally:
            session.rollback()
            session.close()

    def session(self) -> Session:
        return self._sessions()

    def dispose(self) -> None:
        self.engine.dispose()
        self._read_engine.dispose()


def _clean(exc: BaseException) -> str:
    """The first line of a driver error, without the URL (it may hold a password)."""
    text = (
        str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else type(exc).__name__
    )
    return text
