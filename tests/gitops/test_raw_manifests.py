"""Raw manifests end to end on the simulated cluster (behaviour.md "Raw manifests (1.2)"): the
``manifests`` unit with its releases, one change-set line per document, applied before the
services, pruned, drift-checked, rolled back, torn down; refusals at validation."""

from __future__ import annotations

from typing import Any

from fixtures import loading
from tests.engine.livestate import later, live_object
from tests.plugins.git import GitRepo, GitRepoFactory
from tests.plugins.nebula import Nebula

HELLO = loading.project("hello")
WITH_MANIFESTS = HELLO.replace(
    "[environments.staging]\n", '[kubernetes]\nmanifests = ["k8s/"]\n\n[environments.staging]\n'
)
NAMESPACE = "shop-staging"
POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
spec:
  podSelector: {}
  policyTypes: [Ingress]
"""
MONITOR = """\
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: hello
  labels:
    team: payments
spec:
  endpoints: [{port: http}]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: hello
"""


def _deployed(nebula: Nebula, repo: GitRepo) -> None:
    repo.commit(
        {"nebula.toml": WITH_MANIFESTS, "k8s/policy.yaml": POLICY, "k8s/monitor.yml": MONITOR}
    )
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")


def _lines(changeset: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return [
        (line["service"], line["field"], line["before"], line["after"])
        for line in changeset["lines"]
    ]


def test_manifests_are_a_unit_applied_before_the_services(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _deployed(nebula, git_repos.local("shop"))

    [changeset] = nebula.changesets("shop")
    assert [(s, f) for s, f, _, _ in _lines(changeset)] == [
        ("manifests", "first_deploy"),
        ("hello", "first_deploy"),
    ]
    unit = nebula.unit("staging", "manifests")
    assert (unit["kind"], unit["active_release"], unit["sync"]) == ("manifests", "r-1", "synced")
    policy = live_object(nebula, NAMESPACE, "NetworkPolicy", "deny-all")
    assert policy is not None
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert policy["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "nebula",
        "nebula.dev/project": "shop",
        "nebula.dev/environment": "staging",
        "nebula.dev/service": "manifests",
        "nebula.dev/release": "r-1",
    }
    monitor = live_object(nebula, NAMESPACE, "ServiceMonitor", "hello")
    assert monitor is not None and monitor["metadata"]["labels"]["team"] == "payments"
    deployments = {d["service"]: d for d in nebula.deployments("shop")}
    assert deployments["manifests"]["id"] < deployments["hello"]["id"]
    assert nebula.unit("staging", "hello")["active_release"] == "r-1"


def test_a_changed_and_a_removed_document_are_lines_and_the_removed_one_is_pruned(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    _deployed(nebula, repo)

    repo.commit(
        {
            "k8s/policy.yaml": POLICY.replace("[Ingress]", "[Ingress, Egress]"),
            "k8s/monitor.yml": MONITOR.split("---\n")[1],
        },
        "Egress too; no ServiceMonitor",
    )
    nebula.ok("reconcile --until-idle --timeout 1m")

    changeset = nebula.changesets("shop")[-1]
    lines = _lines(changeset)
    assert [(s, f) for s, f, _, _ in lines] == [
        ("manifests", "NetworkPolicy/deny-all"),
        ("manifests", "ServiceMonitor/hello"),
    ]
    changed, deleted = lines
    assert changed[2].startswith("sha256:") and changed[3].startswith("sha256:")
    assert changed[2] != changed[3]
    assert deleted[2].startswith("sha256:") and deleted[3] is None
    assert nebula.unit("staging", "manifests")["active_release"] == "r-2"
    assert nebula.unit("staging", "hello")["active_release"] == "r-1"  # untouched
    policy = live_object(nebula, NAMESPACE, "NetworkPolicy", "deny-all")
    assert policy is not None and policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert live_object(nebula, NAMESPACE, "ServiceMonitor", "hello") is None  # pruned
    assert live_object(nebula, NAMESPACE, "ServiceAccount", "hello") is not None

    # Rolled back: r-1's documents again, the ServiceMonitor back.
    nebula.ok("rollback shop manifests --env staging")
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.unit("staging", "manifests")["active_release"] == "r-1"
    assert live_object(nebula, NAMESPACE, "ServiceMonitor", "hello") is not None
    restored = live_object(nebula, NAMESPACE, "NetworkPolicy", "deny-all")
    assert restored is not None and restored["spec"]["policyTypes"] == ["Ingress"]


def test_a_raw_document_changed_behind_nebula_s_back_is_drift(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _deployed(nebula, git_repos.local("shop"))

    nebula.ok(f"simulated edit {NAMESPACE} NetworkPolicy/deny-all spec.policyTypes[0] Egress")
    later(nebula)

    unit = nebula.unit("staging", "manifests")
    assert unit["sync"] == "drifted"
    assert unit["drift"] == [
        {
            "object": "NetworkPolicy/deny-all",
            "path": "spec.policyTypes",  # a list of scalars differs whole
            "live": '["Egress"]',
            "desired": '["Ingress"]',
        }
    ]


def test_manifests_taken_out_of_the_file_are_torn_down(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    _deployed(nebula, repo)

    repo.commit({"nebula.toml": HELLO, "k8s/policy.yaml": None, "k8s/monitor.yml": None})
    nebula.ok("reconcile --until-idle --timeout 1m")

    assert _lines(nebula.changesets("shop")[-1])[0][:2] == ("manifests", "removal")
    for _ in range(3):
        nebula.ok("reconcile --until-idle --timeout 1m")
    assert live_object(nebula, NAMESPACE, "NetworkPolicy", "deny-all") is None
    assert live_object(nebula, NAMESPACE, "ServiceAccount", "hello") is None


def test_documents_nebula_cannot_apply_are_refused_at_validation(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x\n"
    foreign = POLICY.replace("  name: deny-all\n", "  name: deny-all\n  namespace: kube-system\n")
    repo.commit(
        {
            "nebula.toml": WITH_MANIFESTS,
            "k8s/a.yaml": f"{POLICY}---\n{role}",
            "k8s/b.yaml": foreign.replace("deny-all", "other"),
            "k8s/c.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
        }
    )
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

    status = nebula.status("shop")
    assert status["blocker"] == "configuration"
    message = status["message"]
    assert "k8s/a.yaml document 1: ClusterRole/x: ClusterRole is cluster-scoped" in message
    assert (
        "k8s/b.yaml document 0: NetworkPolicy/other names namespace 'kube-system', not the "
        "environment's 'shop-staging'" in message
    )
    assert "k8s/c.yaml document 0: Deployment/d: Deployment is a kind Nebula renders" in message
    assert nebula.changesets("shop") == []


def test_a_manifests_path_missing_at_the_commit_is_refused(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": WITH_MANIFESTS})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

    message = nebula.status("shop")["message"]
    assert (
        "kubernetes.manifests[0] 'k8s/' is missing at the commit (no file, or no *.yaml or *.yml file "
        "under that folder)" in message
    )


def test_self_heal_puts_a_raw_document_back(nebula: Nebula, git_repos: GitRepoFactory) -> None:
    repo = git_repos.local("shop")
    healing = WITH_MANIFESTS.replace(
        "[environments.staging]\n", "[environments.staging]\nself_heal = true\n"
    )
    repo.commit({"nebula.toml": healing, "k8s/policy.yaml": POLICY})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

    nebula.ok(f"simulated delete {NAMESPACE} NetworkPolicy/deny-all")
    later(nebula)

    assert live_object(nebula, NAMESPACE, "NetworkPolicy", "deny-all") is not None
    assert nebula.unit("staging", "manifests")["sync"] == "synced"
