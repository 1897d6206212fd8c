"""The qualifying check through the release's own Service, from wherever Nebula runs.

Inside the cluster, Nebula reaches the Service as any client would: by its DNS name
(``<svc>.<ns>.svc.cluster.local:<port>``), with an HTTP GET (status < 500 is healthy) or a TCP
connect. Outside the cluster there is no route to a ClusterIP, so the request goes through the
API server's service proxy (``/api/v1/namespaces/{ns}/services/{name}:{port}/proxy{path}``),
which dials one of the Service's ready endpoints from inside.

The proxy speaks HTTP only. A TCP check from outside therefore passes when the proxy reached a
pod: an HTTP answer of any status below 500, or the API server's report that the pod answered
something that is not HTTP. A refused or unroutable dial, or a Service without a ready
endpoint, fails it.

An answer from the API server itself is not the application's: a ``kind: Status`` failure
with a 4xx code (401: Nebula's credentials, 403: no ``get`` on ``services/proxy``, 404: no
such Service) means the readiness path was never reached. It fails the check (the deployment
keeps qualifying, saying what is missing, and fails with ``readiness`` at the timeout)
instead of passing as "below 500".

``Prober`` is the seam tests (and unusual networks) use to substitute their own check.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Protocol
from urllib.parse import quote

from reconciler.errors import TransientError, UnreachableError
from reconciler.runtimes.cluster import ProbeKind, ProbeResult, ReleaseObjects
from reconciler.runtimes.kubernetes import failures
from reconciler.runtimes.kubernetes.transport import Transport

PROBE_TIMEOUT = 5.0
# What the API server says when its dial succeeded but the answer was not HTTP.
NOT_HTTP = ("malformed HTTP", "EOF", "connection reset by peer")
# What it says when no pod could be dialled at all.
NOT_DIALLED = ("no endpoints available", "connection refused", "dial tcp", "i/o timeout")


class Prober(Protocol):
    def probe(self, objects: ReleaseObjects) -> ProbeResult: ...


def target(objects: ReleaseObjects) -> tuple[str, int]:
    if not objects.own_service or not objects.port:
        raise ValueError("a probe needs the release's own Service and its port")
    return objects.own_service, objects.port


def normal_path(path: str) -> str:
    path = path or "/"
    if not path.startswith("/"):
        path = "/" + path
    return quote(path, safe="/?&=%:@-._~!$'()*+,;")


class ServiceProxyProber:
    """From outside the cluster, through the API server."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        service, port = target(objects)
        path = normal_path(objects.readiness_path if objects.probe is ProbeKind.HTTP else "/")
        where = f"{service}:{port}"
        try:
            answer = self._transport.raw(
                "GET",
                f"/api/v1/namespaces/{quote(objects.namespace, safe='')}/services/"
                f"{quote(service, safe='')}:{port}/proxy{path}",
                what=f"probe Service {service} in {objects.namespace}",
                accept="*/*",
            )
        except UnreachableError:
            raise  # the API itself is down: a `delivery` problem, not the release's
        except TransientError as exc:  # the pod kept the proxy waiting: not ready
            return ProbeResult(False, f"{where}: {exc}")
        refused = _api_server_refusal(answer.status, answer.body, objects.namespace, service)
        if refused is not None:
            return ProbeResult(False, f"{where}: {refused}")
        if answer.status < 500:
            shown = path if objects.probe is ProbeKind.HTTP else "a TCP connect"
            return ProbeResult(True, f"{where}: {shown} answered {answer.status}")
        said = (failures.server_message(answer.body)[1] or answer.text())[:200]
        if (
            objects.probe is ProbeKind.TCP
            and any(m in said for m in NOT_HTTP)
            and not any(m in said for m in NOT_DIALLED)
        ):
            return ProbeResult(True, f"{where}: TCP connection accepted")
        if objects.probe is ProbeKind.TCP:
            return ProbeResult(False, f"{where}: TCP connect failed: {answer.status} {said}")
        return ProbeResult(False, f"GET {where}{path} answered {answer.status}: {said}")


def _api_server_refusal(status: int, body: bytes, namespace: str, service: str) -> str | None:
    """What the API server itself answered instead of proxying (a 4xx ``Status``), in words
    that say what is missing; None for an answer that came from the application."""
    if not 400 <= status < 500:
        return None
    try:
        found = json.loads(body)
    except ValueError:
        return None
    if not (
        isinstance(found, dict)
        and found.get("kind") == "Status"
        and found.get("apiVersion") == "v1"
        and found.get("status") == "Failure"
        and found.get("code") == status
    ):
        return None
    said = f"{status} {found.get('reason') or ''}: {' '.join(str(found.get('message')).split())}"
    said = said[:300]
    if status == 401:
        need = "Nebula's credentials (its kubeconfig or service account token) are not accepted"
    elif status == 403:
        need = (
            f"Nebula needs get on services/proxy in {namespace} "
            "(deploy/kubernetes/rbac.yaml grants it)"
        )
    elif status == 404:
        need = f"the release's Service {service} is missing in {namespace}"
    else:
        need = "the probe did not reach the application"
    return (
        f"the API server answered the probe itself ({said}); {need}; "
        "the readiness path was not reached"
    )


class InClusterProber:
    """From a pod in the cluster, by the Service's DNS name."""

    def __init__(self, timeout: float = PROBE_TIMEOUT, domain: str = "svc.cluster.local") -> None:
        self._timeout = timeout
        self._domain = domain

    def host(self, objects: ReleaseObjects) -> str:
        service, _ = target(objects)
        return f"{service}.{objects.namespace}.{self._domain}"

    def probe(self, objects: ReleaseObjects) -> ProbeResult:
        _, port = target(objects)
        host = self.host(objects)
        if objects.probe is ProbeKind.TCP:
            try:
                with socket.create_connection((host, port), timeout=self._timeout):
                    return ProbeResult(True, f"{host}:{port}: TCP connection accepted")
            except OSError as exc:
                return ProbeResult(False, f"{host}:{port}: TCP connect failed: {exc}")
        path = normal_path(objects.readiness_path)
        connection = http.client.HTTPConnection(host, port, timeout=self._timeout)
        try:
            connection.request("GET", path, headers={"User-Agent": "nebula-probe"})
            status = connection.getresponse().status
        except (OSError, http.client.HTTPException) as exc:
            return ProbeResult(False, f"GET {host}:{port}{path} failed: {exc}")
        finally:
            connection.close()
        if status < 500:
            return ProbeResult(True, f"GET {host}:{port}{path} answered {status}")
        return ProbeResult(False, f"GET {host}:{port}{path} answered {status}")
