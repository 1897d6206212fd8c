"""Pods a production cluster accepts (behaviour.md "Pods (1.2)") and public routes ("Public
traffic (1.2)"): every pod of every sample project, its security defaults, the restricted
profile checked rule by rule, resources, probes, budgets, autoscalers, routes, and every
object against the Kubernetes (and Gateway API) schemas."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import tomlkit

from fixtures import loading
from reconciler.core import drifts
from reconciler.errors import ManifestError
from reconciler.model import codec, validation
from renderers import capabilities, schemas
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest, Manifests
from renderers.rendering import Renderer
from tests.renderers import podsecurity, samples
from tests.renderers.samples import container, find

WORKLOADS = ("Deployment", "StatefulSet", "Job", "CronJob")


def _restricted(text: str) -> str:
    """The file with ``pod_security = "restricted"`` in every environment."""
    document = tomlkit.parse(text)
    for table in document["environments"].values():  # type: ignore[union-attr]
        table["pod_security"] = "restricted"
    return tomlkit.dumps(document)


def _render_all(text: str, caps: Capabilities = capabilities.RECENT) -> Manifests:
    project = validation.load(text)
    out: list[Manifest] = []
    for env in project.environment_names:
        out += samples.render_project(text, env, caps)
    return tuple(out)


def _samples() -> list[tuple[str, str]]:
    found = []
    for path in sorted(loading.PROJECTS.glob("*/nebula.toml")):
        text = path.read_text(encoding="utf-8")
        project, _ = validation.check(text)
        if project is not None and project.environment_names:
            found.append((path.parent.name, text))
    return found


SAMPLES = _samples()


def _pods(manifests: Manifests) -> list[tuple[str, dict[str, Any]]]:
    return [
        (m.ref, pod)
        for m in manifests
        if m.kind in WORKLOADS and (pod := podsecurity.pod_spec(m.body)) is not None
    ]


@pytest.mark.parametrize(("name", "text"), SAMPLES, ids=[n for n, _ in SAMPLES])
def test_every_pod_of_every_sample_passes_the_restricted_profile(name: str, text: str) -> None:
    rendered = _render_all(_restricted(text))
    pods = _pods(rendered)

    assert pods, f"{name} renders no pod"
    assert {ref: podsecurity.violations(pod) for ref, pod in pods} == {ref: [] for ref, _ in pods}
    namespaces = [m for m in rendered if m.kind == "Namespace"]
    assert all(
        {k: v for k, v in m.body["metadata"]["labels"].items() if k.startswith("pod-security")}
        == {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
        }
        for m in namespaces
    )
    schemas.validate(rendered, capabilities.RECENT)


def test_the_checker_is_not_satisfied_by_1_1_pods() -> None:
    """What 1.1 rendered (no security context) fails the profile on each rule it names."""
    pod = {"containers": [{"name": "web", "image": "x"}]}
    assert podsecurity.violations(pod) == [
        "privilege escalation: web does not set it false",
        "running as non-root: web",
        "seccomp: web has None",
        "capabilities: web does not drop ALL",
    ]


def test_baseline_pods_are_hardened_but_may_run_as_root() -> None:
    rendered = samples.render_project()
    for ref, pod in _pods(rendered):
        assert pod["automountServiceAccountToken"] is False, ref
        assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}, ref
        for c in pod["containers"]:
            assert c["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "seccompProfile": {"type": "RuntimeDefault"},
            }, ref
        names = [c["name"] for c in pod["containers"]]
        # Baseline admits root and default capabilities; nothing else of restricted fails.
        assert sorted(podsecurity.violations(pod)) == sorted(
            [f"running as non-root: {n}" for n in names]
            + [f"capabilities: {n} does not drop ALL" for n in names]
        ), ref
    namespace = find(rendered, "Namespace", "shop-staging")
    assert namespace.body["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_a_restricted_database_runs_as_the_postgres_user_with_its_group() -> None:
    rendered = samples.render_project(_restricted(samples.SHOP))
    pod = podsecurity.pod_spec(find(rendered, "StatefulSet", "db").body)
    assert pod is not None
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 999,
        "runAsGroup": 999,
        "fsGroup": 999,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


PLATFORM = """
[environments.production]
ingress_class = "nginx"
tls_issuer = "letsencrypt"
image_pull_secrets = ["regcred"]

