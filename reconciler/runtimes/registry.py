"""Which cluster an environment deploys to: the simulated one, or a kubeconfig context.

The Kubernetes runtime (and the official client under it, a third of a second to import) is
loaded by name (``KUBERNETES``) the first time an environment needs it: a command on the
simulated cluster, or one that never reaches a cluster, does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.clock import Clock
from reconciler.lazy import Part
from reconciler.runtimes import faults
from reconciler.runtimes.cluster import Cluster
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.settings import Settings
from reconciler.store.crypto import Vault
from reconciler.store.database import Database

KUBERNETES = Part("reconciler.runtimes.kubernetes", "connect")


class Clusters:
    """One runtime object per target, created on first use and kept.

    ``watch``: whether Kubernetes clusters keep a watch cache for their checks (benchmarks
    turn it off for a baseline of direct reads). ``vault``: the simulated cluster keeps its
    Secrets' values encrypted with it."""

    def __init__(
        self, settings: Settings, db: Database, clock: Clock, vault: Vault, *, watch: bool = True
    ) -> None:
        self.settings = settings
        self.db = db
        self.clock = clock
        self.vault = vault
        self.watch = watch
        self._by_context: dict[str | None, Cluster] = {}

    def simulated(self) -> SimulatedCluster:
        cluster = self._by_context.get("<simulated>")
        if cluster is None:
            injected = faults.load(self.settings.simulated_faults)
            cluster = SimulatedCluster(
                self.db,
                self.clock,
                self.settings.simulated_delay,
                injected.images,
                self.vault,
                self.settings.simulated_latency,
                without_cloudnative_pg=injected.without_cloudnative_pg,
            )
            self._by_context["<simulated>"] = cluster
        assert isinstance(cluster, SimulatedCluster)
        return cluster

    def for_environment(self, contexts: dict[str, str] | None, environment: str) -> Cluster:
        return self.for_context((contexts or {}).get(environment))

    def for_context(self, context: str | None) -> Cluster:
        """The cluster of a kubeconfig context (None: the current one, or in-cluster).
        Raises ``ConfigurationError`` when the kubeconfig has no such context."""
        if self.settings.cluster == "simulated":
            return self.simulated()
        cluster = self._by_context.get(context)
        if cluster is None:
            connect: Callable[..., Cluster] = KUBERNETES.get()
            cluster = connect(
                context=context, clock=self.clock, settings=self.settings, watch=self.watch
            )
            self._by_context[context] = cluster
        return cluster

    def close(self) -> None:
        """Closes the clusters connected so far: their watch caches' informers (threads and
        watches) and their clients' pooled connections."""
        clusters, self._by_context = list(self._by_context.values()), {}
        for cluster in clusters:
            close = getattr(cluster, "close", None)
            if close is not None:
                close()
