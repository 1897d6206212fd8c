"""Fixtures of the runtime tests: a harness per runtime, and ``harness`` giving each in turn."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from reconciler.clock import FakeClock, SystemClock
from reconciler.runtimes import kubernetes
from reconciler.runtimes.kubernetes import KubernetesCluster, Timeouts
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.runtimes.harness import SIMULATED_DELAY, Harness, KubernetesHarness, SimulatedHarness
from tests.runtimes.harness import http_server as serve_http

# Short enough that a hung request fails a test in seconds, long enough for a busy CI box.
TEST_TIMEOUTS = Timeouts(connect=2.0, read=4.0)


@pytest.fixture
def project() -> str:
    """A project slug of this test's own, so its namespace (`<project>-staging`) is too."""
    return f"p{secrets.token_hex(4)}"


@pytest.fixture
def simulated_harness(tmp_path: Path, project: str) -> Iterator[SimulatedHarness]:
    db = Database(f"sqlite:///{tmp_path / 'nebula.db'}")
    clock = FakeClock()
    vault = Vault(Fernet.generate_key())
    cluster = SimulatedCluster(db, clock, SIMULATED_DELAY, {}, vault)
    yield SimulatedHarness(cluster, clock, project)
    db.engine.dispose()


@pytest.fixture
def pod_http_port() -> Iterator[int]:
    """A real HTTP server the test kubelet routes the pods' port to (200 for every path)."""
    with serve_http() as port:
        yield port


@pytest.fixture
def kube_cluster(kube_api: KubeAPI) -> Iterator[KubernetesCluster]:
    """The Kubernetes runtime talking to the API server directly."""
    cluster = kubernetes.connect(
        kube_api.context, str(kube_api.kubeconfig), clock=SystemClock(), timeouts=TEST_TIMEOUTS
    )
    yield cluster
    cluster.close()


@pytest.fixture
def proxied_cluster(fault_proxy: FaultProxy) -> Iterator[KubernetesCluster]:
    """The Kubernetes runtime talking to the API server through the fault proxy."""
    cluster = kubernetes.connect(
        fault_proxy.context,
        str(fault_proxy.kubeconfig),
        clock=SystemClock(),
        timeouts=TEST_TIMEOUTS,
    )
    # The fault proxy fails the second request on a kept-alive connection (it does not finish
    # reading the API server's previous answer: http.client's ResponseNotReady, relayed as a
    # 502), so each request gets a connection of its own.
    cluster.connection.api_client.set_default_header("Connection", "close")  # type: ignore[no-untyped-call]
    yield cluster
    cluster.close()


@pytest.fixture
def kube_harness(
    kube_api: KubeAPI,
    kubelet: TestKubelet,
    fault_proxy: FaultProxy,
    proxied_cluster: KubernetesCluster,
    project: str,
    pod_http_port: int,
) -> Iterator[KubernetesHarness]:
    with kube_api.api_client() as official:
        harness = KubernetesHarness(
            proxied_cluster, kube_api.rest, kubelet, fault_proxy, project, pod_http_port, official
        )
        yield harness
    kube_api.delete_namespace(harness.namespace)


@pytest.fixture(
    params=[
        pytest.param("simulated"),
        pytest.param("kubernetes", marks=pytest.mark.kube),
    ]
)
def harness(request: pytest.FixtureRequest) -> Harness:
    """Each runtime in turn: the contract suite runs once per runtime."""
    found: Harness = request.getfixturevalue(
        f"{'kube' if request.param == 'kubernetes' else 'simulated'}_harness"
    )
    return found
