"""The simulated cluster: the embedded default for the demo and the tests.

It keeps its objects in the state store (so they survive a restart of the reconciler, and
several processes see the same cluster) and makes every stage take ``delay``
(``NEBULA_SIMULATED_DELAY``) before it succeeds, unless ``faults`` names the release's image
(``NEBULA_SIMULATED_FAULTS``). The stabilization period is compressed into that one delay:
pods report Ready since long enough once qualifying has lasted ``delay``. Each call to its
API may take ``latency`` besides (``NEBULA_SIMULATED_LATENCY``, real time: for benchmarks;
0, no sleep at all, by default). A documented test and demo aid, not a production path.

Each call is one transaction of a few statements (Core, no ORM objects): the check that the
API is reachable is read in the query that reads the object a call looks at, and the objects
a call applies are upserted in one statement.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
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
from reconciler.core.states import Blocker
from reconciler.errors import TransientError, UnreachableError
from reconciler.runtimes.cluster import (
    JobPhase,
    JobStatus,
    Manifest,
    ProbeResult,
    ReleaseObjects,
    Rollout,
    Teardown,
)
from reconciler.store import schema
from reconciler.store.database import Database
from reconciler.store.schema import UTCDateTime
from renderers.capabilities import RECENT, Capabilities

CONTROL = "simulation.nebula.dev/control"
LOG = "simulation.nebula.dev/log"
UNREACHABLE = "the simulated cluster's API cannot be reached"


_OBJECTS = _C = schema.ClusterObject
_Found = Row[Any, Any, Any]  # (kind, body, created_at)


class SimulatedCluster:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        delay: timedelta,
        faults: Mapping[str, Blocker | str],
        latency: timedelta = timedelta(0),
    ) -> None:
        self.db = db
        self.clock = clock
        self.delay = delay
        self.latency = latency
        self.faults = {image: Blocker(value) for image, value in faults.items()}
        # SQLite has one writer: this process's calls take turns here rather than in SQLite's
        # busy handler, which sleeps between tries.
        self._turns: threading.Lock | None = threading.Lock() if db.is_sqlite else None

    # -- test controls ----------------------------------------------------------------------

    def set_reachable(self, reachable: bool) -> None:
        """Make the simulated API unreachable (every call raises ``UnreachableError``)."""
        with self.db.transaction() as session:
            conn = session.connection()
            if reachable:
                conn.execute(delete(_OBJECTS).where(_key("", CONTROL, "unreachable")))
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
            return [dict(body) for (body,) in rows]

    # -- storage ----------------------------------------------------------------------------

    def _wait(self) -> None:
        if self.latency > timedelta(0):
            time.sleep(self.latency.total_seconds())

    @contextmanager
    def _call(self) -> Iterator[Connection]:
        """One call to the API that changes something: its latency (real time, and only when
        one is set), then one transaction."""
        self._wait()
        with self._turns or contextlib.nullcontext(), self.db.transaction() as session:
            yield session.connection()

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

    def _get(self, conn: Connection, namespace: str, kind: str, name: str) -> _Found | None:
        """The object, read in the query that checks the API is reachable."""
        rows = conn.execute(
            select(_C.kind, _C.body, _C.created_at).where(
                or_(_key("", CONTROL, "unreachable"), _key(namespace, kind, name))
            )
        ).all()
        if any(row.kind == CONTROL for row in rows):
            raise UnreachableError(UNREACHABLE)
        return next((row for row in rows if row.kind == kind), None)

    def _reachable(self, conn: Connection) -> None:
        if conn.scalar(select(_C.id).where(_key("", CONTROL, "unreachable"))) is not None:
            raise UnreachableError(UNREACHABLE)

    def _put_all(self, conn: Connection, objects: Iterable[tuple[str, str, str, Manifest]]) -> None:
        """Server-side apply of each (namespace, kind, name, body): created, or updated when
        the body differs (an identical apply changes nothing). One statement for them all;
        two replicas applying one object at the same moment both succeed, the later body
        winning, as on a real API server."""
        now = self.clock.now()
        unique = {(ns, kind, name): body for ns, kind, name, body in objects}
        if not unique:
            return
        insert = sqlite_insert if conn.dialect.name == "sqlite" else pg_insert
        statement = insert(_OBJECTS).values(
            [
                {"namespace": ns, "kind": kind, "name": name, "body": body, "created_at": now,
                 "updated_at": now}
                for (ns, kind, name), body in unique.items()
            ]
        )  # fmt: skip
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=["namespace", "kind", "name"],
                set_={"body": statement.excluded.body, "updated_at": now},
                # (JSON has no equality on PostgreSQL: compared as the text it was written as)
                where=cast(_C.body, Text) != cast(statement.excluded.body, Text),
            )
        )

    def _record(self, conn: Connection, entry: str) -> None:
        """Log ``entry``, numbered after the last entry (an index lookup, not a count of the
        whole log) in the statement that inserts it; the suffix keeps two replicas numbering
        at once from colliding."""
        last = func.coalesce(cast(func.substr(func.max(_C.name), 1, 9), Integer) + 1, 0)
        if conn.dialect.name == "sqlite":
            number = func.printf("%09d", last)
        else:
            number = func.lpad(cast(last, Text), 9, "0")
        now = bindparam("now", self.clock.now(), type_=UTCDateTime())
        body = bindparam("body", {"entry": entry}, type_=JSON())
        numbered = select(
            literal(""), literal(LOG), number + f"-{uuid.uuid4().hex[:8]}", body, now, now
        ).where(_C.namespace == "", _C.kind == LOG)
        columns = ["namespace", "kind", "name", "body", "created_at", "updated_at"]
        conn.execute(insert(_OBJECTS).from_select(columns, numbered))

    def _apply_all(self, conn: Connection, namespace: str, manifests: tuple[Manifest, ...]) -> None:
        objects = []
        for manifest in manifests:
            meta = manifest.get("metadata", {})
            kind = str(manifest.get("kind", ""))
            ns = "" if kind == "Namespace" else str(meta.get("namespace") or namespace)
            objects.append((ns, kind, str(meta.get("name", "")), manifest))
        self._put_all(conn, objects)

    def _elapsed(self, row: _Found) -> timedelta:
        created: datetime = row.created_at
        return self.clock.now() - created

    def _fault(self, objects: ReleaseObjects) -> Blocker | None:
        return self.faults.get(objects.image)

    # -- Cluster ----------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return RECENT

    def admit(self, objects: ReleaseObjects) -> None:
        with self._call() as conn:
            self._reachable(conn)
            self._apply_all(conn, objects.namespace, objects.shared)

    def start_release_job(self, objects: ReleaseObjects) -> None:
        if objects.release_job is None:
            return
        with self._call() as conn:
            if self._get(conn, objects.namespace, "Job", _name(objects.release_job)) is None:
                self._record(
                    conn, f"release-job {objects.namespace}/{objects.unit} {objects.release}"
                )
            self._apply_all(conn, objects.namespace, (objects.release_job,))

    def release_job(self, objects: ReleaseObjects) -> JobStatus:
        assert objects.release_job is not None
        with self._look() as conn:
            row = self._get(conn, objects.namespace, "Job", _name(objects.release_job))
        if row is None:
            return JobStatus(JobPhase.RUNNING, "not created yet")
        elapsed = self._elapsed(row)
        if elapsed >= timedelta(seconds=objects.release_command_timeout):
            return JobStatus(
                JobPhase.FAILED,
                f"the release command did not finish within {objects.release_command_timeout}s",
            )
        if elapsed < self.delay:
            return JobStatus(JobPhase.RUNNING)
        if self._fault(objects) is Blocker.RELEASE_COMMAND:
            return JobStatus(
                JobPhase.FAILED, "the release command exited with status 1", "migration failed"
            )
        return JobStatus(JobPhase.SUCCEEDED)

    def start(self, objects: ReleaseObjects) -> None:
        with self._call() as conn:
            if objects.primary is None:
                self._reachable(conn)
                first = True
            else:
                first = (
                    self._get(conn, objects.namespace, objects.primary_kind, objects.primary)
                    is None
                )
            self._apply_all(conn, objects.namespace, objects.workload)
            if first:
                self._record(conn, f"start {objects.namespace}/{objects.unit} {objects.release}")

    def rollout(self, objects: ReleaseObjects) -> Rollout:
        with self._look() as conn:
            if objects.primary is None:
                self._reachable(conn)
                return Rollout(
                    desired=0,
                    ready=0,
                    started=True,
                    ready_since=self.clock.now() - timedelta(days=1),
                )
            row = self._get(conn, objects.namespace, objects.primary_kind, objects.primary)
        if row is None:
            return Rollout(objects.replicas, 0, False, message="not created yet")
        elapsed = self._elapsed(row)
        fault = self._fault(objects)
        if elapsed < self.delay:
            return Rollout(objects.replicas, 0, False, message="pods are starting")
        if fault is Blocker.IMAGE_PULL:
            return Rollout(
                objects.replicas,
                0,
                False,
                blocker=Blocker.IMAGE_PULL,
                message=f'Back-off pulling image "{objects.image}": ErrImagePull',
            )
        if fault is Blocker.CAPACITY:
            return Rollout(
                objects.replicas,
                0,
                False,
                blocker=Blocker.CAPACITY,
                message=f"0/3 nodes are available: 3 Insufficient cpu ({objects.replicas} replicas unschedulable)",
            )
        if fault is Blocker.READINESS:
            return Rollout(
                objects.replicas,
                0,
                True,
                message="Back-off restarting failed container: CrashLoopBackOff",
            )
        ready_since: datetime = row.created_at + self.delay - timedelta(hours=1)
        if elapsed < 2 * self.delay:
            return Rollout(objects.replicas, 0, True, message="waiting for pods to become Ready")
        return Rollout(objects.replicas, objects.replicas, True, ready_since=ready_since)

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        with self._look() as conn:
            self._reachable(conn)
        if self._fault(objects) is Blocker.READINESS:
            return ProbeResult(False, f"GET {objects.readiness_path}: connection refused")
        if objects.probe.value == "tcp":
            return ProbeResult(True, f"TCP connect to port {objects.port}: ok")
        return ProbeResult(True, f"GET {objects.readiness_path}: 200 OK")

    def activate(self, objects: ReleaseObjects) -> None:
        if objects.stable_service is None:
            return
        with self._call() as conn:
            previous = self._get(conn, objects.namespace, "Service", objects.unit)
            if self._fault(objects) is Blocker.ROUTE_ACTIVATION:
                raise TransientError(
                    f"the API refused to patch Service {objects.unit}: 409 Conflict", status=409
                )
            body = dict(objects.stable_service)
            self._apply_all(conn, objects.namespace, (body,))
            if previous is None or previous.body != body:
                self._record(conn, f"activate {objects.namespace}/{objects.unit} {objects.release}")

    def selected_release(self, namespace: str, unit: str) -> str | None:
        with self._look() as conn:
            row = self._get(conn, namespace, "Service", unit)
        if row is None:
            return None
        selector = row.body.get("spec", {}).get("selector", {})
        value = selector.get("nebula.dev/release")
        return str(value) if value is not None else None

    def _delete_where(self, conn: Connection, namespace: str, labels: dict[str, str]) -> list[str]:
        """Delete the namespace's objects with ``labels``, read in the query that checks the
        API is reachable; their ``Kind/name``."""
        rows = conn.execute(
            select(_C.id, _C.kind, _C.name, _C.body).where(
                or_(_C.namespace == namespace, _key("", CONTROL, "unreachable"))
            )
        ).all()
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
            conn.execute(delete(_OBJECTS).where(_C.id.in_([row.id for row in doomed])))
        return [f"{row.kind}/{row.name}" for row in doomed]

    def drain(self, namespace: str, unit: str, release: str) -> None:
        self._delete_release("drain", namespace, unit, release)

    def remove(self, namespace: str, unit: str, release: str) -> None:
        self._delete_release("remove", namespace, unit, release)

    def _delete_release(self, verb: str, namespace: str, unit: str, release: str) -> None:
        labels = {"nebula.dev/service": unit, "nebula.dev/release": release}
        with self._call() as conn:
            if self._delete_where(conn, namespace, labels):
                self._record(conn, f"{verb} {namespace}/{unit} {release}")

    def teardown(self, namespace: str, unit: str) -> Teardown:
        with self._call() as conn:
            deleted = self._delete_where(conn, namespace, {"nebula.dev/service": unit})
            if deleted:
                self._record(conn, f"teardown {namespace}/{unit}")
            return Teardown(already_clean=not deleted, deleted=tuple(deleted))


def _key(namespace: str, kind: str, name: str) -> ColumnElement[bool]:
    """One object, by the unique key its index is on."""
    return and_(_C.namespace == namespace, _C.kind == kind, _C.name == name)


def _name(manifest: Manifest) -> str:
    return str(manifest.get("metadata", {}).get("name", ""))
