"""Server-side apply of rendered manifests, as field manager ``nebula``.

Server-side apply makes every stage safe to replay: applying the same object again changes
nothing (not even its resourceVersion), and the server merges our fields with fields other
managers own instead of overwriting them. Conflicts are forced only for objects Nebula
renders in full (``force=True``, the default here): those fields are Nebula's by definition,
and a person who edited one with kubectl is overruled on the next deploy, as with
``kubectl apply --server-side --force-conflicts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.core.states import Blocker
from reconciler.errors import PermanentError
from reconciler.model.specs import MANIFESTS
from reconciler.runtimes.kubernetes.discovery import Discovery, Resource
from reconciler.runtimes.kubernetes.transport import APPLY_PATCH, JSON, Transport
from renderers import naming

FIELD_MANAGER = "nebula"


def describe(kind: str, name: str, namespace: str | None) -> str:
    """``Deployment/api-r3 in shop-prod``: how messages name an object."""
    return f"{kind}/{name}" + (f" in {namespace}" if namespace else "")


class Applier:
    def __init__(self, transport: Transport, discovery: Discovery) -> None:
        self._transport = transport
        self._discovery = discovery

    def apply(
        self,
        manifest: Mapping[str, Any],
        *,
        namespace: str | None = None,
        blocker: Blocker | None = None,
        force: bool = True,
    ) -> JSON:
        """Applies one object and returns it as the server now has it.

        ``namespace`` is used when the manifest names none; ``blocker`` is the code of a
        definitive refusal (the stage's), unless the refusal names a better one.
        """
        resource, name, target = self.locate(manifest, namespace)
        labels = (manifest.get("metadata") or {}).get("labels") or {}
        if not resource.namespaced and labels.get(naming.SERVICE) == MANIFESTS:
            # A raw manifest lives in its environment's namespace: a cluster-scoped object
            # would be shared by every environment, and never pruned with them.
            raise PermanentError(
                f"{resource.kind}/{name} is cluster-scoped; raw manifests are applied into "
                "the environment's namespace only (apply cluster-wide objects outside Nebula)",
                code=Blocker.CONFIGURATION,
            )
        body = dict(manifest)
        if resource.namespaced and target:
            body["metadata"] = {**manifest["metadata"], "namespace": target}
        query = [("fieldManager", FIELD_MANAGER)]
        if force:
            query.append(("force", "true"))
        applied = self._transport.call(
            "PATCH",
            resource.item(name, target if resource.namespaced else None),
            what=f"apply {describe(resource.kind, name, target if resource.namespaced else None)}",
            query=query,
            body=body,
            content_type=APPLY_PATCH,
            blocker=blocker,
            sensitive=resource.kind == "Secret",
        )
        return applied or {}

    def locate(
        self, manifest: Mapping[str, Any], namespace: str | None
    ) -> tuple[Resource, str, str | None]:
        """(where it is served, its name, its namespace) for a manifest."""
        metadata = manifest.get("metadata")
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        if (
            not isinstance(metadata, Mapping)
            or not metadata.get("name")
            or not api_version
            or not kind
        ):
            raise PermanentError(
                "a manifest without apiVersion, kind or metadata.name cannot be applied",
                code=Blocker.CONFIGURATION,
            )
        resource = self._discovery.resource(str(api_version), str(kind))
        target = metadata.get("namespace") or namespace
        if namespace and target != namespace and resource.namespaced:
            raise PermanentError(
                f"{describe(str(kind), str(metadata['name']), str(target))} is outside "
                f"the release's namespace {namespace}",
                code=Blocker.CONFIGURATION,
            )
        return resource, str(metadata["name"]), str(target) if target else None
