"""Which cluster an environment deploys to: the simulated one, or a kubeconfig context.

The Kubernetes runtime (and the official client under it, a third of a second to import) is
loaded by name (``KUBERNETES``) the first time an environment needs it, and so is the simulated
one (``SIMULATED``): a command on the
simulated cluster, or one that never reaches a cluster, does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from reconciler.clock import Clock
from reconciler.lazy import Part
from reconciler.runtimes import faults
from reconciler.runtimes.cluster import Cluster
from reconciler.settings import Settings
from reconciler.store.crypto import Vault
from reconciler.store.database import Database

if TYPE_CHECKING:
    from reconciler.runtimes.simulated import SimulatedCluster

KUBERNETES = Part("reconciler.runtimes.kubernetes", "connect")
# The simulated cluster renders and keeps objects (the renderers, Jinja2): a read such as
# ``nebula status`` never reaches a cluster and does not load it either.
SIMULATED = Part("reconciler.runtimes.simulated", "SimulatedCluster")


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
            cluster = SIMULATED.get()(
                self.db,
                self.clock,
                self.settings.simulated_delay,
                injected.images,
                self.vault,
                self.settings.simulated_latency,
                without_cloudnative_pg=injected.without_cloudnative_pg,
            )
            self._by_context["<simulated>"] = cluster
        return cast("SimulatedCluster", cluster)

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
