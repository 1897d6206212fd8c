"""The simulated cluster's API server: its objects in the state store (so they survive a
restart of the reconciler, and several processes see the same cluster), whether it can be
reached, a log of the calls that changed something, and each call's ``latency``
(``NEBULA_SIMULATED_LATENCY``, real time, for benchmarks; no sleep at all by default).

A call reads at once and writes when it ends (``simulatedwrites``): on its own, in one
transaction; inside ``batch()`` (a tick's batch of calls), with the batch's other writes in one
transaction once they are all made. Statements run on bare connections (no ORM session), each
built once at import (``simulatedsql``): the check that the API is reachable is read in the
query that reads the object a call looks at, and the objects written are upserted in one
statement. A Secret's values are stored sealed with the server's key (``sealing``).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import Connection, delete, or_, select

from reconciler.clock import Clock
from reconciler.errors import UnreachableError
from reconciler.runtimes import sealing
from reconciler.runtimes import simulatedsql as sql
from reconciler.runtimes.cluster import Manifest, ReleaseObjects, replicas_by_process
from reconciler.runtimes.simulatedsql import BY_NAME, CONTROL, LOG
from reconciler.runtimes.simulatedwrites import Found, Gathered, Key, Listed, Put, Writes
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from renderers import naming

UNREACHABLE = "the simulated cluster's API cannot be reached"
_C = sql.OBJECTS


# How many idle connections a batch keeps for its calls' reads: the tick's own thread, where
# calls that return at once are made, and one more. Keeping one for every thread of the pool
# would hold NEBULA_WORKERS of the store's connections while calls wait on a slow API, away
# from the lease keeper and the other jobs.
_READERS_KEPT = 2


class _Readers:
    """A batch's connections for reading on PostgreSQL: one per thread its calls run on
    (up to ``_READERS_KEPT``), opened by its first call there and kept until the batch ends
    (autocommit: each query reads at once, as on a connection of its own). Checking a
    connection out of the pool for each call had cost more than most calls' query, and most
    calls of a batch make none."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._open: dict[int, Connection] = {}
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        thread = threading.get_ident()
        with self._lock:
            conn = self._open.pop(thread, None)
        if conn is None:
            conn = self._db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            yield conn
        except BaseException:
            conn.close()  # (a query that failed may have left it unusable: the next opens anew)
            raise
        with self._lock:
            keep = thread not in self._open and len(self._open) < _READERS_KEPT
            if keep:
                self._open[thread] = conn
        if not keep:  # (a call within a call, or more threads than are worth keeping one for)
            conn.close()

    def close(self) -> None:
        with self._lock:
            kept, self._open = list(self._open.values()), {}
        for conn in kept:
            conn.close()


@dataclass
class _Call:
    """One call in progress: where it reads, and what it will write."""

    conn: Connection
    writes: Writes = field(default_factory=Writes)


