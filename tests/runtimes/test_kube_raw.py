"""Raw manifests on the real API server (behaviour.md "Raw manifests (1.2)"): applied into the
namespace with server-side apply, a document a later release no longer has pruned when the
older release drains (found among every namespaced kind the server serves), and a document
the server refuses is a ``configuration`` failure carrying the server's own message."""

from __future__ import annotations

import pytest

from reconciler.errors import PermanentError
from reconciler.model import validation
from reconciler.runtimes.cluster import ReleaseObjects
from renderers import naming, raw
from renderers.releases import Scope, environment_from_config
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS
from tests.infra.waiting import wait_for
from tests.runtimes.harness import KubernetesHarness

pytestmark = pytest.mark.kube

TOML = '[kubernetes]\nmanifests = ["k8s/"]\n\n[environments.staging]\n'
POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
spec:
  podSelector: {}
  policyTypes: [Ingress]
"""
ACCOUNT = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n"


def _release(harness: KubernetesHarness, number: int, files: dict[str, str]) -> ReleaseObjects:
    scope = Scope(harness.project, "staging")
    config = validation.load(
        TOML, files=files, namespace=lambda env: naming.namespace(harness.project, env)
    ).environment("staging")
    assert config is not None and config.manifests is not None
    renderer = Renderer(harness.cluster.capabilities())
    shared = renderer.environment(environment_from_config(harness.project, config), PLACEHOLDERS)
    return ReleaseObjects(
        project=harness.project,
        environment="staging",
        namespace=scope.namespace,
        unit="manifests",
        release=f"r-{number}",
        image=f"manifests@{config.manifests.digest}",
        shared=tuple(dict(m.body) for m in shared),
        workload=tuple(dict(m.body) for m in raw.documents(config.manifests, scope, number)),
    )


def _names(harness: KubernetesHarness, path: str) -> set[str]:
    items = harness.rest.get(f"{path.format(ns=harness.namespace)}")["items"]
    return {i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")}


POLICIES = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
ACCOUNTS = "/api/v1/namespaces/{ns}/serviceaccounts"


def test_documents_are_applied_and_a_removed_one_is_pruned_when_its_release_drains(
    kube_harness: KubernetesHarness,
) -> None:
    cluster = kube_harness.cluster
    first = _release(kube_harness, 1, {"k8s/a.yaml": f"{POLICY}---\n{ACCOUNT}"})
    cluster.admit(first)
    cluster.start(first)

    assert _names(kube_harness, POLICIES) == {"deny-all"}
    assert "app" in _names(kube_harness, ACCOUNTS)
    policy = kube_harness.rest.get(f"{POLICIES.format(ns=first.namespace)}/deny-all")
    assert policy["metadata"]["labels"]["nebula.dev/release"] == "r-1"
    assert {f["manager"] for f in policy["metadata"]["managedFields"]} == {"nebula"}

    second = _release(kube_harness, 2, {"k8s/a.yaml": ACCOUNT})
    cluster.admit(second)
    cluster.start(second)
    cluster.drain(first.namespace, "manifests", "r-1")

    wait_for(lambda: _names(kube_harness, POLICIES) == set(), "the NetworkPolicy to be pruned")
    assert "app" in _names(kube_harness, ACCOUNTS)  # relabelled r-2: kept

    done = cluster.teardown(first.namespace, "manifests")
    assert "ServiceAccount/app" in done.deleted


def test_a_document_the_server_refuses_is_a_configuration_failure_with_its_message(
    kube_harness: KubernetesHarness,
) -> None:
    broken = POLICY.replace("policyTypes: [Ingress]", "policyTypes: [Sideways]")
    objects = _release(kube_harness, 1, {"k8s/a.yaml": broken})
    kube_harness.cluster.admit(objects)

    with pytest.raises(PermanentError) as refused:
        kube_harness.cluster.start(objects)

    assert refused.value.code == "configuration"
    assert "NetworkPolicy/deny-all" in str(refused.value)
    assert "Sideways" in str(refused.value)
