"""A cluster whose API answers 503 a set number of times: the simulated cluster behind a thin
wrapper, put where the engine looks for clusters (``ctx.clusters``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from reconciler.errors import TransientError
from reconciler.runtimes.simulated import SimulatedCluster
from tests.plugins.nebula import Nebula


class FlakyCluster:
    """Raises ``TransientError`` on the first ``failures[method]`` calls of each method."""

    def __init__(self, inner: SimulatedCluster, failures: dict[str, int]) -> None:
        self.inner = inner
        self.failures = dict(failures)
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if self.failures.get(name, 0) > 0:
                self.failures[name] -= 1
                raise TransientError("the API answered 503 Service Unavailable", status=503)
            return method(*args, **kwargs)

        return call


class FlakyClusters:
    """Stands in for ``reconciler.runtimes.registry.Clusters``."""

    def __init__(self, cluster: FlakyCluster) -> None:
        self.cluster = cluster

    def for_environment(self, contexts: dict[str, str] | None, environment: str) -> FlakyCluster:
        return self.cluster

    def simulated(self) -> SimulatedCluster:
        return self.cluster.inner


def make_flaky(nebula: Nebula, **failures: int) -> FlakyCluster:
    flaky = FlakyCluster(nebula.ctx.clusters.simulated(), failures)
    nebula.ctx.clusters = FlakyClusters(flaky)
    return flaky
