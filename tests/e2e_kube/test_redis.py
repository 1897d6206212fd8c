"""A Redis database on the real API server (behaviour.md "Data services (1.2)"): its Secret,
Service and StatefulSet, a service reading its URL through a secretKeyRef, healthy and synced
(readiness by TCP, which the test kubelet reports)."""

from __future__ import annotations

import pytest

from tests.e2e_kube import projects
from tests.e2e_kube.conftest import DIRECT, PodServer
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra.kubelet import TestKubelet
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo

pytestmark = pytest.mark.kube

REDIS = '\n[databases.cache]\nengine = "redis"\nversion = "7"\nvolume_size = "1Gi"\n'


def test_a_redis_database_and_a_service_reading_it_go_healthy(
    kube_nebula: KubeNebula,
    git_repo: GitRepo,
    kubelet: TestKubelet,
    pod_server: PodServer,
    staging: Live,
) -> None:
    kubelet.script(projects.WEB, Behaviour.RUNNING, serve_port=pod_server.port)
    text = projects.web_only() + REDIS
    text = text.replace(
        'LOG_LEVEL = "info"\n', 'LOG_LEVEL = "info"\nBROKER = "${{ cache.REDIS_URL }}"\n'
    )
    kube_nebula.register(git_repo, text, {"staging": DIRECT["staging"]})
    kube_nebula.settle()

    units = kube_nebula.units()
    assert (units[("staging", "cache")]["active_release"], units[("staging", "cache")]["sync"]) == (
        "r-1",
        "synced",
    )
    assert units[("staging", "web")]["active_release"] == "r-1"
    statefulset = staging.get("StatefulSet", "cache")
    assert statefulset is not None
    [container] = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "redis:7"
    assert container["command"][-2:] == ["--requirepass", "$(REDIS_PASSWORD)"]
    assert container["readinessProbe"]["tcpSocket"] == {"port": 6379}
    secret = staging.get("Secret", "cache-credentials")
    assert secret is not None
    assert sorted(secret["data"]) == ["REDIS_HOST", "REDIS_PASSWORD", "REDIS_PORT", "REDIS_URL"]
    web = staging.get("Deployment", "web-r1")
    assert web is not None
    [env] = [
        e for e in web["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "BROKER"
    ]
    assert env["valueFrom"]["secretKeyRef"] == {"name": "cache-credentials", "key": "REDIS_URL"}