[services.api]
image = "registry.example.com/shop/api@sha256:{digest}"
release_command = ["bin/migrate"]

[services.api.processes.web]
type = "http"
port = 8000
readiness_path = "/ready"
liveness_path = "/livez"
cpu = "750m"
memory = "1536Mi"
shutdown_grace = "45s"
domains = ["shop.example.com", "*.shop.example.com"]
autoscale = {{ min = 2, max = 10, cpu_percent = 70 }}

[services.api.processes.worker]
type = "worker"
replicas = 3

[services.api.processes.beat]
type = "worker"

[services.api.kubernetes]
service_account = "api"
node_selector = {{ "kubernetes.io/arch" = "amd64" }}
tolerations = [{{ key = "dedicated", operator = "Equal", value = "web", effect = "NoSchedule" }}]
annotations = {{ "example.com/team" = "payments" }}
labels = {{ "team" = "payments" }}
""".format(digest="c" * 64)


def _platform(caps: Capabilities = capabilities.RECENT) -> Manifests:
    return samples.render_project(PLATFORM, "production", caps)


def test_resources_probes_grace_and_placement() -> None:
    rendered = _platform()
    web = find(rendered, "Deployment", "api-r1")
    pod = web.body["spec"]["template"]
    c = container(web)
    assert c["resources"] == {
        "requests": {"cpu": "750m", "memory": "1536Mi"},
        "limits": {"memory": "1536Mi"},
    }
    assert c["startupProbe"] == {
        "httpGet": {"path": "/ready", "port": 8000},
        "periodSeconds": 5,
        "failureThreshold": 60,
    }
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/livez", "port": 8000},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    assert "livenessProbe" not in container(find(rendered, "Deployment", "api-r1-worker"))
    assert pod["metadata"]["labels"]["team"] == "payments"
    assert pod["metadata"]["annotations"] == {"example.com/team": "payments"}
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "api"
    assert "automountServiceAccountToken" not in spec  # the named account's token is wanted
    assert spec["terminationGracePeriodSeconds"] == 45
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert spec["tolerations"] == [
        {"operator": "Equal", "key": "dedicated", "value": "web", "effect": "NoSchedule"}
    ]
    # The selector stays Nebula's: a team label never changes which pods a release owns.
    assert "team" not in web.body["spec"]["selector"]["matchLabels"]
    job = container(find(rendered, "Job", "api-r1-release"))
    assert job["resources"]["requests"] == {"cpu": "750m", "memory": "1536Mi"}


def test_budgets_for_two_or_more_replicas_and_an_autoscaler_per_release() -> None:
    rendered = _platform()
    budgets = {m.name: m.body for m in rendered if m.kind == "PodDisruptionBudget"}
    assert sorted(budgets) == ["api-r1", "api-r1-worker"]  # beat runs one replica: none
    assert budgets["api-r1-worker"]["apiVersion"] == "policy/v1"
    assert budgets["api-r1-worker"]["spec"] == {
        "maxUnavailable": 1,
        "selector": {
            "matchLabels": {
                "nebula.dev/service": "api",
                "nebula.dev/release": "r-1",
                "nebula.dev/process": "worker",
            }
        },
    }
    hpa = find(rendered, "HorizontalPodAutoscaler", "api-r1").body
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-r1"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70},
                },
            }
        ],
    }
    web = find(rendered, "Deployment", "api-r1").body
    assert web["spec"]["replicas"] == 2  # never below min
    assert web["metadata"]["annotations"] == {"nebula.dev/autoscaled": "true"}


def test_older_clusters_get_the_versions_they_serve() -> None:
    rendered = _platform(capabilities.KUBERNETES_1_20)
    versions = {m.kind: m.api_version for m in rendered}
    assert versions["PodDisruptionBudget"] == "policy/v1beta1"
    assert versions["HorizontalPodAutoscaler"] == "autoscaling/v2beta2"


def test_an_ingress_per_process_with_domains_to_the_stable_service() -> None:
    ingress = find(_platform(), "Ingress", "api-web").body
    assert ingress["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "letsencrypt"}
    backend = {"service": {"name": "api", "port": {"number": 8000}}}
    assert ingress["spec"] == {
        "ingressClassName": "nginx",
        "tls": [{"secretName": "api-web-tls", "hosts": ["shop.example.com", "*.shop.example.com"]}],
        "rules": [
            {
                "host": host,
                "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
            }
            for host in ("shop.example.com", "*.shop.example.com")
        ],
    }


def test_an_httproute_through_the_gateway() -> None:
    text = PLATFORM.replace('ingress_class = "nginx"\ntls_issuer = "letsencrypt"\n', "").replace(
        "[environments.production]\n", '[environments.production]\ngateway = "infra/public"\n'
    )
    rendered = samples.render_project(text, "production")
    route = find(rendered, "HTTPRoute", "api-web")
    assert route.api_version == "gateway.networking.k8s.io/v1"
    assert route.body["spec"] == {
        "parentRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "namespace": "infra",
                "name": "public",
            }
        ],
        "hostnames": ["shop.example.com", "*.shop.example.com"],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"group": "", "kind": "Service", "name": "api", "port": 8000}],
            }
        ],
    }
    assert not [m for m in rendered if m.kind == "Ingress"]
    schemas.validate(rendered, capabilities.RECENT)


KUBERNETES_1_35 = Capabilities("1.35", capabilities.RECENT.api_versions)


@pytest.mark.parametrize(
    "caps",
    [capabilities.RECENT, KUBERNETES_1_35, capabilities.KUBERNETES_1_20],
    ids=["latest", "1.35", "1.20"],
)
def test_every_new_object_matches_its_schema(caps: Capabilities) -> None:
    result = schemas.validate(_platform(caps), caps)
    if caps is KUBERNETES_1_35:
        assert result.schema_version == "1.35"


def test_an_httproute_the_gateway_api_would_refuse_is_caught() -> None:
    text = PLATFORM.replace('ingress_class = "nginx"\ntls_issuer = "letsencrypt"\n', "").replace(
        "[environments.production]\n", '[environments.production]\ngateway = "infra/public"\n'
    )
    route = find(samples.render_project(text, "production"), "HTTPRoute", "api-web")
    body = {**route.body, "spec": {**route.body["spec"], "hostname": ["typo.example.com"]}}
    broken = Manifest(route.api_version, route.kind, route.name, route.namespace, "", body)
    with pytest.raises(ManifestError) as raised:
        schemas.validate([broken], capabilities.RECENT)
    assert "HTTPRoute/api-web does not match the httproute-v1 CRD schema at spec" in str(
        raised.value
    )


def test_an_autoscaled_replica_count_is_not_drift() -> None:
    web = find(_platform(), "Deployment", "api-r1").body
    live = {**web, "spec": {**web["spec"], "replicas": 7}}
    assert drifts.compare(web, live) == ()
    plain = find(_platform(), "Deployment", "api-r1-worker").body
    scaled = {**plain, "spec": {**plain["spec"], "replicas": 7}}
    assert [d.path for d in drifts.compare(plain, scaled)] == ["spec.replicas"]


def test_a_release_frozen_before_1_2_renders_as_it_did_so_an_upgrade_is_no_drift() -> None:
    """Its stored spec has no platform: no security context, no token setting, no budget,
    so the objects 1.1 applied compare equal and self-heal restarts nothing."""
    spec = samples.release()
    stored = codec.unit_to_dict(spec.service)
    del stored["platform"]
    legacy = replace(spec, service=codec.unit_from_dict(stored))  # type: ignore[arg-type]
    rendered = Renderer(capabilities.RECENT).release(legacy)

    assert not [m for m in rendered if m.kind == "PodDisruptionBudget"]
    web = find(rendered, "Deployment", "api-r1").body
    pod = web["spec"]["template"]["spec"]
    assert not {"securityContext", "automountServiceAccountToken"} & set(pod)
    assert "securityContext" not in pod["containers"][0]
    current = find(Renderer(capabilities.RECENT).release(spec), "Deployment", "api-r1").body
    assert drifts.compare(web, web) == ()
    # (What the same release renders to now would be drift against what 1.1 applied.)
    assert "spec.template.spec.securityContext" in {d.path for d in drifts.compare(current, web)}
