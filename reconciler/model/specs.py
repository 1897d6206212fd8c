"""Frozen, typed domain objects for a validated nebula.toml.

A ``ProjectFile`` holds the declared environments and, for each, the *effective*
configuration: the base service and database tables with that environment's overrides merged
in. Everything downstream (planning, releases, rendering) reads the effective configuration,
never the raw TOML.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reconciler.model.engines import DatabaseEngine, PostgresRunner


class ProcessType(StrEnum):
    HTTP = "http"
    WORKER = "worker"
    CRON = "cron"
    JOB = "job"

    @property
    def is_long_running(self) -> bool:
        return self in (ProcessType.HTTP, ProcessType.WORKER)


class InstanceSize(StrEnum):
    NANO = "nano"
    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"
    XLARGE = "xlarge"

    @property
    def cpu(self) -> str:
        return _SIZES[self][0]

    @property
    def memory(self) -> str:
        return _SIZES[self][1]


# nebula-toml.md "Instance sizes": cpu request, memory request = limit.
_SIZES: dict[InstanceSize, tuple[str, str]] = {
    InstanceSize.NANO: ("100m", "256Mi"),
    InstanceSize.SMALL: ("250m", "512Mi"),
    InstanceSize.MEDIUM: ("500m", "1Gi"),
    InstanceSize.LARGE: ("1", "2Gi"),
    InstanceSize.XLARGE: ("2", "4Gi"),
}

DEFAULT_INSTANCE_SIZE = InstanceSize.SMALL
DEFAULT_SHUTDOWN_GRACE_SECONDS = 30
DEFAULT_RELEASE_COMMAND_TIMEOUT = 600
DEFAULT_STABILIZATION_SECONDS = 10


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


class PodSecurity(StrEnum):
    """The Pod Security Standard an environment's namespace enforces (behaviour.md "Pods")."""

    BASELINE = "baseline"
    RESTRICTED = "restricted"


Pairs = tuple[tuple[str, str], ...]  # a TOML inline table of strings, in written order


@dataclass(frozen=True)
class Autoscale:
    minimum: int
    maximum: int
    cpu_percent: int

    def __str__(self) -> str:
        return f"{self.minimum}-{self.maximum} at {self.cpu_percent}% cpu"


@dataclass(frozen=True)
class Toleration:
    key: str | None = None
    operator: str = "Equal"
    value: str | None = None
    effect: str | None = None

    def __str__(self) -> str:
        value = f"={self.value}" if self.value is not None else ""
        effect = f":{self.effect}" if self.effect is not None else ""
        return f"{self.key or '*'}{value}{effect}"


@dataclass(frozen=True)
class Placement:
    """``[services.X.kubernetes]``: where and as whom a service's pods run."""

    service_account: str | None = None
    node_selector: Pairs = ()
    tolerations: tuple[Toleration, ...] = ()
    annotations: Pairs = ()
    labels: Pairs = ()


@dataclass(frozen=True)
class Platform:
    """An environment's settings that shape every pod and route in it. Each effective unit
    carries a copy, so a release renders (and rolls back to) what it was created with."""

    pod_security: PodSecurity = PodSecurity.BASELINE
    image_pull_secrets: tuple[str, ...] = ()
    gateway: str | None = None  # "namespace/name"
    ingress_class: str | None = None
    tls_issuer: str | None = None
    postgres: PostgresRunner = PostgresRunner.STATEFULSET
    # False only for releases frozen before 1.2: rendered as they were then (no security
    # context, no disruption budget), so an upgrade shows no drift and restarts nothing.
    hardened: bool = True

    @property
    def routed(self) -> bool:
        return self.gateway is not None or self.ingress_class is not None

    @property
    def https(self) -> bool:
        """Whether public URLs are https: through a gateway, or an Ingress with TLS."""
        return self.gateway is not None or self.tls_issuer is not None


DEFAULT_PLATFORM = Platform()
LEGACY_PLATFORM = Platform(hardened=False)


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    type: ProcessType
    command: tuple[str, ...] | None = None
    port: int | None = None
    readiness_path: str = "/"
    replicas: int = 1
    instance_size: InstanceSize = DEFAULT_INSTANCE_SIZE
    stabilization_seconds: int = DEFAULT_STABILIZATION_SECONDS
    primary: bool = False
    schedule: str | None = None
    cpu: str | None = None  # instead of instance_size
    memory: str | None = None
    domains: tuple[str, ...] = ()
    liveness_path: str | None = None
    autoscale: Autoscale | None = None
    shutdown_grace_seconds: int = DEFAULT_SHUTDOWN_GRACE_SECONDS

    @property
    def cpu_request(self) -> str:
        return self.cpu or self.instance_size.cpu

    @property
    def memory_request(self) -> str:
        return self.memory or self.instance_size.memory

    @property
    def least_replicas(self) -> int:
        """What the process never runs below: its replicas, or its autoscaler's minimum."""
        return self.autoscale.minimum if self.autoscale is not None else self.replicas


