"""deploy/kubernetes: valid against the Kubernetes schemas, and wired as Nebula needs it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from reconciler.cli import serving

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


def test_rbac_grants_the_kinds_nebula_applies_and_nothing_wider() -> None:
    role = _one("ClusterRole")
    binding = _one("ClusterRoleBinding")
    granted = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    applied = {
        ("", "namespaces"), ("", "services"), ("", "configmaps"), ("", "secrets"),
        ("", "persistentvolumeclaims"), ("apps", "deployments"), ("apps", "statefulsets"),
        ("batch", "jobs"), ("batch", "cronjobs"), ("policy", "poddisruptionbudgets"),
        ("autoscaling", "horizontalpodautoscalers"), ("networking.k8s.io", "ingresses"),
        ("gateway.networking.k8s.io", "httproutes"), ("postgresql.cnpg.io", "clusters"),
    }  # fmt: skip

    for kind in applied:
        assert {"get", "list", "patch"} <= granted[kind], kind
        # What drain and teardown delete (namespaces never are).
        assert ("delete" in granted[kind]) is (kind != ("", "namespaces")), kind
    assert {"get", "list"} <= granted[("", "pods")]
    assert granted[("", "pods/log")] == {"get"}
    # The readiness check from outside the cluster goes through the API server's service
    # proxy: without this the API server answers every probe 403 (runtimes/test_probing.py).
    assert granted[("", "services/proxy")] == {"get"}
    assert not any("*" in verbs or "*" in key[1] or "*" in key[0] for key, verbs in granted.items())
    assert "delete" not in granted[("", "namespaces")]
    assert {g for g, _ in granted} == {g for g, _ in applied}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nebula", "namespace": "nebula"}
    ]
