"""Raw manifests (behaviour.md "Raw manifests (1.2)"): YAML files of the repository that an
environment applies as they are written, as one unit named ``manifests``.

``[kubernetes] manifests`` (every environment) and ``[environments.E] manifests`` (that one)
name files or folders. Reading them needs the repository at the commit, which the file's text
alone does not give: the caller passes ``files`` (every file under the named paths, read at
the commit). Without it, nothing is read and the environment has no manifests unit, so a
caller that cannot read the repository never mistakes that for every document deleted.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

import yaml

from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems, dotted
from reconciler.model.reading import Reader
from reconciler.model.specs import MANIFESTS, ManifestsSpec, RawDocument

SUFFIXES = (".yaml", ".yml")
# What Nebula renders for its own units: a raw document of one would fight it.
NEBULA_KINDS = frozenset(
    {
        "Namespace",
        "Deployment",
        "StatefulSet",
        "Service",
        "ConfigMap",
        "Secret",
        "Job",
        "CronJob",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "HTTPRoute",
        "Ingress",
    }
)
# Kinds that live outside any namespace (Kubernetes' own and the common add-ons'); the API
# server's discovery refuses any other cluster-scoped kind when the document is applied.
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterIssuer",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterSecretStore",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "FlowSchema",
        "GatewayClass",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Node",
        "PersistentVolume",
        "PodSecurityPolicy",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)


def read_paths(reader: Reader) -> tuple[str, ...]:
    """The ``manifests`` key of a table: paths inside the repository, as written."""
    paths = reader.strings("manifests", example='["k8s/common/"]') or ()
    out = []
    for index, path in enumerate(paths):
        normal = posixpath.normpath(path) if path else ""
        if not path or path.startswith("/") or normal == ".." or normal.startswith("../"):
            reader.error(
                "manifests",
                Code.INVALID_VALUE,
                f"manifests[{index}] '{path}' is outside the repository",
                'name a file or folder relative to the repository root, e.g. "k8s/common/"',
                index=index,
            )
            continue
        out.append(path)
    return tuple(out)


def wanted(files: Mapping[str, str], path: str) -> list[str]:
    """The files ``path`` names: itself, or the YAML files under the folder, sorted."""
    normal = posixpath.normpath(path)
    if normal in files and not path.endswith("/"):
        return [normal]
    prefix = "" if normal == "." else f"{normal}/"
    return sorted(f for f in files if f.startswith(prefix) and f.endswith(SUFFIXES))


def read(
    problems: Problems,
    paths: tuple[tuple[str, Path], ...],
    files: Mapping[str, str],
    namespace: str | None,
) -> ManifestsSpec:
    """The documents of ``paths`` (each file once, in the order named). ``paths`` pairs each
    path with where it is written (``kubernetes.manifests[0]`` or the environment's own);
    problems are reported there, naming the file, the document and its kind."""
    documents: list[RawDocument] = []
    seen: dict[str, RawDocument] = {}
    read_files: dict[str, Path] = {}  # each file, and where the path that named it is written
    for path, where in paths:
        found = wanted(files, path)
        if not found:
            problems.add(
                where,
                Code.INVALID_VALUE,
                f"{dotted(where)} '{path}' is missing at the commit (no file, or no *.yaml "
                "or *.yml file under that folder)",
                "commit the file, or remove it from manifests",
            )
        for name in found:
            read_files.setdefault(name, where)
    for source, where in read_files.items():
        for document in _documents(problems, where, source, files[source], namespace):
            if document.ref in seen:
                first = seen[document.ref]
                problems.add(
                    where,
                    Code.DUPLICATE_NAME,
                    f"{source} document {document.index}: {document.ref} is also "
                    f"{first.source} document {first.index}",
                    "keep one document per kind and name",
                )
                continue
            seen[document.ref] = document
            documents.append(document)
    return ManifestsSpec(tuple(documents), MANIFESTS)


class _NoAliases(yaml.SafeLoader):
    """A safe loader that refuses aliases: ``*a`` repeated in nested lists expands a few
    hundred bytes into gigabytes once the document is serialized (a "billion laughs")."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in raw manifests", event.start_mark
            )
        return super().compose_node(parent, index)


def _documents(
    problems: Problems, where: Path, source: str, text: str, namespace: str | None
) -> list[RawDocument]:
    try:
        loaded = [d for d in yaml.load_all(text, Loader=_NoAliases) if d is not None]
    except yaml.YAMLError as exc:
        problems.add(
            where,
            Code.SYNTAX,
            f"{source} is not valid YAML: {str(exc).splitlines()[0]}",
            "fix the file: each document is one Kubernetes object",
        )
        return []
    out = []
    for index, body in enumerate(loaded):
        refused = _refusal(body, namespace)
        if refused is not None:
            problems.add(
                where, Code.INVALID_VALUE, f"{source} document {index}: {refused[0]}", refused[1]
            )
            continue
        metadata = body["metadata"]
        out.append(
            RawDocument(
                source=source,
                index=index,
                api_version=str(body["apiVersion"]),
                kind=str(body["kind"]),
                name=str(metadata["name"]),
                body=json.dumps(body, sort_keys=True, separators=(",", ":"), default=str),
            )
        )
    return out


def _refusal(body: Any, namespace: str | None) -> tuple[str, str] | None:
    """Why a document cannot be applied as a raw manifest (message, hint), or None."""
    if not isinstance(body, dict):
        return "is not a Kubernetes object (a mapping)", "each document is one object"
    kind, api_version = body.get("kind"), body.get("apiVersion")
    metadata = body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not (isinstance(kind, str) and kind and isinstance(api_version, str) and api_version):
        return "has no apiVersion and kind", "write both, e.g. apiVersion: networking.k8s.io/v1"
    if not isinstance(name, str) or not name:
        return f"{kind} has no metadata.name", "name the object"
    ref = f"{kind}/{name}"
    if kind == "List" or kind.endswith("List"):
        return (
            f"{ref}: {kind} holds other objects",
            "write each object as a document of its own (separated by ---)",
        )
    if kind in NEBULA_KINDS:
        return (
            f"{ref}: {kind} is a kind Nebula renders for its own units",
            "declare it in nebula.toml (a service, a database, domains) instead",
        )
    if kind in CLUSTER_SCOPED:
        return (
            f"{ref}: {kind} is cluster-scoped; raw manifests live in the environment's namespace",
            "apply cluster-wide objects outside Nebula (they are shared by every environment)",
        )
    written = metadata.get("namespace") if isinstance(metadata, dict) else None
    if written is not None and namespace is not None and written != namespace:
        return (
            f"{ref} names namespace '{written}', not the environment's '{namespace}'",
            "remove metadata.namespace (Nebula applies it into the environment's namespace)",
        )
    return None


def paths_of(top: tuple[str, ...], environment: tuple[str, ...]) -> tuple[str, ...]:
    """Every environment's paths, then the environment's own, each once."""
    return tuple(dict.fromkeys((*top, *environment)))