class SimulatedApi:
    def __init__(self, db: Database, clock: Clock, vault: Vault, latency: timedelta) -> None:
        self.db = db
        self.clock = clock
        self.vault = vault
        self.latency = latency
        # SQLite has one writer: this process's calls take turns here rather than in SQLite's
        # busy handler, which sleeps between tries.
        self._turns: threading.Lock | None = threading.Lock() if db.is_sqlite else None
        # The batch the calls of this context belong to (``batch``); none outside one.
        self._batch: ContextVar[Gathered | None] = ContextVar(f"batch-{id(self)}", default=None)
        self._readers: ContextVar[_Readers | None] = ContextVar(f"readers-{id(self)}", default=None)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """A batch of calls: their writes are stored together when it ends (not when it
        raises: then they are dropped, as if the process had died before they were made)."""
        batch = Gathered()
        readers = None if self.db.is_sqlite else _Readers(self.db)
        token, reading = self._batch.set(batch), self._readers.set(readers)
        try:
            yield
        finally:
            self._batch.reset(token)
            self._readers.reset(reading)
            if readers is not None:
                readers.close()
        if batch.writes:
            with self._transaction(wait=False) as conn:
                self._write(conn, batch.writes)

    # -- test controls ----------------------------------------------------------------------

    def set_reachable(self, reachable: bool) -> None:
        """Make the simulated API unreachable (every call raises ``UnreachableError``)."""
        with self.db.transaction() as session:
            conn = session.connection()
            if reachable:
                conn.execute(delete(sql.OBJECTS).where(sql.CONTROL_KEY))
            else:
                self._put_all(conn, [(("", CONTROL, "unreachable"), Put({}, self.clock.now()))])

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
        with self._transaction() as conn:
            row = self._get(conn, namespace, kind, name)
            if row is None:
                return None
            body = change(sealing.unseal(self.vault, row.body))
            self._put_all(conn, [((namespace, kind, name), Put(body, self.clock.now()))])
            return body

    def delete(self, namespace: str, kind: str, name: str) -> bool:
        """Delete a live object behind Nebula's back; False when there was none."""
        with self._transaction() as conn:
            self._reachable(conn)
            return (
                conn.execute(delete(sql.OBJECTS).where(sql.key(namespace, kind, name))).rowcount > 0
            )

    # -- storage ----------------------------------------------------------------------------

    def _wait(self) -> None:
        if self.latency > timedelta(0):
            time.sleep(self.latency.total_seconds())

    @contextmanager
    def _transaction(self, *, wait: bool = True) -> Iterator[Connection]:
        """One call's latency (real time, and only when one is set), then one transaction."""
        if wait:
            self._wait()
        with self._turns or contextlib.nullcontext(), self.db.begin() as conn:
            yield conn

    @contextmanager
    def _call(self) -> Iterator[_Call]:
        """One call to the API that may change something: on its own, one transaction (its
        reads, then its writes); in a batch (``batch``), reads as ``_look`` does and writes
        left to the batch. A call that raises writes nothing."""
        batch = self._batch.get()
        if batch is None:
            with self._transaction() as conn:
                call = _Call(conn)
                yield call
                self._write(conn, call.writes)
            return
        with self._look() as conn:
            call = _Call(conn)
            yield call
        batch.add(call.writes)

    @contextmanager
    def _look(self) -> Iterator[Connection]:
        """One call to the API that only reads: its latency, then its query, with no
        transaction of its own on PostgreSQL (one round trip; in a batch, on the connection
        its thread keeps for the batch: ``_Readers``), a snapshot on SQLite (which does not
        queue behind the writer)."""
        self._wait()
        readers = self._readers.get()
        if readers is not None:
            with readers.connection() as conn:
                yield conn
        elif self.db.is_sqlite:
            with self.db.reading() as session:
                yield session.connection()
        else:
            with self.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                yield conn

    def _get(self, conn: Connection, namespace: str, kind: str, name: str) -> Found | None:
        """The object, read in the query that checks the API is reachable; in a batch, seen
        as the batch's writes left it (``Gathered``), over what the store held when the batch
        first read it: for the kinds ``BY_NAME``, the namespace's objects of those kinds are
        read together the first time (a batch's calls read a few objects in each of a few
        namespaces: a query per namespace, not one per object)."""
        key = (namespace, kind, name)
        batch = self._batch.get()
        if batch is None:
            return self._get_one(conn, key)
        if kind in BY_NAME and not batch.known(key):
            rows = conn.execute(sql.NAMESPACE_BY_NAME, {"ns": namespace}).all()
            if any(row.kind == CONTROL for row in rows):
                raise UnreachableError(UNREACHABLE)
            found = {(namespace, r.kind, r.name): Found(r.kind, r.body, r.created_at) for r in rows}
            batch.read_namespace(namespace, BY_NAME, found)
        if not batch.known(key):
            batch.read(key, self._get_one(conn, key))
        return batch.over(key)

    def _get_one(self, conn: Connection, key: Key) -> Found | None:
        """The object at ``key``, read in the query that checks the API is reachable."""
        namespace, kind, name = key
        rows = conn.execute(sql.GET, {"ns": namespace, "kind": kind, "name": name}).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        row = next((row for row in rows if row.kind == kind), None)
        return Found(row.kind, row.body, row.created_at) if row is not None else None

    def _get_all(
        self, conn: Connection, keys: Iterable[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], Manifest]:
        """Each of the objects (by namespace, kind and name) that exists, unsealed, read in
        the query that checks the API is reachable."""
        rows = conn.execute(
            select(_C.namespace, _C.kind, _C.name, _C.body).where(
                or_(sql.CONTROL_KEY, *(sql.key(*key) for key in keys))
            )
        ).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        return {(r.namespace, r.kind, r.name): sealing.unseal(self.vault, r.body) for r in rows}

    def _reachable(self, conn: Connection) -> None:
        """Raises ``UnreachableError`` unless the API can be reached (once per batch)."""
        batch = self._batch.get()
        if batch is not None and batch.reachable:
            return
        if conn.scalar(sql.REACHABLE) is not None:
            raise UnreachableError(UNREACHABLE)
        if batch is not None:
            batch.reachable = True

    def _write(self, conn: Connection, writes: Writes) -> None:
        """What calls wrote: deletions, then applies (``_put_all``), then the log entries."""
        if writes.deleted:
            conn.execute(
                sql.DELETE_KEY,
                [{"ns": ns, "kind": kind, "name": name} for ns, kind, name in writes.deleted],
            )
        self._put_all(conn, writes.applied)
        if writes.log:
            now = self.clock.now()
            conn.execute(
                sql.LOG_ENTRY[conn.dialect.name],
                [{"suffix": f"-{uuid.uuid4().hex[:8]}", "body": {"entry": entry}, "now": now}
                 for entry in writes.log],
            )  # fmt: skip

    def _put_all(self, conn: Connection, objects: Iterable[tuple[Key, Put]]) -> None:
        """Server-side apply of each object (``_upsert``), in one statement in key order;
        two replicas applying one object at the same moment both succeed, the later body
        winning, as on a real API server. A new object is created at its ``Put.at``."""
        unique = self._sealed(conn, dict(sorted(objects)))
        if not unique:
            return
        conn.execute(
            sql.UPSERT[conn.dialect.name],
            [
                {"namespace": ns, "kind": kind, "name": name, "body": put.body,
                 "created_at": put.at, "updated_at": put.at}
                for (ns, kind, name), put in unique.items()
            ],
        )  # fmt: skip

    def _sealed(self, conn: Connection, unique: dict[Key, Put]) -> dict[Key, Put]:
        """Secrets sealed; one whose values did not change is left out (its sealed form
        differs on every encryption, so it is compared in the clear: an identical apply
        changes nothing)."""
        secrets = [key for key in unique if key[1] == "Secret"]
        if not secrets:
            return unique
        stored = {
            (ns, kind, name): sealing.unseal(self.vault, body)
            for ns, kind, name, body in conn.execute(
                sql.SECRETS, {"names": sorted({key[2] for key in secrets})}
            )
        }
        return {
            key: Put(sealing.seal(self.vault, put.body), put.at) if key[1] == "Secret" else put
            for key, put in unique.items()
            if key[1] != "Secret" or stored.get(key) != put.body
        }

    def _apply_all(self, call: _Call, namespace: str, manifests: tuple[Manifest, ...]) -> None:
        now = self.clock.now()
        for manifest in manifests:
            call.writes.put(address(manifest, namespace), manifest, now)

    def _running(self, call: _Call, objects: ReleaseObjects) -> dict[str, int]:
        """Each process's replicas in the unit's other releases (the most of them)."""
        rows = call.conn.execute(sql.IN_NAMESPACE, {"ns": objects.namespace}).all()
        found = []
        for row in rows:
            labels = row.body.get("metadata", {}).get("labels") or {}
            if (
                row.kind == "Deployment"
                and labels.get(naming.SERVICE) == objects.unit
                and labels.get(naming.RELEASE) != objects.release
            ):
                found.append(row.body)
        return replicas_by_process(found)

    def _delete_where(
        self,
        call: _Call,
        namespace: str,
        labels: dict[str, str],
        *,
        kinds: Collection[str] = (),
        keep: Collection[str] = (),
    ) -> list[str]:
        """Delete the namespace's objects with ``labels``, read in the query that checks the
        API is reachable; their ``Kind/name``."""
        read = call.conn.execute(sql.IN_NAMESPACE, {"ns": namespace}).all()
        if any(row.kind == CONTROL for row in read):
            raise UnreachableError(UNREACHABLE)
        rows = [Listed(row.kind, row.name, row.body) for row in read]
        batch = self._batch.get()
        if batch is not None:
            rows = batch.within(namespace, rows)
        doomed = [
            row
            for row in rows
            if all(
                (row.body.get("metadata", {}).get("labels", {}) or {}).get(k) == v
                for k, v in labels.items()
            )
            and (not kinds or row.kind in kinds)
            and f"{row.kind}/{row.name}" not in keep
        ]
        for row in doomed:
            call.writes.delete((namespace, row.kind, row.name))
        return [f"{row.kind}/{row.name}" for row in doomed]


def address(manifest: Manifest, namespace: str) -> tuple[str, str, str]:
    """Where ``manifest`` is stored when applied in ``namespace``: (namespace, kind, name)."""
    meta = manifest.get("metadata", {})
    kind = str(manifest.get("kind", ""))
    ns = "" if kind == "Namespace" else str(meta.get("namespace") or namespace)
    return ns, kind, str(meta.get("name", ""))
