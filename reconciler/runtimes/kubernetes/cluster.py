"""``KubernetesCluster``: the ``Cluster`` interface on a real API server.

Each method is one stage's effect or observation, composed from the modules beside it
(apply, jobs, rollouts, probing, activating, draining); they raise only our errors, and the
stage's blocker is the code of a definitive refusal that names no better one.

The rollout and job checks read through the watch cache (``caching``, ``reading``): once a
namespace's informers are synced a check costs no request at all, so what a deployment costs
the API server is its writes, not how long it takes to become ready. Every object applied is
reported to the cache, so that a check right after the write cannot read an older version.
``close()`` stops the informers; tearing down a namespace's last unit drops its informers.

Drift checks (``live``) read the objects of a release through the same cache: the first check
in a namespace starts the informers of the kinds it reads and waits a moment (``SETTLE``) for
their first lists, and every later check costs no request at all while nothing changes (a
cache that cannot sync in time, or is failing, is read around: the API server answers). Self-
heal (``heal``) is the stages' own server-side apply, forcing Nebula's fields back.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from urllib.parse import quote

from reconciler.clock import Clock, SystemClock
from reconciler.core import drifts
from reconciler.core.states import Blocker
from reconciler.errors import NebulaError, PermanentError, TransientError
from reconciler.runtimes.cluster import (
    CLOUDNATIVE_API,
    CLUSTER_KIND,
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
    replicas_by_process,
    routes_kept,
)
from reconciler.runtimes.kubernetes import (
    activating,
    jobs,
    operands,
    quotas,
    rollouts,
    selectors,
    streams,
)
from reconciler.runtimes.kubernetes.applying import Applier
from reconciler.runtimes.kubernetes.binding import Binder, NamespaceRole
from reconciler.runtimes.kubernetes.caching import Cache
from reconciler.runtimes.kubernetes.configs import Connection
from reconciler.runtimes.kubernetes.discovery import Discovery
from reconciler.runtimes.kubernetes.draining import Remover
from reconciler.runtimes.kubernetes.probing import InClusterProber, Prober, ServiceProxyProber
from reconciler.runtimes.kubernetes.reading import Reader
from reconciler.runtimes.kubernetes.transport import JSON, Transport
from renderers import naming
from renderers.capabilities import Capabilities

LOG_LINES = 20
LOG_BYTES = 4096
# What a unit that is still there has in its namespace, whatever else was torn down.
WORKLOADS = ("Deployment", "StatefulSet", "CronJob")
NOTHING_TO_WAIT_FOR = timedelta(days=1)  # how long a unit without workloads has been "ready"
SETTLE = 2.0  # seconds a drift check waits for informers it started to sync


class KubernetesCluster:
    def __init__(
        self,
        connection: Connection,
        clock: Clock | None = None,
        *,
        prober: Prober | None = None,
        job_grace: timedelta = jobs.DEADLINE_GRACE,
        log_lines: int = LOG_LINES,
        watch: bool = True,
        namespace_role: NamespaceRole | None = None,
    ) -> None:
        self.connection = connection
        self.clock = clock or SystemClock()
        self.transport = Transport(connection)
        self.discovery = Discovery(self.transport)
        self.cache = Cache(streams.sources(self.transport, self.discovery), enabled=watch)
        self.reader = Reader(self.transport, self.cache)
        self.applier = Applier(self.transport, self.discovery)
        self.remover = Remover(self.transport, self.discovery)
        self.prober: Prober = prober or (
            InClusterProber() if connection.in_cluster else ServiceProxyProber(self.transport)
        )
        self.binder = (
            Binder(namespace_role, self.applier, self.transport) if namespace_role else None
        )
        self._job_grace = job_grace
        self._log_lines = log_lines

    def __repr__(self) -> str:
        return f"KubernetesCluster({self.connection.context or 'in-cluster'} at {self.connection.server})"

    def batch(self) -> AbstractContextManager[None]:
        """A batch's calls: each request is sent as it is made, so nothing is left to do."""
        return nullcontext()

    def capabilities(self) -> Capabilities:
        """What the server serves, for rendering (CronJob ``batch/v1`` or ``batch/v1beta1``)."""
        return self.discovery.capabilities()

    def describe(self) -> About:
        """Asks the server its version now (never from a cache: this says whether it answers)."""
        c = self.connection
        try:
            found = self.transport.get("/version", what="read the server version") or {}
        except NebulaError as exc:
            return About(c.name, c.server, None, exc.message, c.credentials)
        version = str(found.get("gitVersion") or f"{found.get('major')}.{found.get('minor')}")
        return About(c.name, c.server, version, None, c.credentials)

    def close(self) -> None:
        """Stops the watch cache's informers, then closes the clients' connections."""
        self.cache.close()
        self.transport.close()

    def _apply(self, manifest: Manifest, namespace: str, blocker: Blocker) -> None:
        applied = self.applier.apply(manifest, namespace=namespace, blocker=blocker)
        self.cache.wrote(applied, namespace)

    # -- admitted ----------------------------------------------------------------------------

    def admit(self, objects: ReleaseObjects) -> None:
        if needs_operator(objects) and not self.discovery.serves(CLOUDNATIVE_API, CLUSTER_KIND):
            raise PermanentError(operator_missing(objects), code=Blocker.CONFIGURATION)
        forbidden: PermanentError | None = None
        for manifest in (m for m in objects.shared if m.get("kind") == "Namespace"):
            try:
                self.applier.apply(manifest, blocker=Blocker.CONFIGURATION)
            except PermanentError as exc:
                # Nebula may be trusted with what is inside a namespace an administrator made,
                # but not with namespaces themselves: then the namespace only has to exist.
                if exc.status != 403:
                    raise
                forbidden = exc
            else:
                if self.binder is not None:
                    self.binder.bind(objects.namespace)
        self._check_namespace(objects.namespace, forbidden)
        for manifest in objects.shared:
            if manifest.get("kind") != "Namespace":
                self._apply(manifest, objects.namespace, Blocker.CONFIGURATION)
        if not objects.is_database:
            self.remover.prune(objects.namespace, objects.unit, ROUTE_KINDS, routes_kept(objects))
        self._check_quota(objects)

    def _check_namespace(self, namespace: str, forbidden: PermanentError | None) -> None:
        found = self.transport.get(
            f"/api/v1/namespaces/{quote(namespace, safe='')}",
            what=f"read Namespace/{namespace}",
            missing_ok=True,
        )
        if found is None:
            raise forbidden or PermanentError(
                f"Namespace {namespace} does not exist and the release does not create it",
                code=Blocker.CONFIGURATION,
            )
        if (found.get("status") or {}).get("phase") == "Terminating":
            raise TransientError(
                f"Namespace {namespace} is being deleted; the deployment can go on once it is gone"
            )

    def _check_quota(self, objects: ReleaseObjects) -> None:
        workloads = [m for m in (*objects.workload, objects.release_job) if m is not None]
        needed = quotas.needs(workloads)
        for quota in self.transport.items(
            f"/api/v1/namespaces/{quote(objects.namespace, safe='')}/resourcequotas",
            what=f"list the ResourceQuotas of {objects.namespace}",
        ):
            refused = quotas.refusal(quota, needed)
            if refused is not None:
                raise PermanentError(refused, code=Blocker.CAPACITY)

    # -- releasing ---------------------------------------------------------------------------

    def start_release_job(self, objects: ReleaseObjects) -> None:
        if objects.release_job is not None:
            self._apply(objects.release_job, objects.namespace, Blocker.RELEASE_COMMAND)

    def release_job(self, objects: ReleaseObjects) -> JobStatus:
        if objects.release_job is None:
            return JobStatus(JobPhase.SUCCEEDED, "No release command")
        resource, name, namespace = self.applier.locate(objects.release_job, objects.namespace)
        job = self.reader.get(
            "Job",
            objects.namespace,
            name,
            path=resource.item(name, namespace),
            what=f"read Job/{name}",
            blocker=Blocker.RELEASE_COMMAND,
        )
        pods: list[JSON] = []
        uid = ((job or {}).get("metadata") or {}).get("uid")
        if uid:
            pods = self.reader.list(
                "Pod",
                objects.namespace,
                path=f"/api/v1/namespaces/{quote(objects.namespace, safe='')}/pods",
                what=f"list the pods of Job/{name}",
                label_selector=f"controller-uid={uid}",
            )
        status = jobs.status(
            job,
            pods,
            self.clock.now(),
            name=name,
            timeout=objects.release_command_timeout,
            grace=self._job_grace,
        )
        if status.phase is JobPhase.RUNNING:
            return status
        return JobStatus(status.phase, status.message, self._logs_tail(objects.namespace, pods))

    def _logs_tail(self, namespace: str, pods: list[JSON]) -> str:
        """The last lines the Job's newest pod wrote; "" when there are none to read."""
        pod = jobs.newest(pods)
        if pod is None:
            return ""
        name = rollouts.name_of(pod)
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
        try:
            answer = self.transport.raw(
                "GET",
                f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/log",
                what=f"read the logs of Pod/{name}",
                query=[
                    ("container", container),
                    ("tailLines", str(self._log_lines)),
                    ("limitBytes", str(LOG_BYTES)),
                ],
                accept="*/*",
            )
        except NebulaError:
            return ""
        if answer.status != 200:
            return ""
        return answer.body.decode(errors="replace")

    # -- starting and qualifying -------------------------------------------------------------

    def start(self, objects: ReleaseObjects) -> None:
        running = self._running(objects) if any_autoscaled(objects) else {}
        for manifest in objects.workload:
            self._apply(inherited(manifest, running), objects.namespace, Blocker.CONFIGURATION)

    def _running(self, objects: ReleaseObjects) -> dict[str, int]:
        """Each process's replicas in the unit's other releases (the one serving, and one
        still draining): the most of them. Found by label, so a worker without a port (no
        stable Service to say which release serves) keeps its count too."""
        resource = self.discovery.preferred("apps", "Deployment")
        if resource is None:
            return {}
        found = self.reader.list(
            "Deployment",
            objects.namespace,
            path=resource.collection(objects.namespace),
            what=f"list the Deployments of {objects.unit}",
            label_selector=f"{naming.SERVICE}={objects.unit},{naming.RELEASE}!={objects.release}",
        )
        return replicas_by_process(found)

    def rollout(self, objects: ReleaseObjects) -> Rollout:
        if objects.primary is None:
            # Nothing runs, so nothing has to stay ready for the stabilization period (as on
            # the simulated cluster): a cron-only service goes on at once.
            ready_since = self.clock.now() - NOTHING_TO_WAIT_FOR
            return Rollout(0, 0, True, ready_since=ready_since, message="Nothing to wait for")
        namespace, kind, name = objects.namespace, objects.primary_kind, objects.primary
        if kind == CLUSTER_KIND:
            return operands.rollout(self.discovery, self.reader, self.transport, objects)
        resource = self.discovery.preferred("apps", kind)
        if resource is None:
            raise PermanentError(
                f"The cluster does not serve apps {kind}", code=Blocker.CONFIGURATION
            )
        workload = self.reader.get(
            kind,
            namespace,
            name,
            path=resource.item(name, namespace),
            what=f"read {kind}/{name} in {namespace}",
        )
        if workload is None:
            return rollouts.observe(
                None, [], [], [], kind=kind, name=name, expected=objects.replicas
            )
        labels = ((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = selectors.of_labels(labels)
        ns = quote(namespace, safe="")
        pods = self.reader.list(
            "Pod",
            namespace,
            path=f"/api/v1/namespaces/{ns}/pods",
            what=f"list the pods of {name}",
            label_selector=selector,
        )
        owners: list[JSON] = []
        if kind == "Deployment":
            uid = (workload.get("metadata") or {}).get("uid")
            owners = [
                rs
                for rs in self.reader.list(
                    "ReplicaSet",
                    namespace,
                    path=f"/apis/apps/v1/namespaces/{ns}/replicasets",
                    what=f"list the ReplicaSets of {name}",
                    label_selector=selector,
                )
                if any(
                    o.get("uid") == uid
                    for o in (rs.get("metadata") or {}).get("ownerReferences") or []
                )
            ]
        observed = rollouts.observe(
            workload, owners, pods, [], kind=kind, name=name, expected=objects.replicas
        )
        if observed.blocker is not None or observed.started:
            return observed
        # Events explain what status may not (yet): a scheduler's or a controller's refusal.
        events = self.reader.list(
            "Event",
            namespace,
            path=f"/api/v1/namespaces/{ns}/events",
            what=f"list the events of {namespace}",
            field_selector="type=Warning",
        )
        return rollouts.observe(
            workload, owners, pods, events, kind=kind, name=name, expected=objects.replicas
        )

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        return self.prober.probe(objects)

    # -- activating and draining -------------------------------------------------------------

    def activate(self, objects: ReleaseObjects) -> None:
        applied = activating.activate(self.applier, objects)
        if applied is not None:
            self.cache.wrote(applied, objects.namespace)

    def selected_release(self, namespace: str, unit: str) -> str | None:
        return activating.selected_release(self.transport, namespace, unit)

    def drain(self, namespace: str, unit: str, release: str) -> None:
        self.remover.drain(namespace, unit, release)

    def remove(self, namespace: str, unit: str, release: str) -> None:
        self.remover.remove(namespace, unit, release)

    def live(self, objects: ReleaseObjects) -> Live:
        manifests = checked(objects)
        self.cache.settle((str(m.get("kind")) for m in manifests), objects.namespace, SETTLE)
        found: Live = {}
        for manifest in manifests:
            resource, name, namespace = self.applier.locate(manifest, objects.namespace)
            kind = str(manifest.get("kind"))
            found[drifts.reference(manifest)] = self.reader.get(
                kind,
                namespace or "",
                name,
                path=resource.item(name, namespace if resource.namespaced else None),
                what=f"read {kind}/{name} in {namespace}",
            )
        return found

    def heal(self, objects: ReleaseObjects, refs: Collection[str]) -> None:
        wanted = set(refs)
        for manifest in checked(objects):
            if drifts.reference(manifest) in wanted:
                self._apply(healed(manifest), objects.namespace, Blocker.CONFIGURATION)

    def teardown(self, namespace: str, unit: str) -> Teardown:
        done = self.remover.teardown(namespace, unit)
        # The namespace's last unit gone (as far as the cache knows: none of another unit's
        # workloads left), its informers go too; a read would start them again.
        others = f"{naming.SERVICE},{naming.SERVICE}!={unit}"
        if not self.cache.holds(namespace, others, WORKLOADS):
            self.cache.forget(namespace)
        return done
