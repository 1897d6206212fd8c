"""Raw manifests as applied (behaviour.md "Raw manifests (1.2)"): each document as written,
placed in the environment's namespace and labelled like everything Nebula applies.

Nothing is templated: a document's values are the file's, so no secret or reference is ever
spliced into one. The labels are Nebula's (managed-by, project, environment, the unit
``manifests`` and the release): the release label is what prunes a document a later release
no longer has, since draining the old release deletes what still carries its label.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from reconciler.model.specs import MANIFESTS, ManifestsSpec, RawDocument
from renderers import naming
from renderers.manifests import Manifest, Manifests
from renderers.releases import Scope


def documents(unit: ManifestsSpec, scope: Scope, number: int) -> Manifests:
    labels = dict(naming.release_labels(scope.project, scope.environment, unit.name, number))
    return tuple(_placed(d, scope.namespace, labels) for d in unit.documents)


def _placed(document: RawDocument, namespace: str, labels: dict[str, str]) -> Manifest:
    body: dict[str, Any] = json.loads(document.body)
    metadata = dict(body.get("metadata") or {})
    metadata["namespace"] = namespace
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    body["metadata"] = metadata
    text = yaml.safe_dump(body, sort_keys=False, default_flow_style=False)
    return Manifest(document.api_version, document.kind, document.name, namespace, text, body)


def is_raw(manifest: Manifest) -> bool:
    labels = (manifest.body.get("metadata") or {}).get("labels") or {}
    return labels.get(naming.SERVICE) == MANIFESTS


def kinds(unit: ManifestsSpec) -> tuple[str, ...]:
    """``apiVersion/Kind`` of each kind the documents hold, sorted: what pruning lists."""
    return tuple(sorted({f"{d.api_version}/{d.kind}" for d in unit.documents}))
