"""The store's failures in our words: SQLAlchemy's and the drivers' errors as ``StoreError``s.

Each says in one line what happened and gives a hint, and the kind tells callers what to do
about it: ``StoreUnreachableError`` (the server is down or restarting: wait), ``StoreReadOnlyError``
and ``StoreFullError`` (a person must act; reading still works), a plain ``StoreError``
otherwise. Errors that are about the statement itself (a unique key, a foreign key) are not
the store's failures: ``store_error`` returns None for them and they stay as they are.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from reconciler.errors import (
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    StoreUnreachableError,
)

READS_STILL_WORK = "reading commands (status, deployments, changesets, approvals) still work"
_NEARLY_FULL = 1 << 20  # bytes free under which a SQLite I/O error is a full disk


def store_error(exc: BaseException, sqlite_path: Path | None = None) -> StoreError | None:
    """``exc`` as the store's failure, or None when it is not one (or not SQLAlchemy's)."""
    if not isinstance(exc, DBAPIError):
        return None
    orig = exc.orig
    name = str(getattr(orig, "sqlite_errorname", "") or "")
    state = str(getattr(orig, "sqlstate", "") or "")
    text = first_line(exc)
    if name.startswith("SQLITE_READONLY") or state == "25006":
        where = f"{sqlite_path} " if sqlite_path is not None else "the database "
        return StoreReadOnlyError(
            f"the state store is read-only: {where}cannot be written ({text})",
            hint=_writable(sqlite_path),
        )
    if name.startswith("SQLITE_FULL") or state == "53100" or _nearly_full(name, sqlite_path):
        room = str(sqlite_path.parent) if sqlite_path is not None else "the database's disk"
        return StoreFullError(
            f"the disk holding the state store is full: {room} has no space left ({text})",
            hint=f"free some space there; {READS_STILL_WORK}",
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"the state store is busy: another process held its write lock too long ({text})",
            hint="try again; if it lasts, look for a process holding nebula.db open",
        )
    if not name and (isinstance(exc, InterfaceError) or _unreachable(exc, state)):
        return StoreUnreachableError(
            f"the database cannot be reached: {text}",
            hint="check that the database server runs and that NEBULA_DATABASE_URL points at it",
        )
    if isinstance(exc, OperationalError):
        return StoreError(f"the state store failed: {text}", hint=READS_STILL_WORK)
    return None


class Outage:
    """An outage of the store as the log tells it: one warning when it starts failing (a
    server restarting fails every job every second), one line when it answers again: when
    every job that failed has run through once more (a job that did not need the store
    proves nothing)."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failing: set[str] = set()

    def failed(self, job: str, error: StoreError) -> None:
        with self._lock:
            self._failing.add(job)
            if self._since is not None:
                return
            self._since = time.monotonic()
        self._log.warning(
            f"the state store is failing; retrying: {error.message}",
            extra={"job": job, "code": error.code, "hint": error.hint},
        )

    def answered(self, job: str) -> None:
        with self._lock:
            if job not in self._failing:
                return
            self._failing.discard(job)
            if self._failing or self._since is None:
                return
            since, self._since = self._since, None
        self._log.info(
            "the state store answers again", extra={"seconds": round(time.monotonic() - since, 1)}
        )


def first_line(exc: BaseException) -> str:
    """The first line of a driver error, without the URL (it may hold a password)."""
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _unreachable(exc: DBAPIError, state: str) -> bool:
    """A connection that failed or was cut: refused, reset, the server shutting down or
    starting up (SQLSTATE class 08, and 57P01-57P03)."""
    if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return True
    return isinstance(exc, OperationalError) and (exc.connection_invalidated or not state)


def _nearly_full(name: str, path: Path | None) -> bool:
    """SQLite says "disk I/O error" when it cannot grow its files: on a disk with no room
    left, that is what it means."""
    if not name.startswith("SQLITE_IOERR") or path is None:
        return False
    try:
        return shutil.disk_usage(path.parent).free < _NEARLY_FULL
    except OSError:
        return False


def _writable(path: Path | None) -> str:
    if path is None:
        return f"connect to a database that takes writes (the primary); {READS_STILL_WORK}"
    return f"make {path} and its directory writable by the user Nebula runs as; {READS_STILL_WORK}"
