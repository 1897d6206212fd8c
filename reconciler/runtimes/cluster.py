"""The ``Cluster`` interface: every effect the deployment engine has on a cluster.

Every call is idempotent: names are deterministic and objects are applied server-side, so a
stage replayed after a crash does no harm. Errors are ours (``reconciler.errors``):

- ``UnreachableError`` (a ``TransientError`` with code ``delivery``): the API cannot be
  reached at all. The open deployment gets the ``delivery`` blocker and waits; it is cleared
  when the API answers again. Not counted against the stage's retries.
- ``TransientError``: the API answered with a 5xx, a conflict or timed out. Retried with
  backoff, at most 3 times per stage, then the deployment fails with the stage's blocker.
- ``PermanentError`` with ``code`` a blocker name: the cluster said no for good (e.g. a quota
  refusal -> ``capacity``); the deployment fails with that blocker at once.

Observations (rollout, job, probe) are plain frozen values; deciding what they mean (wait,
move on, fail) is the engine's job. So is drift: ``live`` hands over the objects of a release
as they run (``checked`` says which), and ``reconciler.core.drifts`` compares them with the
release's manifests the same way for every runtime.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from reconciler.core import drifts
from reconciler.core.states import Blocker
from renderers import naming
from renderers.capabilities import Capabilities

Manifest = dict[str, Any]
# "Kind/name" -> the object as the cluster holds it now (None: it does not exist)
Live = dict[str, Manifest | None]


class Credentials(StrEnum):
    """How Nebula signs in to a cluster (``nebula clusters``): a bearer token in the
    kubeconfig (or from its auth provider), one an ``exec`` plugin hands out, a client
    certificate, or the pod's service account."""

    TOKEN = "token"
    EXEC = "exec"
    CLIENT_CERTIFICATE = "client-certificate"
    IN_CLUSTER = "in-cluster"


@dataclass(frozen=True)
class About:
    """A cluster as ``nebula clusters`` shows it, asked just now: ``error`` says why it could
    not be reached (then ``version`` is None)."""

    context: str | None
    server: str | None
    version: str | None
    error: str | None
    credentials: Credentials | None

    @property
    def reachable(self) -> bool:
        return self.error is None


class ProbeKind(StrEnum):
    HTTP = "http"
    TCP = "tcp"
    NONE = "none"  # cron/job-only release, or a worker without a port: qualifies on readiness alone


@dataclass(frozen=True)
class ReleaseObjects:
    """What the engine hands a runtime for one release of one unit in one namespace (the same
    value for each stage of a deployment: a runtime copies a manifest it changes)."""

    project: str
    environment: str
    namespace: str
    unit: str  # the service or database slug
    release: str  # "r-3"
    image: str
    is_database: bool = False
    # Applied when admitted: the namespace, the environment's secrets, volume claims,
    # database credentials. Shared by releases; never deleted by drain or removal.
    shared: tuple[Manifest, ...] = ()
    # The release command Job, if the release has one.
    release_job: Manifest | None = None
    # Applied when starting: Deployments, the release's own Service, ConfigMap, CronJobs,
    # Jobs of job processes; for a database its StatefulSet and Service.
    workload: tuple[Manifest, ...] = ()
    # The stable Service that activation repoints (None for a release with nothing to route).
    stable_service: Manifest | None = None
    # What qualifying watches: the primary process's workload object and its replicas.
    primary: str | None = None  # Deployment (or StatefulSet) name
    primary_kind: str = "Deployment"
    replicas: int = 0
    own_service: str | None = None
    port: int | None = None
    readiness_path: str = "/"
    probe: ProbeKind = ProbeKind.NONE
    release_command_timeout: int = 600


def checked(objects: ReleaseObjects) -> tuple[Manifest, ...]:
    """The manifests a unit's live state is compared with (and self-heal applies again): the
    release's Deployments or StatefulSet, its Services, ConfigMap, CronJobs, the stable Service,
    the unit's volume claims and a database's credentials; every object labelled with the
    unit, as teardown finds them. Not Jobs (they run once and go), nor the namespace and the
    environment's ``nebula-secrets`` (shared by the environment's units, and set by
    ``nebula secret set`` through change sets, not by a release)."""
    candidates = [*objects.shared, *objects.workload]
    if objects.stable_service is not None:
        candidates.append(objects.stable_service)
    return tuple(
        m
        for m in candidates
        if m.get("kind") != "Job"
        and ((m.get("metadata") or {}).get("labels") or {}).get(naming.SERVICE) == objects.unit
    )


# A service's routes: kept across its releases, so a release that no longer has one (its
# domains removed, or a rollback to before them) deletes it when admitted.
ROUTE_KINDS = (("gateway.networking.k8s.io", "HTTPRoute"), ("networking.k8s.io", "Ingress"))


# A CloudNativePG Cluster: served only where the operator is installed (its CRD).
CLUSTER_KIND = "Cluster"
CLOUDNATIVE_API = "postgresql.cnpg.io/v1"
CLOUDNATIVE_GROUP = "postgresql.cnpg.io"


def needs_operator(objects: ReleaseObjects) -> bool:
    return any(m.get("kind") == CLUSTER_KIND for m in objects.workload)


def operator_missing(objects: ReleaseObjects) -> str:
    """The ``configuration`` failure where the cluster does not serve the Cluster kind."""
    return (
        f'postgres = "cloudnative-pg" needs the CloudNativePG operator ({CLOUDNATIVE_API} '
        f"Cluster) on the cluster of {objects.project}/{objects.environment}."
    )


