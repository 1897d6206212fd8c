"""Public traffic (behaviour.md "Public traffic (1.2)"): an HTTPRoute or an Ingress per process
with ``domains``, to the stable Service.

Routes belong to the service, not to a release: they name the stable Service, whose selector
activation moves, so a deploy or a rollback moves public traffic without touching a route.
"""

from __future__ import annotations

from typing import Any

from reconciler.model.specs import Platform, ProcessSpec, ServiceSpec
from renderers import naming
from renderers.manifests import Draft
from renderers.naming import Labels


def routes(service: ServiceSpec, namespace: str, labels: Labels) -> list[Draft]:
    platform = service.platform
    port = service.stable_port
    if port is None:
        return []
    return [
        _route(service.name, process, platform, namespace, labels, port)
        for process in service.processes
        if process.domains and platform.routed
    ]


def _route(
    service: str,
    process: ProcessSpec,
    platform: Platform,
    namespace: str,
    labels: Labels,
    port: int,
) -> Draft:
    name = naming.route(service, process.name)
    values: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": naming.with_process(labels, process.name),
        "domains": process.domains,
        "backend": service,
        "port": port,
    }
    if platform.gateway is not None:
        gateway_namespace, _, gateway_name = platform.gateway.partition("/")
        values.update(gateway_namespace=gateway_namespace, gateway_name=gateway_name)
        return Draft("HTTPRoute", name, "httproute.j2", values)
    values.update(
        ingress_class=platform.ingress_class,
        tls_issuer=platform.tls_issuer,
        tls_secret=naming.fit(f"{name}-tls", naming.MAX_SECRET_NAME),
    )
    return Draft("Ingress", name, "ingress.j2", values)
