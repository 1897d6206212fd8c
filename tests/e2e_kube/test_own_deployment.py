"""Nebula's own deploy/kubernetes, proven on the real API server (RBAC on): applied as `kubectl
apply -k` would, then Nebula runs with nothing but its ServiceAccount's token (a TokenRequest).

One run (the module's fixture) takes a project through what Nebula does to a cluster: the
first push deployed to healthy (a web service behind an Ingress with an autoscaler and a
disruption budget, a database, a cron job with a release command whose Job's logs are read),
a change behind Nebula's back found as drift, the project removed and torn down. The first
test checks what a user sees of that run; the second reads the API server's audit log of it:
every verb the RBAC grants is used, every request was allowed, and nothing namespaced is
granted outside Nebula's namespaces.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reconciler import bootstrap
from reconciler.cli import local
from reconciler.clock import SystemClock
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from tests.e2e_kube import deployed, projects
from tests.e2e_kube.conftest import READINESS_TIMEOUT, ROUTE_ACTIVATION_TIMEOUT
from tests.e2e_kube.installation import KubeNebula
from tests.e2e_kube.live import Live
from tests.infra import cnpg, gatewayapi
from tests.infra.kubelet import TestKubelet
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo
from tests.runtimes.harness import http_server

pytestmark = pytest.mark.kube

CONTEXT = "nebula-sa"
REPORTS = projects.image("reports", "1")
DRIFT_INTERVAL = timedelta(seconds=2)
MANAGED = "app.kubernetes.io/managed-by=nebula"


INGRESS = 'ingress_class = "nginx"'
GATEWAY = 'gateway = "infra/public"'


# A redis database (Nebula's StatefulSet) and a cron-only service with a release command (its
# Job's logs are read) and a volume (a claim Nebula applies).
MORE = f'''
[databases.cache]
engine = "redis"

[services.reports]
image = "{REPORTS}"
release_command = ["bin/migrate"]
[services.reports.processes.nightly]
type = "cron"
schedule = "0 3 * * *"
instance_size = "nano"
[services.reports.volumes.data]
mount = "/data"
size = "1Gi"
accept_downtime = true
'''


def toml(routing: str = INGRESS, web: str = projects.WEB) -> str:
    """web (public through ``routing``, autoscaled: a budget too) and postgres on
    CloudNativePG (projects.project's), and MORE."""
    text = projects.project(web=web, worker=None, environments=("staging",), protected=())
    text = text.replace(
        "[environments.staging]\n",
        f'[environments.staging]\n{routing}\npostgres = "cloudnative-pg"\n',
    )
    text = text.replace(
        "replicas = 1\n", 'autoscale = { min = 2, max = 3 }\ndomains = ["web.example.com"]\n'
    )
    return text + MORE


@dataclass
class Run:
    """What the run saw, for the tests to check."""

    project: str
    deployments: list[dict[str, Any]] = field(default_factory=list)
    applied: dict[str, set[str]] = field(default_factory=dict)  # kind -> names, once healthy
    rerouted: dict[str, set[str]] = field(default_factory=dict)  # after the second push
    drift: list[dict[str, Any]] = field(default_factory=list)
    left: dict[str, set[str]] = field(default_factory=dict)  # kind -> names, after removal
    diff: int = 0  # nebula diff's exit code, without the watch cache
    requests: list[deployed.Request] = field(default_factory=list)
    rbac: list[dict[str, Any]] = field(default_factory=list)  # the rules of both ClusterRoles
    can: dict[tuple[str, str, str], bool] = field(default_factory=dict)


def _settings(tmp: Path, kubeconfig: Path, objects: list[dict[str, Any]]) -> Settings:
    """Nebula's settings as deployment.yaml gives them, on the test's store and kubeconfig."""
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    return Settings(
        database_url=f"sqlite:///{tmp / 'nebula.db'}",
        state_dir=tmp / "state",
        cluster=env["NEBULA_CLUSTER"],
        kubeconfig=str(kubeconfig),
        kube_namespace_role=env["NEBULA_KUBE_NAMESPACE_ROLE"],
        kube_service_account=env["NEBULA_KUBE_SERVICE_ACCOUNT"],
        readiness_timeout=READINESS_TIMEOUT,
        route_activation_timeout=ROUTE_ACTIVATION_TIMEOUT,
        drift_interval=DRIFT_INTERVAL,
    )


def _scenario(nebula: KubeNebula, repo: GitRepo, live: Live, run: Run) -> None:
    nebula.register(repo, toml(), {"staging": CONTEXT})
    nebula.ok("reconcile --until-idle --timeout 90s")
    run.deployments = nebula.deployments()
    run.applied = _live(live)

    nebula.push(repo, toml(GATEWAY, projects.WEB_2), "Through the Gateway")
    nebula.ok("reconcile --until-idle --timeout 90s")
    run.deployments += [d for d in nebula.deployments() if d["release"] == "r-2"]
    run.rerouted = _live(live)

    live.rest.patch(
        f"/api/v1/namespaces/{live.namespace}/configmaps/web-r2-vars",
        {"data": {"LOG_LEVEL": "debug"}},
    )
    before = nebula.units()[("staging", "web")]["drift_checked_at"]

    def checked() -> bool:
        return bool(nebula.units()[("staging", "web")]["drift_checked_at"] != before)

    nebula.settle(checked, timeout=30)
    run.drift = nebula.units()[("staging", "web")]["drift"]
    run.diff = _uncached_diff(nebula)

    nebula.ok(f"project remove {nebula.project} --yes")
    nebula.settle()
    run.left = _live(live)


def _uncached_diff(nebula: KubeNebula) -> int:
    """`nebula diff` with the watch cache off: the reads Nebula makes of the API server itself
    whenever its cache cannot answer (not synced yet, or failing)."""
    ctx = nebula.ctx
    cached = ctx.clusters
    ctx.clusters = Clusters(ctx.settings, ctx.db, ctx.clock, ctx.vault, watch=False)
    try:
        return nebula.cli(f"diff {nebula.project} --env staging").code
    finally:
        ctx.clusters.close()
        ctx.clusters = cached


def _live(live: Live) -> dict[str, set[str]]:
    return {kind: deployed.names(live.rest, live.namespace, kind) for kind in deployed.LIVE_KINDS}


@pytest.fixture(scope="module")
def run(
    kube_api: KubeAPI, _session_kubelet: TestKubelet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    assert kube_api.audit_log is not None
    rest = kube_api.rest
    cnpg.install(rest)
    gatewayapi.install(rest)
    objects = deployed.render()
    deployed.apply(rest, objects)
    tmp = tmp_path_factory.mktemp("own-deployment")
    kubeconfig = tmp / "kubeconfig"
    deployed.write_kubeconfig(kubeconfig, kube_api, deployed.mint_token(rest), CONTEXT)
    found = Run(project=f"o{secrets.token_hex(4)}")
    namespace = f"{found.project}-staging"
    found.rbac = [o for o in objects if o["kind"] == "ClusterRole"]
    offset = kube_api.audit_log.stat().st_size if kube_api.audit_log.exists() else 0
    _session_kubelet.reset()
    _session_kubelet.resume()
    ctx = bootstrap.open_context(_settings(tmp, kubeconfig, objects), SystemClock())
    try:
        with http_server() as port:
            for web in (projects.WEB, projects.WEB_2):
                _session_kubelet.script(web, Behaviour.RUNNING, serve_port=port)
            _session_kubelet.script(REPORTS, Behaviour.SUCCEED, logs="migrated 3 tables\n")
            repo = GitRepo(tmp / "repo", bare=False)
            with cnpg.StandInOperator(rest, namespace).running():
                _scenario(KubeNebula(ctx, found.project), repo, Live(rest, namespace), found)
    finally:
        local.reset()
        ctx.clusters.close()
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()
        _session_kubelet.pause()
        _session_kubelet.reset()
    found.requests = deployed.audited(kube_api.audit_log, offset)
    for verb, resource, where in deployed.CAN_I:
        ns = namespace if where == "managed" else where
        found.can[(verb, resource, where)] = deployed.can_i(rest, verb, resource, ns)
    yield found
    kube_api.delete_namespace(namespace)
    deployed.remove(rest, objects)


def test_nebula_deploys_detects_drift_and_tears_down_with_only_its_service_account(
    run: Run,
) -> None:
    assert sorted(
        (d["service"], d["release"], d["state"], d["blocker"]) for d in run.deployments
    ) == [
        ("cache", "r-1", "healthy", None),
        ("db", "r-1", "healthy", None),
        ("reports", "r-1", "healthy", None),
        ("web", "r-1", "healthy", None),
        ("web", "r-2", "healthy", None),
    ], [(d["service"], d["message"]) for d in run.deployments]
    assert run.applied["Ingress"] == {"web-web"}
    assert (
        run.applied["HorizontalPodAutoscaler"] == run.applied["PodDisruptionBudget"] == {"web-r1"}
    )
    assert run.applied["Cluster"] == {"db"}
    assert run.applied["StatefulSet"] == {"cache"}
    assert run.applied["CronJob"] and run.applied["PersistentVolumeClaim"]
    assert (run.rerouted["HTTPRoute"], run.rerouted["Ingress"]) == ({"web-web"}, set())
    assert run.drift == [
        {"object": "ConfigMap/web-r2-vars", "path": "data.LOG_LEVEL", "live": "debug",
         "desired": "info"},
    ]  # fmt: skip
    assert run.diff == 1  # the same drift, read without the watch cache
    assert {kind: names for kind, names in run.left.items() if names} == {}


def test_the_rbac_grants_exactly_what_nebula_used_and_nothing_outside_its_namespaces(
    run: Run,
) -> None:
    assert [r for r in run.requests if r.code in (401, 403)] == []
    used = deployed.used_verbs(run.requests)
    granted = deployed.granted_verbs(run.rbac)
    assert sorted(granted - used) == []  # every right granted was needed
    # What Nebula used beyond its roles is what every authenticated client may do.
    assert used - granted == {("authorization.k8s.io", "selfsubjectaccessreviews", "create")}
    assert run.can == {
        ("get", "secrets", "kube-system"): False,
        ("get", "secrets", "nebula"): False,
        ("get", "secrets", "managed"): True,
        ("list", "namespaces", ""): False,
        ("delete", "namespaces", "managed"): False,
        ("create", "rolebindings", "kube-system"): False,
        ("get", "configmaps", "default"): False,
    }