def routes_kept(objects: ReleaseObjects) -> set[str]:
    """``Kind/name`` of the routes release ``objects`` has."""
    kinds = {kind for _, kind in ROUTE_KINDS}
    return {
        f"{m.get('kind')}/{(m.get('metadata') or {}).get('name')}"
        for m in objects.shared
        if m.get("kind") in kinds
    }


def healed(manifest: Manifest) -> Manifest:
    """What self-heal applies again: the manifest, less the replica count of a workload an
    autoscaler owns (putting it back to the minimum would scale a loaded service down)."""
    if not drifts.autoscaled(manifest):
        return manifest
    spec = {k: v for k, v in (manifest.get("spec") or {}).items() if k != "replicas"}
    return {**manifest, "spec": spec}


def inherited(manifest: Manifest, running: Mapping[str, int]) -> Manifest:
    """An autoscaled Deployment of a new release starts at the count its process runs at in
    the active release (``running``: process -> replicas), never below its own minimum, so a
    deploy never scales a loaded service down (behaviour.md "Pods (1.2)")."""
    if not drifts.autoscaled(manifest):
        return manifest
    spec = manifest.get("spec") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    count = running.get(str(labels.get(naming.PROCESS)))
    if count is None or count <= int(spec.get("replicas") or 0):
        return manifest
    return {**manifest, "spec": {**spec, "replicas": count}}


def replicas_by_process(workloads: Iterable[Manifest]) -> dict[str, int]:
    """The replica count of each process's Deployments among ``workloads`` (the most)."""
    out: dict[str, int] = {}
    for workload in workloads:
        if workload.get("kind") != "Deployment":
            continue
        labels = (workload.get("metadata") or {}).get("labels") or {}
        if naming.PROCESS in labels:
            process = str(labels[naming.PROCESS])
            count = int((workload.get("spec") or {}).get("replicas") or 0)
            out[process] = max(count, out.get(process, 0))
    return out


def any_autoscaled(objects: ReleaseObjects) -> bool:
    return any(drifts.autoscaled(m) for m in objects.workload)


class JobPhase(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class JobStatus:
    phase: JobPhase
    message: str = ""
    logs_tail: str = ""


@dataclass(frozen=True)
class Rollout:
    """The primary workload as the cluster reports it now."""

    desired: int
    ready: int  # replicas Ready now
    started: bool  # every pod scheduled with its image pulled (running, or crash-looping)
    ready_since: datetime | None = None  # since when every replica has been Ready
    blocker: Blocker | None = None  # image-pull, capacity (definitive), or readiness signal
    message: str = ""


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str = ""


@dataclass(frozen=True)
class Teardown:
    already_clean: bool
    deleted: tuple[str, ...] = field(default_factory=tuple)


class Cluster(Protocol):
    """One cluster (or one kubeconfig context). Methods raise only our errors."""

    def batch(self) -> AbstractContextManager[None]:
        """The calls of one batch (a tick's stages) are made inside this, on any thread that
        shares its context: a runtime may store what they write together when it ends (the
        simulated API does; a Kubernetes API server gets each request as it is made)."""

    def capabilities(self) -> Capabilities:
        """The API versions the cluster serves (CronJob batch/v1 or batch/v1beta1)."""

    def describe(self) -> About:
        """Where the cluster is and whether it answers now (one request, never raises)."""

    def admit(self, objects: ReleaseObjects) -> None:
        """Check the namespace and quota; apply the shared objects."""

    def start_release_job(self, objects: ReleaseObjects) -> None:
        """Create the release command Job (no-op if it exists)."""

    def release_job(self, objects: ReleaseObjects) -> JobStatus:
        """The Job's state; ``FAILED`` with a message on failure or past its deadline."""

    def start(self, objects: ReleaseObjects) -> None:
        """Apply the release's workload (Deployments, its own Service, CronJobs ...)."""

    def rollout(self, objects: ReleaseObjects) -> Rollout:
        """How far the primary workload got."""

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        """HTTP GET of the readiness path (status < 500) or a TCP connect, through the
        release's own Service. Only called when ``objects.probe`` is not NONE."""

    def activate(self, objects: ReleaseObjects) -> None:
        """Point the stable Service at this release (create it if missing)."""

    def selected_release(self, namespace: str, unit: str) -> str | None:
        """The release the stable Service selects now (None if there is no stable Service)."""

    def drain(self, namespace: str, unit: str, release: str) -> None:
        """Stop an old release: scale it to zero, then delete its release objects."""

    def remove(self, namespace: str, unit: str, release: str) -> None:
        """Delete a release that never took traffic (superseded or failed)."""

    def teardown(self, namespace: str, unit: str) -> Teardown:
        """Delete everything of a unit (by label); ``already_clean`` on a second run."""

    def live(self, objects: ReleaseObjects) -> Live:
        """Each object of ``checked(objects)`` as the cluster holds it now, by ``Kind/name``.
        Reads only: on Kubernetes from the watch cache once it is synced."""

    def heal(self, objects: ReleaseObjects, refs: Collection[str]) -> None:
        """Apply the objects of ``checked(objects)`` named by ``refs`` (``Kind/name``) again,
        forcing Nebula's fields back (server-side apply, field manager ``nebula``)."""
