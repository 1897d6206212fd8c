"""Moving traffic: the stable Service's selector names the release that serves.

Activation is one server-side apply of the stable Service with ``nebula.dev/release`` set to
the new release, so it creates the Service when it is missing and otherwise changes one label
of its selector; the API server swaps the endpoints atomically. A refusal is a
``route-activation`` problem, and until it succeeds the previous release keeps serving.
"""

from __future__ import annotations

import copy
from urllib.parse import quote

from reconciler.core.states import Blocker
from reconciler.runtimes.cluster import ReleaseObjects
from reconciler.runtimes.kubernetes.applying import Applier
from reconciler.runtimes.kubernetes.transport import JSON, Transport
from renderers import naming


def activate(applier: Applier, objects: ReleaseObjects) -> JSON | None:
    """The stable Service as applied (None when the release has nothing to route)."""
    if objects.stable_service is None:
        return None  # nothing routes to this unit (a worker without a port, crons only)
    manifest = copy.deepcopy(objects.stable_service)
    selector = manifest.setdefault("spec", {}).setdefault("selector", {})
    selector[naming.RELEASE] = objects.release
    return applier.apply(manifest, namespace=objects.namespace, blocker=Blocker.ROUTE_ACTIVATION)


def selected_release(transport: Transport, namespace: str, unit: str) -> str | None:
    service = transport.get(
        f"/api/v1/namespaces/{quote(namespace, safe='')}/services/{quote(unit, safe='')}",
        what=f"read Service/{unit} in {namespace}",
        missing_ok=True,
    )
    if service is None:
        return None
    selector = (service.get("spec") or {}).get("selector") or {}
    release = selector.get(naming.RELEASE)
    return str(release) if release else None
