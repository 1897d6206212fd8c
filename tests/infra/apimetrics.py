"""Requests the API server counted, read from its own ``apiserver_request_total`` metric.

The metric has no user or user-agent label, so Nebula's requests are told apart from the
other clients of the test control plane by what only Nebula asks for:

- the controller manager's typed clients answer in protobuf (``contentType``), its metadata
  clients (garbage collector, namespace controller) list and watch cluster-wide or delete
  pods and ReplicaSets, which Nebula never does;
- the test kubelet lists pods cluster-wide, binds pods, writes pod and node status, posts
  events and deletes pods.

So a Nebula request is a JSON answer to a namespaced (or single-object) request for one of
the resources in ``NEBULA``. A namespace being deleted meanwhile would add the namespace
controller's lists: ``wait_quiet`` waits for none to be terminating. (Discovery requests are
not in the metric at all.)

A watch is counted in ``apiserver_request_total`` only when it ends, and the API server
notices a client gone only when it next writes to it; until then it is in
``apiserver_longrunning_gauge``. A reading therefore keeps both, and the requests between two
readings are the counter's difference plus the difference in namespaced watches open (the
controller manager watches cluster-wide, and its one namespaced watch stays open).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tests.infra.kuberest import KubeRest
from tests.infra.waiting import wait_for

_SAMPLE = re.compile(
    r"^(?P<name>apiserver_request_total|apiserver_longrunning_gauge)"
    r"\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$"
)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

# resource -> the verbs Nebula sends for it
NEBULA: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "deployments",
            "statefulsets",
            "services",
            "configmaps",
            "secrets",
            "cronjobs",
            "jobs",
            "persistentvolumeclaims",
        ),
        frozenset({"GET", "LIST", "WATCH", "PATCH", "APPLY", "DELETE"}),
    ),
    "namespaces": frozenset({"GET", "PATCH", "APPLY"}),
    "resourcequotas": frozenset({"LIST", "WATCH"}),
    "replicasets": frozenset({"LIST", "WATCH"}),
    "pods": frozenset({"LIST", "WATCH", "GET"}),
    "events": frozenset({"LIST", "WATCH"}),
}
NEBULA_SUBRESOURCES = {("services", "proxy"), ("pods", "log")}


@dataclass(frozen=True)
class Series:
    verb: str
    resource: str
    subresource: str
    scope: str
    content_type: str
    code: str

    def is_nebula(self) -> bool:
        if (self.resource, self.subresource) in NEBULA_SUBRESOURCES:
            return self.verb == "GET"  # the service proxy's answers are the pod's, of any type
        if not self.content_type.startswith("application/json") or self.subresource:
            return False
        if self.scope == "cluster":
            return False
        return self.verb in NEBULA.get(self.resource, frozenset())


@dataclass(frozen=True)
class Reading:
    requests: Counter[Series]  # apiserver_request_total
    watching: Counter[str]  # namespaced watches open now, by resource

    def __sub__(self, before: Reading) -> Counter[Series]:
        """Nebula's requests since ``before``, by series (a watch still open as WATCH, 0)."""
        counts = Counter(
            {
                s: n - before.requests.get(s, 0)
                for s, n in self.requests.items()
                if s.is_nebula() and n > before.requests.get(s, 0)
            }
        )
        for resource in set(self.watching) | set(before.watching):
            opened = self.watching[resource] - before.watching[resource]
            if opened and "WATCH" in NEBULA.get(resource, frozenset()):
                counts[Series("WATCH", resource, "", "namespace", "open", "0")] += opened
        return counts


def read(rest: KubeRest) -> Reading:
    """The API server's request counts and open watches, now (one scrape)."""
    text = rest.get("/metrics")
    requests: Counter[Series] = Counter()
    watching: Counter[str] = Counter()
    for line in str(text).splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        value = int(float(match["value"]))
        if match["name"] == "apiserver_longrunning_gauge":
            if labels.get("verb") == "WATCH" and labels.get("scope") == "namespace":
                watching[labels.get("resource", "")] += value
            continue
        series = Series(
            labels.get("verb", ""),
            labels.get("resource", ""),
            labels.get("subresource", ""),
            labels.get("scope", ""),
            labels.get("contentType", ""),
            labels.get("code", ""),
        )
        requests[series] += value
    return Reading(requests, watching)


def total(counts: Counter[Series]) -> int:
    return sum(counts.values())


def wait_quiet(rest: KubeRest, timeout: float = 60.0) -> None:
    """Until no namespace is being deleted (the namespace controller's lists are JSON)."""

    def quiet() -> bool:
        items = rest.get("/api/v1/namespaces")["items"]
        return not any(i.get("status", {}).get("phase") == "Terminating" for i in items)

    wait_for(quiet, "namespaces being deleted to be gone", timeout=timeout, interval=0.5)
