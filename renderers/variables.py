"""A release's variables as container environment: ConfigMap literals or secretKeyRef entries.

A value that is only text once addresses are filled in goes into the release's ConfigMap. A
value that touches a secret or a database credential is never written out: if it *is* one
reference it becomes ``valueFrom.secretKeyRef``; if it mixes text and references, each reference
becomes a hidden entry (``NEBULA_REF_<n>``) listed first and the variable composes them with
Kubernetes' ``$(NAME)`` expansion, its own text escaped so it comes out exactly as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.errors import ConfigurationError
from reconciler.model.engines import (
    CLOUDNATIVE_SECRET_KEYS,
    DATABASE_CREDENTIAL_KEYS,
    DATABASE_PORT,
    REDIS_PORT,
    PostgresRunner,
)
from reconciler.model.references import Literal, Reference, RefKind
from renderers import naming, quoting
from renderers.releases import ReleaseSpec

HIDDEN_PREFIX = "NEBULA_REF_"


@dataclass(frozen=True)
class SecretRef:
    secret: str  # the Secret object's name
    key: str


@dataclass(frozen=True)
class EnvEntry:
    name: str
    value: str | None = None  # as Kubernetes must receive it ($ doubled)
    ref: SecretRef | None = None


@dataclass(frozen=True)
class EnvPlan:
    literals: tuple[tuple[str, str], ...]  # the ConfigMap's data, used with envFrom
    env: tuple[EnvEntry, ...]  # hidden references first, then the variables that use them


def plan(release: ReleaseSpec) -> EnvPlan:
    ports = dict(release.ports)
    namespace = release.scope.namespace
    literals: list[tuple[str, str]] = []
    hidden: dict[SecretRef, str] = {}
    used = {key for key, _ in release.variables}
    counter = 0
    entries: list[EnvEntry] = []
    for key, segments in release.variables:
        parts = _parts(release, key, segments, ports, namespace)
        if all(isinstance(p, str) for p in parts):
            literals.append((key, "".join(p for p in parts if isinstance(p, str))))
            continue
        if len(parts) == 1 and isinstance(parts[0], SecretRef):
            entries.append(EnvEntry(key, ref=parts[0]))
            continue
        text: list[str] = []
        for part in parts:
            if isinstance(part, str):
                text.append(quoting.kube_literal(part))
                continue
            if part not in hidden:
                counter += 1
                while f"{HIDDEN_PREFIX}{counter}" in used:
                    counter += 1
                hidden[part] = f"{HIDDEN_PREFIX}{counter}"
            text.append(f"$({hidden[part]})")
        entries.append(EnvEntry(key, value="".join(text)))
    refs = tuple(EnvEntry(name, ref=ref) for ref, name in hidden.items())
    return EnvPlan(tuple(literals), (*refs, *entries))


def _parts(
    release: ReleaseSpec,
    key: str,
    segments: tuple[Literal | Reference, ...],
    ports: dict[str, int | None],
    namespace: str,
) -> list[str | SecretRef]:
    """Each segment as text or a secret reference, adjacent text merged."""
    out: list[str | SecretRef] = []
    for segment in segments:
        part = _part(release, key, segment, ports, namespace)
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        else:
            out.append(part)
    return out


def _part(
    release: ReleaseSpec,
    key: str,
    segment: Literal | Reference,
    ports: dict[str, int | None],
    namespace: str,
) -> str | SecretRef:
    if isinstance(segment, Literal):
        return segment.text
    if segment.kind is RefKind.SECRET:
        return SecretRef(naming.SECRETS, segment.target)
    if segment.kind is RefKind.HOST:
        if segment.target not in ports:
            raise _unresolved(release, key, segment)
        port = ports[segment.target]
        address = naming.host(segment.target, namespace)
        return address if port is None else f"{address}:{port}"
    # After resolution, a remaining variable reference is a database export: read from the
    # operator's Secret where the environment runs postgres as CloudNativePG Clusters.
    cloudnative = release.service.platform.postgres is PostgresRunner.CLOUDNATIVE_PG
    if cloudnative and segment.key in CLOUDNATIVE_SECRET_KEYS:
        return SecretRef(
            naming.cloudnative_secret(segment.target), CLOUDNATIVE_SECRET_KEYS[segment.key]
        )
    if segment.key in DATABASE_CREDENTIAL_KEYS:
        return SecretRef(naming.credentials(segment.target), segment.key)
    if segment.key in ("PGHOST", "REDIS_HOST"):
        return naming.host(segment.target, namespace)
    if segment.key == "PGPORT":
        return str(DATABASE_PORT)
    if segment.key == "REDIS_PORT":
        return str(REDIS_PORT)
    if segment.key == "PGDATABASE":
        return segment.target
    raise _unresolved(release, key, segment)


def _unresolved(release: ReleaseSpec, key: str, segment: Reference) -> ConfigurationError:
    return ConfigurationError(
        f"{release.label}: variable {key} has a reference Nebula cannot render: {segment}",
        hint="run nebula validate on the file; service references are resolved when a "
        "release is created",
    )
