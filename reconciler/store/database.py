"""The database: engine, sessions, and schema migrations run on open.

SQLite (the default, a file in ``.nebula/``) runs in WAL mode with a busy timeout so the CLI
and a running server can share it; the file is its owner's only (``private``). PostgreSQL
(``postgresql+psycopg://``) is for several replicas.

A failure of the store leaves ``transaction`` and ``reading`` as a ``StoreError`` in one line
with a hint (``failures``). Reading asks nothing of the disk: the schema is migrated only when
it is behind, and on SQLite a reader that cannot open the write-ahead log's index (a full
disk) reads the file as it stands when the log holds nothing, so ``nebula status`` works on a
read-only or full disk while writes say why they cannot.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.exc import DBAPIError, DisconnectionError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from reconciler.errors import ConfigurationError, StoreError
from reconciler.lazy import Part
from reconciler.store import failures, private
from reconciler.store.sqlitereads import HEAD as HEAD
from reconciler.store.sqlitereads import reader, sqlite_path

MIGRATING = Part("reconciler.store.migrating", "upgrade")


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


# A pooled PostgreSQL connection idle this long is pinged before it is handed out, so one the
# server closed meanwhile (a restart) is replaced instead of failing the next unit of work.
# One in steady use is not: a ping per checkout would be a round trip per transaction.
PING_AFTER_IDLE = 1.0  # seconds


def _ping_when_idle(engine: Engine) -> None:
    dialect = engine.dialect

    def checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    def checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:  # gone: the pool connects afresh and hands that one out
            raise DisconnectionError(str(exc)) from exc

    event.listen(engine, "checkin", checked_in)
    event.listen(engine, "checkout", checked_out)


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
        self.path: Path | None = sqlite_path(url)  # the SQLite file
        if self.path is not None:
            private.make_dir(self.path.parent)
            with contextlib.suppress(OSError):  # a read-only directory: SQLite says so
                private.create_file(self.path)
            for suffix in ("-wal", "-shm"):
                private.tighten(self.path.with_name(self.path.name + suffix))
        # A driver error quotes the statement's parameters, and a row may hold a secret (the
        # simulated cluster keeps Secret objects in the store): errors and logs never show them.
        kwargs: dict[str, Any] = {"echo": echo, "hide_parameters": True}
        if not self.is_sqlite:
            kwargs.update(pool_size=5, max_overflow=5)
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except (SQLAlchemyError, ValueError, ImportError) as exc:
            raise ConfigurationError(
                f"NEBULA_DATABASE_URL is not usable: {failures.first_line(exc)}"
            ) from exc
        self._read_engine = self.engine
        if not self.is_sqlite:
            _ping_when_idle(self.engine)
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _begin_immediate)
            if self.path is not None:
                kwargs["creator"] = reader(self.path)
            self._read_engine = create_engine(url, **kwargs)
            event.listen(self._read_engine, "connect", _sqlite_pragmas)
            event.listen(self._read_engine, "begin", _begin_deferred)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._readers = sessionmaker(self._read_engine, expire_on_commit=False)
        if migrate:
            self.migrate()

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision``; safe to run on every start, and a schema already
        there is only read (a read-only or full disk still opens)."""
        wanted = HEAD if revision == "head" else revision
        try:
            if self.revision() == wanted:
                return
            MIGRATING.get()(self.engine, revision)
        except DBAPIError as exc:
            raise self._failure(exc) from exc

    def revision(self) -> str | None:
        """The schema's revision (None: none yet), read as Alembic keeps it."""
        with self._read_engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            found = connection.execute(text("SELECT version_num FROM alembic_version"))
            return found.scalar()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed when the block ends, rolled back if it raises."""
        session = self._sessions()
        try:
            with self._store_errors():
                try:
                    yield session
                    session.commit()
                except DBAPIError:
                    with contextlib.suppress(SQLAlchemyError):  # the connection may be gone too
                        session.rollback()
                    raise
                except BaseException:
                    session.rollback()
                    raise
        finally:
            session.close()

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A unit of work on a bare connection, for statements built once (no ORM session to
        set up and flush): committed when the block ends, rolled back if it raises; a failing
        store is a ``StoreError`` as in ``transaction``."""
        with self._store_errors(), self.engine.begin() as connection:
            yield connection

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A read-only unit of work (pages, API reads, the CLI's listings): on SQLite it does
        not queue behind the writer; nothing it changes is committed."""
        session = self._readers()
        try:
            with self._store_errors():
                yield session
        finally:
            with contextlib.suppress(SQLAlchemyError):
                session.rollback()
            session.close()

    @contextmanager
    def _store_errors(self) -> Iterator[None]:
        """A driver error the store's failures name (a full disk, a server gone) as that
        ``StoreError``; any other as it is."""
        try:
            yield
        except DBAPIError as exc:
            mapped = failures.store_error(exc, self.path)
            if mapped is None:
                raise
            raise mapped from exc

    def _failure(self, exc: DBAPIError) -> StoreError:
        return failures.store_error(exc, self.path) or StoreError(
            f"the state store failed: {failures.first_line(exc)}"
        )

    def session(self) -> Session:
        return self._sessions()

    def dispose(self) -> None:
        self.engine.dispose()
        self._read_engine.dispose()
