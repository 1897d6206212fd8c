"""The simulated cluster: the embedded default for the demo and the tests.

It keeps its objects in the state store (so they survive a restart of the reconciler, and
several processes see the same cluster) and makes every stage take ``delay``
(``NEBULA_SIMULATED_DELAY``) before it succeeds, unless ``faults`` names the release's image
(``NEBULA_SIMULATED_FAULTS``). The stabilization period is compressed into that one delay:
pods report Ready since long enough once qualifying has lasted ``delay``. A documented test
and demo aid, not a production path.

A Secret's ``data`` and ``stringData`` are stored encrypted with the server's key (the
``vault``), like every other secret in the store: the row holds them under ``SEALED`` and
``objects`` hands them back in the clear.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Text, cast, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core import drifts
from reconciler.core.states import Blocker
from reconciler.errors import TransientError, UnreachableError
from reconciler.runtimes.cluster import (
    JobPhase,
    JobStatus,
    Live,
    Manifest,
    ProbeResult,
    ReleaseObjects,
    Rollout,
    Teardown,
    checked,
)
from reconciler.store import schema
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from renderers.capabilities import RECENT, Capabilities

CONTROL = "simulation.nebula.dev/control"
LOG = "simulation.nebula.dev/log"
SEALED = "nebula.dev/sealed"  # a Secret's data and stringData, encrypted
_SECRET_FIELDS = ("data", "stringData")


class SimulatedCluster:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        delay: timedelta,
        faults: Mapping[str, Blocker | str],
        vault: Vault,
    ) -> None:
        self.db = db
        self.clock = clock
        self.delay = delay
        self.faults = {image: Blocker(value) for image, value in faults.items()}
        self.vault = vault

    # -- test controls ----------------------------------------------------------------------

    def set_reachable(self, reachable: bool) -> None:
        """Make the simulated API unreachable (every call raises ``UnreachableError``)."""
        with self.db.transaction() as session:
            if reachable:
                self._delete(session, "", CONTROL, "unreachable")
            else:
                self._put(session, "", CONTROL, "unreachable", {})

    def log(self) -> list[str]:
        """Every mutating call, in order: ``"start shop-prod/api r-2"``, ``"drain ..."``."""
        with self.db.transaction() as session:
            rows = session.scalars(
                select(schema.ClusterObject)
                .where(schema.ClusterObject.kind == LOG)
                .order_by(schema.ClusterObject.name)
            )
            return [str(r.body["entry"]) for r in rows]

    def objects(self, namespace: str) -> list[Manifest]:
        with self.db.transaction() as session:
            rows = session.scalars(
                select(schema.ClusterObject)
                .where(schema.ClusterObject.namespace == namespace)
                .where(schema.ClusterObject.kind.not_in([CONTROL, LOG]))
                .order_by(schema.ClusterObject.kind, schema.ClusterObject.name)
            )
            return [self._unsealed(r.body) for r in rows]

    # -- storage ----------------------------------------------------------------------------

    def _get(
        self, session: Session, namespace: str, kind: str, name: str
    ) -> schema.ClusterObject | None:
        return session.scalars(
            select(schema.ClusterObject).where(
                schema.ClusterObject.namespace == namespace,
                schema.ClusterObject.kind == kind,
                schema.ClusterObject.name == name,
            )
        ).first()

    def _sealed(self, body: Manifest) -> Manifest:
        """A Secret as it is stored: its values encrypted (other objects as they are)."""
        hidden = {k: body[k] for k in _SECRET_FIELDS if k in body}
        if body.get("kind") != "Secret" or not hidden:
            return body
        rest = {k: v for k, v in body.items() if k not in hidden}
        return {**rest, SEALED: self.vault.encrypt(json.dumps(hidden)).decode("ascii")}

    def _unsealed(self, body: Manifest) -> Manifest:
        if SEALED not in body:
            return dict(body)
        hidden = json.loads(self.vault.decrypt(str(body[SEALED]).encode("ascii")))
        return {**{k: v for k, v in body.items() if k != SEALED}, **hidden}

    def _put(self, session: Session, namespace: str, kind: str, name: str, body: Manifest) -> None:
        """Server-side apply: created, or updated when the body differs (an identical apply
        changes nothing). One statement either way; two replicas applying one object at the
        same moment both succeed, the later body winning, as on a real API server. A Secret
        is compared in the clear (its stored form is encrypted anew each time)."""
        if kind == "Secret":
            existing = self._get(session, namespace, kind, name)
            if existing is not None and self._unsealed(existing.body) == body:
                return
            body = self._sealed(body)
        now = self.clock.now()
        insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
        statement = insert(schema.ClusterObject).values(
            namespace=namespace, kind=kind, name=name, body=body, created_at=now, updated_at=now
        )
        session.execute(
            statement.on_conflict_do_update(
                index_elements=["namespace", "kind", "name"],
                set_={"body": statement.excluded.body, "updated_at": now},
                # (JSON has no equality on PostgreSQL: compared as the text it was written as)
                where=cast(schema.ClusterObject.body, Text) != cast(statement.excluded.body, Text),
            )
        )

    def _delete(self, session: Session, namespace: str, kind: str, name: str) -> bool:
        row = self._get(session, namespace, kind, name)
        if row is not None:
            session.delete(row)
            return True
        return False

    def _record(self, session: Session, entry: str) -> None:
        # Numbered after the last entry (an index lookup, not a count of the whole log); the
        # suffix keeps two replicas numbering at once from colliding.
        last = session.scalar(
            select(func.max(schema.ClusterObject.name)).where(
                schema.ClusterObject.namespace == "", schema.ClusterObject.kind == LOG
            )
        )
        number = int(last[:9]) + 1 if last else 0
        self._put(session, "", LOG, f"{number:09d}-{uuid.uuid4().hex[:8]}", {"entry": entry})

    def _session(self) -> Any:
        return self.db.transaction()

    def _check(self, session: Session) -> None:
        if self._get(session, "", CONTROL, "unreachable") is not None:
            raise UnreachableError("the simulated cluster's API cannot be reached")

    def _apply_all(self, session: Session, namespace: str, manifests: tuple[Manifest, ...]) -> None:
        for manifest in manifests:
            self._put(session, _namespace(manifest, namespace), *_kind_name(manifest), manifest)

    def _elapsed(self, row: schema.ClusterObject) -> timedelta:
        return self.clock.now() - row.created_at

    def _fault(self, objects: ReleaseObjects) -> Blocker | None:
        return self.faults.get(objects.image)

    # -- Cluster ----------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return RECENT

    def admit(self, objects: ReleaseObjects) -> None:
        with self._session() as session:
            self._check(session)
            self._apply_all(session, objects.namespace, objects.shared)

    def start_release_job(self, objects: ReleaseObjects) -> None:
        if objects.release_job is None:
            return
        with self._session() as session:
            self._check(session)
            if self._get(session, objects.namespace, "Job", _name(objects.release_job)) is None:
                self._record(
                    session, f"release-job {objects.namespace}/{objects.unit} {objects.release}"
                )
            self._apply_all(session, objects.namespace, (objects.release_job,))

    def release_job(self, objects: ReleaseObjects) -> JobStatus:
        assert objects.release_job is not None
        with self._session() as session:
            self._check(session)
            row = self._get(session, objects.namespace, "Job", _name(objects.release_job))
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
        with self._session() as session:
            self._check(session)
            first = (
                objects.primary is None
                or self._get(session, objects.namespace, objects.primary_kind, objects.primary)
                is None
            )
            self._apply_all(session, objects.namespace, objects.workload)
            if first:
                self._record(session, f"start {objects.namespace}/{objects.unit} {objects.release}")

    def rollout(self, objects: ReleaseObjects) -> Rollout:
        with self._session() as session:
            self._check(session)
            if objects.primary is None:
                return Rollout(
                    desired=0,
                    ready=0,
                    started=True,
                    ready_since=self.clock.now() - timedelta(days=1),
                )
            row = self._get(session, objects.namespace, objects.primary_kind, objects.primary)
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
                return Rollout(
                    objects.replicas, 0, True, message="waiting for pods to become Ready"
                )
            return Rollout(objects.replicas, objects.replicas, True, ready_since=ready_since)

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        with self._session() as session:
            self._check(session)
        if self._fault(objects) is Blocker.READINESS:
            return ProbeResult(False, f"GET {objects.readiness_path}: connection refused")
        if objects.probe.value == "tcp":
            return ProbeResult(True, f"TCP connect to port {objects.port}: ok")
        return ProbeResult(True, f"GET {objects.readiness_path}: 200 OK")

    def activate(self, objects: ReleaseObjects) -> None:
        if objects.stable_service is None:
            return
        with self._session() as session:
            self._check(session)
            if self._fault(objects) is Blocker.ROUTE_ACTIVATION:
                raise TransientError(
                    f"the API refused to patch Service {objects.unit}: 409 Conflict", status=409
                )
            body = dict(objects.stable_service)
            previous = self._get(session, objects.namespace, "Service", objects.unit)
            before = previous.body if previous is not None else None  # _put replaces row.body
            self._apply_all(session, objects.namespace, (body,))
            if before != body:
                self._record(
                    session, f"activate {objects.namespace}/{objects.unit} {objects.release}"
                )

    def selected_release(self, namespace: str, unit: str) -> str | None:
        with self._session() as session:
            self._check(session)
            row = self._get(session, namespace, "Service", unit)
            if row is None:
                return None
            selector = row.body.get("spec", {}).get("selector", {})
            value = selector.get("nebula.dev/release")
            return str(value) if value is not None else None

    def _delete_where(self, session: Session, namespace: str, labels: dict[str, str]) -> list[str]:
        deleted = []
        rows = session.scalars(
            select(schema.ClusterObject).where(schema.ClusterObject.namespace == namespace)
        ).all()
        for row in rows:
            have = row.body.get("metadata", {}).get("labels", {}) or {}
            if all(have.get(k) == v for k, v in labels.items()):
                deleted.append(f"{row.kind}/{row.name}")
                session.delete(row)
        return deleted

    def drain(self, namespace: str, unit: str, release: str) -> None:
        with self._session() as session:
            self._check(session)
            if self._delete_where(
                session, namespace, {"nebula.dev/service": unit, "nebula.dev/release": release}
            ):
                self._record(session, f"drain {namespace}/{unit} {release}")

    def remove(self, namespace: str, unit: str, release: str) -> None:
        with self._session() as session:
            self._check(session)
            if self._delete_where(
                session, namespace, {"nebula.dev/service": unit, "nebula.dev/release": release}
            ):
                self._record(session, f"remove {namespace}/{unit} {release}")

    def teardown(self, namespace: str, unit: str) -> Teardown:
        with self._session() as session:
            self._check(session)
            deleted = self._delete_where(session, namespace, {"nebula.dev/service": unit})
            if deleted:
                self._record(session, f"teardown {namespace}/{unit}")
            return Teardown(already_clean=not deleted, deleted=tuple(deleted))

    # -- live state ----------------------------------------------------------------------------

    def live(self, objects: ReleaseObjects) -> Live:
        with self._session() as session:
            self._check(session)
            found: Live = {}
            for manifest in checked(objects):
                row = self._get(
                    session, _namespace(manifest, objects.namespace), *_kind_name(manifest)
                )
                found[drifts.reference(manifest)] = (
                    self._unsealed(row.body) if row is not None else None
                )
            return found

    def heal(self, objects: ReleaseObjects, refs: Collection[str]) -> None:
        wanted = set(refs)
        manifests = tuple(m for m in checked(objects) if drifts.reference(m) in wanted)
        if not manifests:
            return
        with self._session() as session:
            self._check(session)
            self._apply_all(session, objects.namespace, manifests)
            self._record(session, f"heal {objects.namespace}/{objects.unit} {objects.release}")


def _kind_name(manifest: Manifest) -> tuple[str, str]:
    return str(manifest.get("kind", "")), _name(manifest)


def _namespace(manifest: Manifest, namespace: str) -> str:
    if manifest.get("kind") == "Namespace":
        return ""
    return str(manifest.get("metadata", {}).get("namespace") or namespace)


def _name(manifest: Manifest) -> str:
    return str(manifest.get("metadata", {}).get("name", ""))
