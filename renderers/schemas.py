"""Rendered objects checked against the Kubernetes OpenAPI schemas (kubernetes-validate's data).

The schemas are the strict flavour (unknown fields are errors, as ``kubectl`` treats them), for
the Kubernetes version the capabilities name. kubernetes-validate's own ``validate`` re-reads a
1.8 MB definitions file on every call; we build one validator per schema and keep it, reading
the same files the package ships.

The installed package carries a window of versions (1.37.0 carries 1.25 to 1.37). A version
older than the window is checked against the oldest carried one; a kind that version no longer
serves there, ``batch/v1beta1`` CronJob for 1.20, is checked against its successor
(``batch/v1``), which kept every field we render. ``Validation.schema_version`` says which
schemas were used, so nobody mistakes this for a check against 1.20's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import kubernetes_validate
from packaging.version import Version
from referencing import Registry, Resource

from reconciler.errors import ManifestError
from renderers.capabilities import LATEST, Capabilities
from renderers.manifests import Manifest

# Where a carried version lacks a kind an older cluster serves: the successor to check against.
_SUCCESSORS = {
    ("batch/v1beta1", "CronJob"): "batch/v1",
    ("policy/v1beta1", "PodDisruptionBudget"): "policy/v1",
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): "autoscaling/v2",
}
# Kinds a CRD defines, not Kubernetes: checked against the CRD's own schema, kept beside this
# module with its source (``crds/*.json``: the published CRD's openAPIV3Schema, verbatim).
_CRDS = {
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): "httproute-v1.json",
    ("postgresql.cnpg.io/v1", "Cluster"): "cnpg-cluster-v1.json",
}


@dataclass(frozen=True)
class Validation:
    schema_version: str  # the schemas used, e.g. "1.25"
    stand_ins: tuple[str, ...]  # "batch/v1beta1 CronJob checked as batch/v1"


def carried_versions() -> tuple[str, ...]:
    """The Kubernetes minor versions the installed kubernetes-validate has schemas for."""
    return tuple(sorted(_carried(), key=Version))


@cache
def _carried() -> frozenset[str]:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    found = (re.fullmatch(r"v(\d+\.\d+)\.0-local-strict", p.name) for p in root.iterdir())
    return frozenset(m.group(1) for m in found if m)


def schema_version(capabilities: Capabilities) -> str:
    versions = carried_versions()
    if capabilities.kube_version == LATEST:
        return versions[-1]
    wanted = Version(capabilities.kube_version)
    older = [v for v in versions if Version(v) <= wanted]
    return older[-1] if older else versions[0]


def validate(manifests: Iterable[Manifest], capabilities: Capabilities) -> Validation:
    """Raises ``ManifestError`` naming the first object that does not match its schema."""
    version = schema_version(capabilities)
    stand_ins: list[str] = []
    for manifest in manifests:
        api_version = manifest.api_version
        validator = _validator(version, manifest.kind, api_version)
        if validator is None and (successor := _SUCCESSORS.get((api_version, manifest.kind))):
            validator = _validator(version, manifest.kind, successor)
            note = f"{api_version} {manifest.kind} checked as {successor}"
            if note not in stand_ins:
                stand_ins.append(note)
        if validator is None:
            raise ManifestError(
                f"{manifest.ref}: no schema for {api_version} {manifest.kind} in Kubernetes "
                f"{version} (kubernetes-validate {kubernetes_validate.__version__})"
            )
        body = _as_submitted(manifest.body, api_version, validator)
        error = jsonschema.exceptions.best_match(validator.iter_errors(body))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            crd = _CRDS.get((api_version, manifest.kind))
            against = f"the {crd.removesuffix('.json')} CRD" if crd else f"the Kubernetes {version}"
            raise ManifestError(
                f"{manifest.ref} does not match {against} schema at {where}: {error.message}"
            ) from error
    return Validation(version, tuple(stand_ins))


def clear_cache() -> None:
    """Forget the loaded schemas (for measuring the cold cost; nothing else needs this)."""
    _validator.cache_clear()
    _definitions.cache_clear()


def _as_submitted(body: Mapping[str, Any], api_version: str, validator: Any) -> Mapping[str, Any]:
    """The body, with apiVersion set to what the validator's schema expects for a stand-in."""
    expected = validator.schema.get("properties", {}).get("apiVersion", {}).get("enum")
    if expected and api_version not in expected:
        return {**body, "apiVersion": expected[0]}
    return body


@cache
def _validator(version: str, kind: str, api_version: str) -> Any:
    if (api_version, kind) in _CRDS:
        return _crd_validator(_CRDS[(api_version, kind)])
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    directory = (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{version}.0-local-strict"
    )
    path = directory / f"{kind.lower()}-{group}.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text(encoding="utf-8"))
    # Each schema names itself and the shared definitions by ``$id``; ``@`` registers by it.
    registry: Registry[Any] = _definitions(version) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _crd_validator(file: str) -> Any:
    """The CRD's schema made strict like kubernetes-validate's: the API server prunes fields
    a structural schema does not name, so an unknown field would be silently lost."""
    text = (resources.files("renderers") / "crds" / file).read_text(encoding="utf-8")
    schema = _strict(json.loads(text)["openAPIV3Schema"])
    return jsonschema.Draft202012Validator(schema)


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items()}
    properties = out.get("properties")
    if isinstance(properties, dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@cache
def _definitions(version: str) -> Resource[Any]:
    directory = (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{version}.0-local-strict"
    )
    text = (directory / "_definitions.json").read_text(encoding="utf-8")
    return Resource.from_contents(json.loads(text))
