"""deploy/kubernetes on the test API server, as `kubectl apply -k` would put it there, and a
kubeconfig holding nothing but a token of Nebula's own ServiceAccount.

No kustomize binary is needed: the kustomization is small (a `namespace` and a list of
`resources`), and ``render`` does what kustomize does with it: every document of every file
listed, the namespace set on the namespaced ones. What the 1.20 API server does not serve is
adapted by discovery, as an administrator on an old cluster would: the PodDisruptionBudget is
``policy/v1`` (Kubernetes 1.21+, what deploy/ targets), the same fields as ``policy/v1beta1``
here. Everything is applied with server-side apply.

The token is a TokenRequest's (bound to no pod, ten minutes): what the kubelet mounts into
Nebula's pod, minted for a process outside the cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.kubeserver import AUDITED_USER, KubeAPI

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
APPLY = "application/apply-patch+yaml"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
# (apiVersion, kind) -> where its collection is, "{ns}" for namespaced kinds
PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "PodDisruptionBudget": "/apis/{version}/namespaces/{ns}/poddisruptionbudgets",
}
TOKEN_SECONDS = 600
NAMESPACE, ACCOUNT = AUDITED_USER.rsplit(":", 2)[-2:]


def render() -> list[dict[str, Any]]:
    """The kustomization's objects, in its order, with its namespace."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    namespace = kustomization.get("namespace")
    objects = []
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / name).read_text(encoding="utf-8")):
            if not doc:
                continue
            if namespace and doc["kind"] not in CLUSTER_SCOPED:
                doc["metadata"]["namespace"] = namespace
            objects.append(doc)
    return objects


def served_version(rest: KubeRest, group: str, versions: tuple[str, ...]) -> str:
    """The first of ``versions`` (newest first) the server serves in ``group``."""
    served = {v["version"] for v in rest.get(f"/apis/{group}")["versions"]}
    return next(v for v in versions if v in served)


def apply(rest: KubeRest, objects: list[dict[str, Any]]) -> None:
    pdb_version = f"policy/{served_version(rest, 'policy', ('v1', 'v1beta1'))}"
    for obj in objects:
        if obj["kind"] == "PodDisruptionBudget":
            obj = {**obj, "apiVersion": pdb_version}
        collection = PATHS[obj["kind"]].format(
            ns=obj["metadata"].get("namespace", ""), version=obj["apiVersion"]
        )
        rest.patch(
            f"{collection}/{obj['metadata']['name']}",
            json.dumps(obj).encode(),
            content_type=APPLY,
            query={"fieldManager": "kubectl", "force": "true"},
        )


def mint_token(rest: KubeRest) -> str:
    """A TokenRequest for Nebula's ServiceAccount."""
    answer = rest.post(
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
    )
    token: str = answer["status"]["token"]
    return token


def write_kubeconfig(path: Path, kube_api: KubeAPI, token: str, context: str) -> None:
    """A kubeconfig with one context and the ServiceAccount's token as its only credential."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": kube_api.server,
                    "certificate-authority": str(kube_api.ca_path),
                },
            }
        ],
        "users": [{"name": ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": ACCOUNT}}],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def can_i(rest: KubeRest, verb: str, resource: str, namespace: str) -> bool:
    """`kubectl auth can-i VERB RESOURCE -n NAMESPACE --as` Nebula's ServiceAccount."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": AUDITED_USER,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
            "resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource},
        },
    }
    answer = rest.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


@dataclass(frozen=True)
class Request:
    """One request of Nebula's, as the API server's audit log records it."""

    verb: str
    group: str
    resource: str  # with its subresource: "pods/log"
    namespace: str
    name: str
    code: int
    uri: str


def audited(log: Path, offset: int) -> list[Request]:
    """The requests of the audited user written to ``log`` after ``offset`` bytes."""
    with log.open("rb") as f:
        f.seek(offset)
        lines = f.read().splitlines()
    found = []
    for line in lines:
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "")
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        found.append(
            Request(
                verb=event["verb"],
                group=ref.get("apiGroup", ""),
                resource=resource,
                namespace=ref.get("namespace", ""),
                name=ref.get("name", ""),
                code=int((event.get("responseStatus") or {}).get("code", 0)),
                uri=event["requestURI"],
            )
        )
    return found


Verb = tuple[str, str, str]  # (API group, resource, verb)
# (verb, resource, namespace): "managed" is the project's namespace, "" cluster-wide
CAN_I = (
    ("get", "secrets", "kube-system"),
    ("get", "secrets", "nebula"),
    ("get", "secrets", "managed"),
    ("list", "namespaces", ""),
    ("delete", "namespaces", "managed"),
    ("create", "rolebindings", "kube-system"),
    ("get", "configmaps", "default"),
)
# What the run leaves in the project's namespace, by kind: where to list it.
LIVE_KINDS = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "CronJob": "/apis/batch/v1beta1/namespaces/{ns}/cronjobs",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
    "HorizontalPodAutoscaler": "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers",
    "PodDisruptionBudget": "/apis/policy/v1beta1/namespaces/{ns}/poddisruptionbudgets",
    "HTTPRoute": "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/httproutes",
    "Cluster": "/apis/postgresql.cnpg.io/v1/namespaces/{ns}/clusters",
}


def names(rest: KubeRest, namespace: str, kind: str) -> set[str]:
    """Names of the kind's objects Nebula manages there (not being deleted)."""
    listed = rest.get(
        LIVE_KINDS[kind].format(ns=namespace),
        query={"labelSelector": "app.kubernetes.io/managed-by=nebula"},
    )
    return {
        i["metadata"]["name"] for i in listed["items"] if not i["metadata"].get("deletionTimestamp")
    }


def used_verbs(requests: list[Request]) -> set[Verb]:
    """What the requests needed of RBAC. A server-side apply is a PATCH; the one that made the
    object (201) needed `create` too. Writing a RoleBinding needs `bind` on its role."""
    used: set[Verb] = set()
    for r in requests:
        if not r.resource:
            continue  # discovery: allowed to everyone
        used.add((r.group, r.resource, r.verb))
        if r.verb == "patch" and r.code == 201:
            used.add((r.group, r.resource, "create"))
        if r.resource == "rolebindings" and r.verb == "patch":
            used.add((r.group, "clusterroles", "bind"))
    return used


def granted_verbs(roles: list[dict[str, Any]]) -> set[Verb]:
    return {
        (group, resource, verb)
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def remove(rest: KubeRest, objects: list[dict[str, Any]]) -> None:
    """deploy/'s cluster-wide objects and namespace (the rest goes with the namespace)."""
    for obj in objects:
        if obj["kind"] in CLUSTER_SCOPED:
            path = f"{PATHS[obj['kind']]}/{obj['metadata']['name']}"
            try:
                rest.delete(path)
            except KubeRestError as exc:
                if exc.status != 404:
                    raise