@dataclass(frozen=True)
class VolumeSpec:
    name: str
    mount: str
    size: str
    accept_downtime: bool = False


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    image: str
    processes: tuple[ProcessSpec, ...] = ()
    variables: tuple[tuple[str, str], ...] = ()
    volumes: tuple[VolumeSpec, ...] = ()
    release_command: tuple[str, ...] | None = None
    release_command_timeout: int = DEFAULT_RELEASE_COMMAND_TIMEOUT
    auto_deploy: bool = True
    depends_on: tuple[str, ...] = ()
    accept_downtime: bool = False
    kubernetes: Placement = Placement()
    platform: Platform = Platform()

    @property
    def variable_map(self) -> dict[str, str]:
        return dict(self.variables)

    @property
    def primary_process(self) -> ProcessSpec | None:
        """The process whose readiness qualifies a release; None for cron/job-only services."""
        return next((p for p in self.processes if p.primary), None)

    @property
    def long_running(self) -> tuple[ProcessSpec, ...]:
        return tuple(p for p in self.processes if p.type.is_long_running)

    @property
    def downtime_accepted(self) -> bool:
        """A release with a volume drains the previous release before it starts."""
        return bool(self.volumes) and (
            self.accept_downtime or all(v.accept_downtime for v in self.volumes)
        )

    @property
    def public_urls(self) -> tuple[str, ...]:
        """The URLs its routes publish: https through a gateway or an Ingress with TLS."""
        if not self.platform.routed or self.stable_port is None:
            return ()
        scheme = "https" if self.platform.https else "http"
        return tuple(f"{scheme}://{domain}" for p in self.processes for domain in p.domains)

    @property
    def stable_port(self) -> int | None:
        primary = self.primary_process
        return primary.port if primary is not None else None


@dataclass(frozen=True)
class DatabaseSpec:
    name: str
    engine: DatabaseEngine = DatabaseEngine.POSTGRES
    version: str = "16"
    instance_size: InstanceSize = DEFAULT_INSTANCE_SIZE
    volume_size: str = "10Gi"
    automatic_failover: bool = False
    platform: Platform = Platform()
    instances: int = 1  # a CloudNativePG Cluster's; a StatefulSet runs one

    @property
    def port(self) -> int:
        return self.engine.port

    @property
    def cloudnative(self) -> bool:
        """Runs as a CloudNativePG ``Cluster`` (the operator's pods, its Secret, its failover)."""
        return (
            self.engine is DatabaseEngine.POSTGRES
            and self.platform.postgres is PostgresRunner.CLOUDNATIVE_PG
        )


@dataclass(frozen=True)
class EnvironmentSpec:
    name: str
    protected: bool = False
    # A promotion gate: a new image here must first have stayed healthy in ``promote_from``
    # for ``soak_seconds`` (behaviour.md "Promotion gates").
    promote_from: str | None = None
    soak_seconds: int = 0
    self_heal: bool = False  # put drifted live objects back
    platform: Platform = Platform()
    # Raw manifest files and folders: [kubernetes] manifests, then the environment's own.
    manifest_paths: tuple[str, ...] = ()


MANIFESTS = "manifests"  # the unit of an environment's raw manifests (behaviour.md "Raw manifests")


@dataclass(frozen=True)
class RawDocument:
    """One Kubernetes object of a raw manifest file, as written (never templated)."""

    source: str  # the file, e.g. "k8s/common/netpol.yaml"
    index: int  # the document's position in it, from 0
    api_version: str
    kind: str
    name: str
    body: str  # the object as canonical JSON (sorted keys): what is compared and applied

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class ManifestsSpec:
    """An environment's raw manifests: one unit, released like a service."""

    documents: tuple[RawDocument, ...] = ()
    name: str = MANIFESTS
    platform: Platform = DEFAULT_PLATFORM  # the environment's (its namespace's labels)

    def document(self, ref: str) -> RawDocument | None:
        return next((d for d in self.documents if d.ref == ref), None)

    @property
    def digest(self) -> str:
        """What the documents are, in one short content hash (a release's "image")."""
        text = "\n".join(d.body for d in self.documents)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    @property
    def headline(self) -> str:
        count = len(self.documents)
        return f"{count} document{'s' if count != 1 else ''} ({self.digest[:19]})"


Unit = ServiceSpec | DatabaseSpec | ManifestsSpec


@dataclass(frozen=True)
class EnvironmentConfig:
    """The effective configuration of one environment (overrides merged)."""

    environment: EnvironmentSpec
    services: tuple[ServiceSpec, ...] = ()
    databases: tuple[DatabaseSpec, ...] = ()
    manifests: ManifestsSpec | None = None  # None: the file names no raw manifest here

    @property
    def name(self) -> str:
        return self.environment.name

    def service(self, name: str) -> ServiceSpec | None:
        return next((s for s in self.services if s.name == name), None)

    def database(self, name: str) -> DatabaseSpec | None:
        return next((d for d in self.databases if d.name == name), None)

    def unit(self, name: str) -> Unit | None:
        if name == MANIFESTS and self.manifests is not None:
            return self.manifests
        return self.service(name) or self.database(name)

    def units(self) -> Iterator[Unit]:
        """In apply order's kinds: databases, the raw manifests, services."""
        yield from self.databases
        if self.manifests is not None:
            yield self.manifests
        yield from self.services

    @property
    def unit_names(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.units())


@dataclass(frozen=True)
class ProjectFile:
    """A validated nebula.toml: the environments and their effective configurations."""

    name: str | None
    environments: tuple[EnvironmentSpec, ...]
    configs: tuple[EnvironmentConfig, ...]
    source: str = field(default="", repr=False, compare=False)
    # The raw manifest files the environments name (path -> text), as read at the commit.
    files: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    warnings: tuple[Any, ...] = field(default=(), compare=False)

    def environment(self, name: str) -> EnvironmentConfig | None:
        return next((c for c in self.configs if c.name == name), None)

    @property
    def environment_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.environments)
