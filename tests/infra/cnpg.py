"""CloudNativePG on the test control plane: the operator's published ``Cluster`` CRD, and a
stand-in for the operator itself (which cannot run there: no container runtime).

The CRD is built from the schema the renderer validates against (``renderers/crds/
cnpg-cluster-v1.json``: the published CRD's openAPIV3Schema, its source named in it), so the
API server checks Nebula's Clusters against the same fields. The stand-in does the two things
of the operator Nebula relies on, as the test kubelet does for pods: it writes the
``<cluster>-app`` Secret with the operator's keys, and reports instances ready in the Cluster's
status, one more each round, up to ``spec.instances`` (or never, when told to stall).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from tests.infra.kuberest import KubeRest, KubeRestError

GROUP = "postgresql.cnpg.io"
CRD_NAME = f"clusters.{GROUP}"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CLUSTERS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/clusters"


def crd() -> dict[str, Any]:
    published = json.loads(
        (resources.files("renderers") / "crds" / "cnpg-cluster-v1.json").read_text("utf-8")
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "Cluster",
                "listKind": "ClusterList",
                "plural": "clusters",
                "singular": "cluster",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _for_1_20(published["openAPIV3Schema"])},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def _for_1_20(node: Any) -> Any:
    """The schema less its ``default: ""`` on object references' names: controller-gen has
    emitted them since 2024, and 1.20's CRD validation refuses them ("must be of type
    string"). Nothing Nebula renders sets or relies on those fields."""
    if isinstance(node, list):
        return [_for_1_20(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: _for_1_20(v) for k, v in node.items() if not (k == "default" and v == "")}


def served(rest: KubeRest) -> bool:
    try:
        listed = rest.get(f"/apis/{GROUP}/v1")
    except KubeRestError:
        return False
    return any(r.get("kind") == "Cluster" for r in listed.get("resources") or [])


def install(rest: KubeRest) -> None:
    """The CRD installed and served (it may be already, by an earlier test on this server)."""
    try:
        rest.post(CRD_PATH, crd())
    except KubeRestError as exc:
        if exc.status != 409:
            raise
    _wait(lambda: served(rest), "the Cluster CRD to be served")


def uninstall(rest: KubeRest) -> None:
    """No CRD: the cluster of an environment without the operator."""
    try:
        rest.delete(f"{CRD_PATH}/{CRD_NAME}")
    except KubeRestError as exc:
        if exc.status != 404:
            raise
    _wait(lambda: not served(rest), "the Cluster CRD to be gone")


def _wait(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class StandInOperator:
    """Ready instances and the app Secret for every Cluster in ``namespace``."""

    def __init__(self, rest: KubeRest, namespace: str, *, stall: bool = False) -> None:
        self.rest = rest
        self.namespace = namespace
        self.stall = stall
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cnpg-stand-in", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.2):
                try:
                    listed = self.rest.get(CLUSTERS.format(ns=self.namespace))
                except KubeRestError:
                    continue
                for cluster in listed.get("items") or []:
                    # The namespace may be terminating under a test's teardown (403) or gone:
                    # the operator keeps going, as the real one does, and never dies of it.
                    with suppress(KubeRestError):
                        self._reconcile(cluster)
        finally:
            self.rest.close()  # this thread's connection

    def _reconcile(self, cluster: dict[str, Any]) -> None:
        name = cluster["metadata"]["name"]
        self._app_secret(name)
        wanted = int(cluster["spec"]["instances"])
        ready = int((cluster.get("status") or {}).get("readyInstances") or 0)
        if self.stall or ready == wanted:
            return
        ready = min(wanted, ready + 1) if ready < wanted else wanted
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        healthy = ready == wanted
        status = {
            "instances": wanted,
            "readyInstances": ready,
            "phase": "Cluster in healthy state" if healthy else "Creating a new replica",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if healthy else "False",
                    "reason": "ClusterIsReady" if healthy else "ClusterIsNotReady",
                    "message": "Cluster is Ready" if healthy else "Cluster Is Not Ready",
                    "lastTransitionTime": now,
                }
            ],
        }
        with suppress(KubeRestError):  # the Cluster deleted meanwhile: the next round sees
            self.rest.patch(
                f"{CLUSTERS.format(ns=self.namespace)}/{name}/status", {"status": status}
            )

    def _app_secret(self, cluster: str) -> None:
        host = f"{cluster}-rw"
        data = {
            "username": cluster,
            "user": cluster,
            "password": "stand-in-password",
            "host": host,
            "port": "5432",
            "dbname": cluster,
            "uri": f"postgresql://{cluster}:stand-in-password@{host}:5432/{cluster}",
        }
        try:
            self.rest.post(
                f"/api/v1/namespaces/{self.namespace}/secrets",
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": f"{cluster}-app", "labels": {"cnpg.io/cluster": cluster}},
                    "stringData": data,
                },
            )
        except KubeRestError as exc:
            if exc.status not in (403, 404, 409):  # namespace not there yet or terminating; done
                raise

    @contextmanager
    def running(self) -> Iterator[StandInOperator]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=5)
