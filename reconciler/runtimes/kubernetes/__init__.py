"""The Kubernetes runtime (``NEBULA_CLUSTER=kubernetes``): the ``Cluster`` interface on a real
API server, through the official ``kubernetes`` client.

The modules, from the wire up::

    configs      kubeconfig context or in-cluster service account -> a client with short timeouts
    credentials  a kubeconfig user's exec plugin, run by Nebula; its token kept in memory
    failures     ApiException / urllib3 errors / error statuses -> our errors, secrets removed
    transport    the one place requests are sent; JSON in, JSON out
    discovery    what the server serves: paths of kinds, and the renderer's Capabilities
    applying     server-side apply as field manager ``nebula``
    quotas       does a release fit the namespace's ResourceQuotas at all (pure)
    jobs         the release command Job's outcome (pure)
    rollouts     a workload's progress and definitive obstacles from its status (pure)
    probing      the qualifying check through the release's own Service
    activating   the stable Service's selector
    binding      Nebula's RoleBinding in each namespace it creates (deploy/'s least privilege)
    draining     scale to zero, delete by label, teardown
    kinds        the kinds the watch cache keeps, with their selectors (one line each)
    selectors    label selectors matched in memory (pure)
    stores       one kind in one namespace as the cache holds it; synced, behind a write
    watching     the informer loop: list, watch, relist on 410 Gone, back off, stop
    streams      a kind's paged list and watch on the API server (kubernetes.watch.Watch)
    caching      the cluster's watch cache: informers per (kind, namespace), started on use
    reading      the checks' reads: from the cache when it can answer, else the API server
    cluster      KubernetesCluster, composing the above

Only ``configs``, ``transport``, ``failures`` and ``streams`` talk to the client library;
nothing outside this package imports ``kubernetes``.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.clock import Clock
from reconciler.runtimes.kubernetes import binding, configs
from reconciler.runtimes.kubernetes.cluster import KubernetesCluster
from reconciler.runtimes.kubernetes.configs import Timeouts
from reconciler.runtimes.kubernetes.probing import Prober
from reconciler.settings import Settings

__all__ = ["KubernetesCluster", "Timeouts", "connect"]


def connect(
    context: str | None = None,
    kubeconfig: str | None = None,
    *,
    clock: Clock | None = None,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    timeouts: Timeouts | None = None,
    prober: Prober | None = None,
    watch: bool = True,
) -> KubernetesCluster:
    """The cluster behind a kubeconfig ``context`` (None: the current one), or the cluster
    Nebula runs in when neither a context nor a kubeconfig is given and it runs in a pod.

    Raises ``ConfigurationError`` when no usable configuration is found; nothing is sent to
    the API server until the first call, so connecting to a cluster that is down succeeds and
    the calls then raise ``UnreachableError``. ``settings`` are the server's: their
    ``kubeconfig`` is used when no ``kubeconfig`` is passed; ``environ`` defaults to the process
    environment (``KUBECONFIG``, ``KUBERNETES_SERVICE_HOST``). ``watch=False`` reads the API
    server on every check instead of keeping a watch cache.
    """
    if kubeconfig is None and settings is not None and settings.kubeconfig:
        kubeconfig = settings.kubeconfig
    connection = configs.connect(
        context, kubeconfig, environ=environ, timeouts=timeouts or Timeouts(), clock=clock
    )
    role = (
        binding.parse(settings.kube_namespace_role, settings.kube_service_account)
        if settings is not None
        else None
    )
    return KubernetesCluster(connection, clock, prober=prober, watch=watch, namespace_role=role)
