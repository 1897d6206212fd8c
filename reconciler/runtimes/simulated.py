"""The simulated cluster: the embedded default for the demo and the tests.

It makes every stage take ``delay`` (``NEBULA_SIMULATED_DELAY``) before it succeeds, unless
``faults`` names the release's image (``NEBULA_SIMULATED_FAULTS``). It runs the CloudNativePG
operator for every environment but those the faults file says lack it: a Cluster is then
refused with the ``configuration`` failure a real cluster without the operator gets. The stabilization period
is compressed into that one delay: pods report Ready since long enough once qualifying has
lasted ``delay``. Its objects live in the state store, behind the simulated API server
(``simulatedapi``). A documented test and demo aid, not a production path.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta

from reconciler.clock import Clock
from reconciler.core import drifts
from reconciler.core.states import Blocker
from reconciler.errors import PermanentError, TransientError, UnreachableError
from reconciler.runtimes.cluster import (
    ROUTE_KINDS,
    About,
    JobPhase,
    JobStatus,
    Live,
    Manifest,
    ProbeResult,
    ReleaseObjects,
    Rollout,
    Teardown,
    any_autoscaled,
    checked,
    healed,
    inherited,
    needs_operator,
    operator_missing,
    routes_kept,
)
from reconciler.runtimes.simulatedapi import SimulatedApi, address
from reconciler.runtimes.simulatedwrites import Found
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from renderers import naming
from renderers.capabilities import RECENT, Capabilities

SIMULATED = "simulated"  # the context ``nebula clusters`` names it by


class SimulatedCluster(SimulatedApi):
    """The Cluster interface over the simulated API (``simulatedapi``): stages take ``delay``,
    faults by image."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        delay: timedelta,
        faults: Mapping[str, Blocker | str],
        vault: Vault,
        latency: timedelta = timedelta(0),
        *,
        without_cloudnative_pg: Collection[str] = frozenset(),
    ) -> None:
        super().__init__(db, clock, vault, latency)
        self.delay = delay
        self.faults = {image: Blocker(value) for image, value in faults.items()}
        # "project/environment" whose (simulated) cluster has no CloudNativePG operator
        self.without_cloudnative_pg = frozenset(without_cloudnative_pg)

    def _elapsed(self, row: Found) -> timedelta:
        created: datetime = row.created_at
        return self.clock.now() - created

    def _fault(self, objects: ReleaseObjects) -> Blocker | None:
        return self.faults.get(objects.image)

    # -- Cluster ----------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return RECENT

    def describe(self) -> About:
        """Context ``simulated``, no server and no credentials; unreachable when made so."""
        try:
            with self._look() as conn:
                self._reachable(conn)
        except UnreachableError as exc:
            return About(SIMULATED, None, None, exc.message, None)
        return About(SIMULATED, None, RECENT.kube_version, None, None)

    def admit(self, objects: ReleaseObjects) -> None:
        where = f"{objects.project}/{objects.environment}"
        if needs_operator(objects) and where in self.without_cloudnative_pg:
            raise PermanentError(operator_missing(objects), code=Blocker.CONFIGURATION)
        with self._call() as call:
            self._reachable(call.conn)
            self._apply_all(call, objects.namespace, objects.shared)
            if not objects.is_database:
                self._delete_where(
                    call,
                    objects.namespace,
                    {naming.SERVICE: objects.unit},
                    kinds={kind for _, kind in ROUTE_KINDS},
                    keep=routes_kept(objects),
                )

    def start_release_job(self, objects: ReleaseObjects) -> None:
        if objects.release_job is None:
            return
        with self._call() as call:
            if self._get(call.conn, objects.namespace, "Job", _name(objects.release_job)) is None:
                call.writes.entry(
                    f"release-job {objects.namespace}/{objects.unit} {objects.release}"
                )
            self._apply_all(call, objects.namespace, (objects.release_job,))

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
        with self._call() as call:
            if objects.primary is None:
                self._reachable(call.conn)
                first = True
            else:
                first = (
                    self._get(call.conn, objects.namespace, objects.primary_kind, objects.primary)
                    is None
                )
            running = self._running(call, objects) if any_autoscaled(objects) else {}
            workload = tuple(inherited(m, running) for m in objects.workload)
            self._apply_all(call, objects.namespace, workload)
            if first:
                call.writes.entry(f"start {objects.namespace}/{objects.unit} {objects.release}")

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
        with self._call() as call:
            previous = self._get(call.conn, objects.namespace, "Service", objects.unit)
            if self._fault(objects) is Blocker.ROUTE_ACTIVATION:
                raise TransientError(
                    f"the API refused to patch Service {objects.unit}: 409 Conflict", status=409
                )
            body = dict(objects.stable_service)
            self._apply_all(call, objects.namespace, (body,))
            if previous is None or previous.body != body:
                call.writes.entry(f"activate {objects.namespace}/{objects.unit} {objects.release}")

    def selected_release(self, namespace: str, unit: str) -> str | None:
        with self._look() as conn:
            row = self._get(conn, namespace, "Service", unit)
        if row is None:
            return None
        selector = row.body.get("spec", {}).get("selector", {})
        value = selector.get("nebula.dev/release")
        return str(value) if value is not None else None

    def drain(self, namespace: str, unit: str, release: str) -> None:
        self._delete_release("drain", namespace, unit, release)

    def remove(self, namespace: str, unit: str, release: str) -> None:
        self._delete_release("remove", namespace, unit, release)

    def _delete_release(self, verb: str, namespace: str, unit: str, release: str) -> None:
        labels = {"nebula.dev/service": unit, "nebula.dev/release": release}
        with self._call() as call:
            if self._delete_where(call, namespace, labels):
                call.writes.entry(f"{verb} {namespace}/{unit} {release}")

    def teardown(self, namespace: str, unit: str) -> Teardown:
        with self._call() as call:
            deleted = self._delete_where(call, namespace, {"nebula.dev/service": unit})
            if deleted:
                call.writes.entry(f"teardown {namespace}/{unit}")
            return Teardown(already_clean=not deleted, deleted=tuple(deleted))

    # -- live state ----------------------------------------------------------------------------

    def live(self, objects: ReleaseObjects) -> Live:
        where = {drifts.reference(m): address(m, objects.namespace) for m in checked(objects)}
        with self._look() as conn:
            found = self._get_all(conn, where.values())
        return {ref: found.get(stored) for ref, stored in where.items()}

    def heal(self, objects: ReleaseObjects, refs: Collection[str]) -> None:
        wanted = set(refs)
        manifests = tuple(healed(m) for m in checked(objects) if drifts.reference(m) in wanted)
        if not manifests:
            return
        with self._call() as call:
            self._reachable(call.conn)
            self._apply_all(call, objects.namespace, manifests)
            call.writes.entry(f"heal {objects.namespace}/{objects.unit} {objects.release}")


def _name(manifest: Manifest) -> str:
    return str(manifest.get("metadata", {}).get("name", ""))
