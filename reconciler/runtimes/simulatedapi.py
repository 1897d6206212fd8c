"""The simulated cluster's API server: its objects in the state store (so they survive a
restart of the reconciler, and several processes see the same cluster), whether it can be
reached, a log of the calls that changed something, and each call's ``latency``
(``NEBULA_SIMULATED_LATENCY``, real time, for benchmarks; no sleep at all by default).

Each call is one transaction of a few statements on a bare connection (no ORM session), each
statement built once at import: the check that the API is reachable is read in the query
that reads the object a call looks at, and the objects a call applies are upserted in one
executemany. A Secret's values are stored sealed with the server's key (``sealing``).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Connection,
    Integer,
    Row,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.elements import ColumnElement

from reconciler.clock import Clock
from reconciler.errors import UnreachableError
from reconciler.runtimes import sealing
from reconciler.runtimes.cluster import Manifest
from reconciler.store import schema
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from reconciler.store.schema import UTCDateTime

CONTROL = "simulation.nebula.dev/control"
LOG = "simulation.nebula.dev/log"
UNREACHABLE = "the simulated cluster's API cannot be reached"

_OBJECTS = _C = schema.ClusterObject
Found = Row[Any, Any, Any]  # (kind, body, created_at)


def _key(namespace: Any, kind: Any, name: Any) -> ColumnElement[bool]:
    """One object, by the unique key its index is on."""
    return and_(_C.namespace == namespace, _C.kind == kind, _C.name == name)


# The statements of the calls a stage makes, built once: a statement object caches its
# compiled form, so a call costs its round trips rather than building SQL each time.
_CONTROL_KEY = _key("", CONTROL, "unreachable")
_REACHABLE = select(_C.id).where(_CONTROL_KEY)
_GET = select(_C.kind, _C.body, _C.created_at).where(
    or_(_CONTROL_KEY, _key(bindparam("ns"), bindparam("kind"), bindparam("name")))
)
_IN_NAMESPACE = select(_C.id, _C.kind, _C.name, _C.body).where(
    or_(_C.namespace == bindparam("ns"), _CONTROL_KEY)
)
_DELETE_IDS = delete(_OBJECTS).where(_C.id.in_(bindparam("ids", expanding=True)))
_SECRETS = select(_C.namespace, _C.kind, _C.name, _C.body).where(
    _C.kind == "Secret", _C.name.in_(bindparam("names", expanding=True))
)


def _upsert(dialect: str) -> Any:
    """Server-side apply of one object (run once per object, as one executemany): created, or
    updated when the body differs (an identical apply changes nothing)."""
    statement = (sqlite_insert if dialect == "sqlite" else pg_insert)(_OBJECTS)
    return statement.on_conflict_do_update(
        index_elements=["namespace", "kind", "name"],
        set_={"body": statement.excluded.body, "updated_at": statement.excluded.updated_at},
        # (JSON has no equality on PostgreSQL: compared as the text it was written as)
        where=cast(_C.body, Text) != cast(statement.excluded.body, Text),
    )


def _log_entry(dialect: str) -> Any:
    """Log an entry, numbered after the last one (an index lookup, not a count of the whole
    log) in the statement that inserts it; the suffix keeps two replicas numbering at once
    from colliding."""
    last = func.coalesce(cast(func.substr(func.max(_C.name), 1, 9), Integer) + 1, 0)
    if dialect == "sqlite":
        number = func.printf("%09d", last)
    else:
        number = func.lpad(cast(last, Text), 9, "0")
    now = bindparam("now", type_=UTCDateTime())
    body = bindparam("body", type_=JSON())
    numbered = select(
        literal(""), literal(LOG), number + bindparam("suffix", type_=Text()), body, now, now
    ).where(_C.namespace == "", _C.kind == LOG)
    columns = ["namespace", "kind", "name", "body", "created_at", "updated_at"]
    return insert(_OBJECTS).from_select(columns, numbered)


_UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}
_LOG_ENTRY = {dialect: _log_entry(dialect) for dialect in ("sqlite", "postgresql")}


class SimulatedApi:
    def __init__(self, db: Database, clock: Clock, vault: Vault, latency: timedelta) -> None:
        self.db = db
        self.clock = clock
        self.vault = vault
        self.latency = latency
        # SQLite has one writer: this process's calls take turns here rather than in SQLite's
        # busy handler, which sleeps between tries.
        self._turns: threading.Lock | None = threading.Lock() if db.is_sqlite else None

    # -- test controls ----------------------------------------------------------------------

    def set_reachable(self, reachable: bool) -> None:
        """Make the simulated API unreachable (every call raises ``UnreachableError``)."""
        with self.db.transaction() as session:
            conn = session.connection()
            if reachable:
                conn.execute(delete(_OBJECTS).where(_CONTROL_KEY))
            else:
                self._put_all(conn, [("", CONTROL, "unreachable", {})])

    def log(self) -> list[str]:
        """Every mutating call, in order: ``"start shop-prod/api r-2"``, ``"drain ..."``."""
        with self.db.transaction() as session:
            rows = session.connection().execute(
                select(_C.body).where(_C.namespace == "", _C.kind == LOG).order_by(_C.name)
            )
            return [str(body["entry"]) for (body,) in rows]

    def objects(self, namespace: str) -> list[Manifest]:
        with self.db.transaction() as session:
            rows = session.connection().execute(
                select(_C.body)
                .where(_C.namespace == namespace, _C.kind.not_in([CONTROL, LOG]))
                .order_by(_C.kind, _C.name)
            )
            return [sealing.unseal(self.vault, body) for (body,) in rows]

    def change(
        self, namespace: str, kind: str, name: str, change: Callable[[Manifest], Manifest]
    ) -> Manifest | None:
        """Change a live object as someone with kubectl would (``tampering``): its new body,
        None when there is no such object."""
        with self._call() as conn:
            row = self._get(conn, namespace, kind, name)
            if row is None:
                return None
            body = change(sealing.unseal(self.vault, row.body))
            self._put_all(conn, [(namespace, kind, name, body)])
            return body

    def delete(self, namespace: str, kind: str, name: str) -> bool:
        """Delete a live object behind Nebula's back; False when there was none."""
        with self._call() as conn:
            self._reachable(conn)
            return conn.execute(delete(_OBJECTS).where(_key(namespace, kind, name))).rowcount > 0

    # -- storage ----------------------------------------------------------------------------

    def _wait(self) -> None:
        if self.latency > timedelta(0):
            time.sleep(self.latency.total_seconds())

    @contextmanager
    def _call(self) -> Iterator[Connection]:
        """One call to the API that changes something: its latency (real time, and only when
        one is set), then one transaction."""
        self._wait()
        with self._turns or contextlib.nullcontext(), self.db.begin() as conn:
            yield conn

    @contextmanager
    def _look(self) -> Iterator[Connection]:
        """One call to the API that only reads: its latency, then its query, with no
        transaction of its own on PostgreSQL (one round trip), a snapshot on SQLite (which
        does not queue behind the writer)."""
        self._wait()
        if self.db.is_sqlite:
            with self.db.reading() as session:
                yield session.connection()
        else:
            with self.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                yield conn

    def _get(self, conn: Connection, namespace: str, kind: str, name: str) -> Found | None:
        """The object, read in the query that checks the API is reachable."""
        rows = conn.execute(_GET, {"ns": namespace, "kind": kind, "name": name}).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        return next((row for row in rows if row.kind == kind), None)

    def _get_all(
        self, conn: Connection, keys: Iterable[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], Manifest]:
        """Each of the objects (by namespace, kind and name) that exists, unsealed, read in
        the query that checks the API is reachable."""
        rows = conn.execute(
            select(_C.namespace, _C.kind, _C.name, _C.body).where(
                or_(_CONTROL_KEY, *(_key(*key) for key in keys))
            )
        ).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        return {(r.namespace, r.kind, r.name): sealing.unseal(self.vault, r.body) for r in rows}

    def _reachable(self, conn: Connection) -> None:
        if conn.scalar(_REACHABLE) is not None:
            raise UnreachableError(UNREACHABLE)

    def _put_all(self, conn: Connection, objects: Iterable[tuple[str, str, str, Manifest]]) -> None:
        """Server-side apply of each (namespace, kind, name, body) (``_upsert``), in one
        executemany; two replicas applying one object at the same moment both succeed, the
        later body winning, as on a real API server."""
        now = self.clock.now()
        unique = {(ns, kind, name): body for ns, kind, name, body in objects}
        unique = self._sealed(conn, unique)
        if not unique:
            return
        conn.execute(
            _UPSERT[conn.dialect.name],
            [
                {"namespace": ns, "kind": kind, "name": name, "body": body, "created_at": now,
                 "updated_at": now}
                for (ns, kind, name), body in unique.items()
            ],
        )  # fmt: skip

    def _sealed(
        self, conn: Connection, unique: dict[tuple[str, str, str], Manifest]
    ) -> dict[tuple[str, str, str], Manifest]:
        """Secrets sealed; one whose values did not change is left out (its sealed form
        differs on every encryption, so it is compared in the clear: an identical apply
        changes nothing)."""
        secrets = [key for key in unique if key[1] == "Secret"]
        if not secrets:
            return unique
        stored = {
            (ns, kind, name): sealing.unseal(self.vault, body)
            for ns, kind, name, body in conn.execute(
                _SECRETS, {"names": sorted({key[2] for key in secrets})}
            )
        }
        return {
            key: sealing.seal(self.vault, body) if key[1] == "Secret" else body
            for key, body in unique.items()
            if key[1] != "Secret" or stored.get(key) != body
        }

    def _record(self, conn: Connection, entry: str) -> None:
        """Log ``entry`` (``_log_entry``)."""
        conn.execute(
            _LOG_ENTRY[conn.dialect.name],
            {"suffix": f"-{uuid.uuid4().hex[:8]}", "body": {"entry": entry},
             "now": self.clock.now()},
        )  # fmt: skip

    def _apply_all(self, conn: Connection, namespace: str, manifests: tuple[Manifest, ...]) -> None:
        self._put_all(conn, [(*address(manifest, namespace), manifest) for manifest in manifests])

    def _delete_where(self, conn: Connection, namespace: str, labels: dict[str, str]) -> list[str]:
        """Delete the namespace's objects with ``labels``, read in the query that checks the
        API is reachable; their ``Kind/name``."""
        rows = conn.execute(_IN_NAMESPACE, {"ns": namespace}).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        doomed = [
            row
            for row in rows
            if all(
                (row.body.get("metadata", {}).get("labels", {}) or {}).get(k) == v
                for k, v in labels.items()
            )
        ]
        if doomed:
            conn.execute(_DELETE_IDS, {"ids": [row.id for row in doomed]})
        return [f"{row.kind}/{row.name}" for row in doomed]


def address(manifest: Manifest, namespace: str) -> tuple[str, str, str]:
    """Where ``manifest`` is stored when applied in ``namespace``: (namespace, kind, name)."""
    meta = manifest.get("metadata", {})
    kind = str(manifest.get("kind", ""))
    ns = "" if kind == "Namespace" else str(meta.get("namespace") or namespace)
    return ns, kind, str(meta.get("name", ""))
