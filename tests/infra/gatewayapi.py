"""A Gateway API HTTPRoute CRD on the test API server: what routing through a `gateway` needs
of a cluster (no Gateway controller runs: Nebula only applies routes)."""

from __future__ import annotations

from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.waiting import wait_for

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GATEWAY = "/apis/gateway.networking.k8s.io/v1"
# A minimal HTTPRoute CRD (the issue allows one the tests write): the group, version and
# kind of Gateway API v1, its fields left to the renderer's own check against the published
# schema (tests/renderers/test_hardened_pods.py).
HTTPROUTE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "httproutes.gateway.networking.k8s.io",
        # *.k8s.io groups need it; the published CRD carries the same annotation.
        "annotations": {
            "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/4530"
        },
    },
    "spec": {
        "group": "gateway.networking.k8s.io",
        "names": {
            "kind": "HTTPRoute",
            "listKind": "HTTPRouteList",
            "plural": "httproutes",
            "singular": "httproute",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def install(rest: KubeRest) -> None:
    """Installs the CRD (kept for the session: deleting a CRD makes the API server reset
    connections for a while) and waits until it is served."""
    try:
        rest.post(CRD_PATH, HTTPROUTE_CRD)
    except KubeRestError as exc:
        if exc.status != 409:  # installed by an earlier test or run on this server
            raise

    def served() -> bool:
        try:
            rest.get(GATEWAY)
        except KubeRestError:
            return False
        return True

    wait_for(served, "the HTTPRoute CRD to be served")
