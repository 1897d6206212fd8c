"""deploy/kubernetes: valid against the Kubernetes schemas, and wired as Nebula needs it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from reconciler.cli import serving
from reconciler.runtimes.kubernetes import binding as binding_module

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
VERSIONS = ["1.29.0", kubernetes_validate.utils.latest_version()]


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text(encoding="utf-8")) if d]


def _manifests() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, doc)
        for path in sorted(DEPLOY.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in _documents(path.name)
    ]


def _one(kind: str) -> dict[str, Any]:
    [found] = [doc for _, doc in _manifests() if doc["kind"] == kind]
    return found


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("name", "manifest"), _manifests(), ids=[f"{n}:{d['kind']}" for n, d in _manifests()]
)
def test_every_manifest_validates_strictly(
    name: str, manifest: dict[str, Any], version: str
) -> None:
    kubernetes_validate.validate(manifest, version, strict=True)


def test_the_kustomization_applies_every_manifest_but_the_secret_example() -> None:
    [kustomization] = _documents("kustomization.yaml")

    listed = set(kustomization["resources"])

    assert listed == {p.name for p in DEPLOY.glob("*.yaml")} - {
        "kustomization.yaml",
        "secret.example.yaml",
    }


def test_the_container_runs_nebula_serve_with_probes_on_healthz() -> None:
    [container] = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    serving.register(parser.add_subparsers())

    args = parser.parse_args(container["args"])

    assert (args.host, args.port) == ("0.0.0.0", 8080)
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_secrets_come_from_the_secret_and_are_never_inline() -> None:
    [container] = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}

    for name, key in (
        ("NEBULA_DATABASE_URL", "database-url"),
        ("NEBULA_SECRET_KEY", "secret-key"),
        ("NEBULA_SLACK_BOT_TOKEN", "slack-bot-token"),
        ("NEBULA_SLACK_SIGNING_SECRET", "slack-signing-secret"),
        ("NEBULA_GIT_CREDENTIALS", "git-credentials"),
    ):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "nebula"
        assert env[name]["valueFrom"]["secretKeyRef"]["key"] == key
        assert "value" not in env[name]
    example = _one("Secret")
    assert set(example["stringData"]) >= {"database-url", "secret-key", "slack-bot-token"}
    assert example["stringData"]["database-url"].startswith("postgresql+psycopg://")
    assert env["NEBULA_CLUSTER"]["value"] == "kubernetes"


def test_several_replicas_and_a_grace_period_longer_than_the_shutdown() -> None:
    deployment = _one("Deployment")
    pod = deployment["spec"]["template"]["spec"]

    assert deployment["spec"]["replicas"] >= 2
    assert pod["terminationGracePeriodSeconds"] > 10  # serve exits within 10 s of SIGTERM
    assert pod["serviceAccountName"] == _one("ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_service_reaches_the_pods() -> None:
    service = _one("Service")
    labels = _one("Deployment")["spec"]["template"]["metadata"]["labels"]

    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def _role(name: str) -> dict[str, Any]:
    [found] = [
        doc
        for _, doc in _manifests()
        if doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == name
    ]
    return found


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    return {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_cluster_wide_nebula_only_makes_namespaces_and_binds_its_namespace_role_in_them() -> None:
    """What each verb is for is proven on the API server (e2e_kube/test_own_deployment.py);
    here, what the files must keep: nothing namespaced bound cluster-wide."""
    [container] = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    namespace_role = env["NEBULA_KUBE_NAMESPACE_ROLE"]
    account = _one("ServiceAccount")["metadata"]
    binding = _one("ClusterRoleBinding")
    cluster_wide = _role(binding["roleRef"]["name"])

    assert (
        env["NEBULA_KUBE_SERVICE_ACCOUNT"]
        == "nebula/nebula"
        == f"{account['namespace']}/{account['name']}"
    )
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert _grants(cluster_wide) == {
        ("", "namespaces"): {"get", "create", "patch"},  # never list, never delete
        ("rbac.authorization.k8s.io", "rolebindings"): {"create", "patch"},
        ("rbac.authorization.k8s.io", "clusterroles"): {"bind"},
    }
    names = {rule["resources"][0]: rule.get("resourceNames") for rule in cluster_wide["rules"]}
    assert names == {
        "namespaces": None,
        "rolebindings": [binding_module.NAME],
        "clusterroles": [namespace_role],
    }
    granted = _grants(_role(namespace_role))
    assert ("", "namespaces") not in granted and ("", "secrets") in granted
    assert not any("*" in verbs or "*" in key[1] or "*" in key[0] for key, verbs in granted.items())
    # The readiness check from outside the cluster goes through the API server's service
    # proxy: without this the API server answers every probe 403 (runtimes/test_probing.py).
    assert granted[("", "services/proxy")] == {"get"}


def test_the_image_runs_as_a_numeric_non_root_user() -> None:
    lines = (DEPLOY.parent / "Dockerfile").read_text(encoding="utf-8").splitlines()
    [user] = [line.split()[1] for line in lines if line.startswith("USER ")]
    pod = _one("Deployment")["spec"]["template"]["spec"]

    assert user.isdigit() and int(user) != 0
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == int(user)
    [container] = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
