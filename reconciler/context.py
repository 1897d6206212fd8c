"""What every flow needs from the outside world, passed in rather than reached for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reconciler.clock import Clock
from reconciler.runtimes.cluster import Cluster
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.crypto import Vault
from reconciler.store.database import Database

if TYPE_CHECKING:
    from reconciler.gitsource.cache import GitCache
    from reconciler.sso.providers import Provider


@dataclass
class Context:
    db: Database
    clock: Clock
    settings: Settings
    vault: Vault
    clusters: Clusters
    git: GitCache | None = None  # only commands that poll open the git cache
    signon: Provider | None = None  # single sign-on's provider, built when first needed

    def cluster(self, environment: schema.Environment) -> Cluster:
        """The cluster an environment deploys to (its project may name a context per
        environment: ``nebula project set SLUG cluster.ENV CONTEXT``)."""
        return self.clusters.for_environment(environment.project.clusters, environment.name)
