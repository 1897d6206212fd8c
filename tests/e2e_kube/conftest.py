"""Fixtures of the end-to-end scenarios: Nebula with ``NEBULA_CLUSTER=kubernetes`` on the
session's control plane, one project (so one set of namespaces) per test.

The kubeconfig Nebula reads has three contexts: ``e2e-staging`` and ``e2e-production`` (two
names for the same API server, so each environment gets a client of its own as it would on
two clusters) and ``e2e-faulty`` (the same server behind the fault proxy).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import bootstrap
from reconciler.cli import local
from reconciler.clock import SystemClock
from reconciler.settings import Settings
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.runtimes.harness import http_server

DIRECT = {"staging": "e2e-staging", "production": "e2e-production"}
FAULTY = "e2e-faulty"
ENVIRONMENTS = ("staging", "production")
READINESS_TIMEOUT = timedelta(seconds=60)
ROUTE_ACTIVATION_TIMEOUT = timedelta(seconds=3)


@pytest.fixture
def kubeconfig(tmp_path: Path, kube_api: KubeAPI, fault_proxy: FaultProxy) -> Path:
    servers = {name: (kube_api.server, kube_api.ca_path) for name in DIRECT.values()}
    servers[FAULTY] = (fault_proxy.server, fault_proxy.ca_path)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}
            for name, (server, ca) in servers.items()
        ],
        "users": [{"name": "e2e-admin", "user": {"token": kube_api.token}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": "e2e-admin"}} for name in servers
        ],
        "current-context": DIRECT["staging"],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


@pytest.fixture
def project() -> str:
    """A slug of this test's own, so its namespaces (`<project>-<env>`) are too."""
    return f"e{secrets.token_hex(4)}"


@dataclass
class PodServer:
    """A real HTTP server the test kubelet routes web's pods' port to (200 for every path):
    the readiness check goes API server -> service proxy -> pod network -> here."""

    port: int
    paths: list[str]


@pytest.fixture
def pod_server(kubelet: TestKubelet) -> Iterator[PodServer]:
    paths: list[str] = []

    def answer(path: str) -> int:
        paths.append(path)
        return 200

    with http_server(answer) as port:
        yield PodServer(port, paths)


@pytest.fixture
def kube_nebula(
    tmp_path: Path, kubeconfig: Path, kube_api: KubeAPI, kubelet: TestKubelet, project: str
) -> Iterator[KubeNebula]:
    yield from kube_nebula_with(tmp_path, kubeconfig, kube_api, project)


def kube_nebula_with(
    tmp_path: Path, kubeconfig: Path, kube_api: KubeAPI, project: str, **overrides: Any
) -> Iterator[KubeNebula]:
    """``kube_nebula`` with other settings: ``yield from kube_nebula_with(..., x=y)``."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'nebula.db'}",
        state_dir=tmp_path / "state",
        cluster="kubernetes",
        kubeconfig=str(kubeconfig),
        **{
            "readiness_timeout": READINESS_TIMEOUT,
            "route_activation_timeout": ROUTE_ACTIVATION_TIMEOUT,
            **overrides,
        },
    )
    ctx = bootstrap.open_context(settings, SystemClock())
    yield KubeNebula(ctx, project)
    local.reset()
    ctx.clusters.close()
    ctx.db.dispose()
    if ctx.git is not None:
        ctx.git.close()
    for env in ENVIRONMENTS:
        kube_api.delete_namespace(f"{project}-{env}")


@pytest.fixture
def staging(kube_api: KubeAPI, project: str) -> Live:
    return Live(kube_api.rest, f"{project}-staging")


@pytest.fixture
def production(kube_api: KubeAPI, project: str) -> Live:
    return Live(kube_api.rest, f"{project}-production")
