"""Frozen, typed domain objects for a validated nebula.toml.

A ``ProjectFile`` holds the declared environments and, for each, the *effective*
configuration: the base service and database tables with that environment's overrides merged
in. Everything downstream (planning, releases, rendering) reads the effective configuration,
never the raw TOML.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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
DEFAULT_RELEASE_COMMAND_TIMEOUT = 600
DEFAULT_STABILIZATION_SECONDS = 10
DATABASE_PORT = 5432
# What ``${{ db.KEY }}`` may name; the credentials among them render as secretKeyRef only.
DATABASE_KEYS = ("DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE")
DATABASE_CREDENTIAL_KEYS = frozenset({"DATABASE_URL", "PGUSER", "PGPASSWORD"})


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


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
    def stable_port(self) -> int | None:
        primary = self.primary_process
        return primary.port if primary is not None else None


@dataclass(frozen=True)
class DatabaseSpec:
    name: str
    engine: str = "postgres"
    version: str = "16"
    instance_size: InstanceSize = DEFAULT_INSTANCE_SIZE
    volume_size: str = "10Gi"
    automatic_failover: bool = False


@dataclass(frozen=True)
class EnvironmentSpec:
    name: str
    protected: bool = False
    # A promotion gate: a new image here must first have stayed healthy in ``promote_from``
    # for ``soak_seconds`` (behaviour.md "Promotion gates").
    promote_from: str | None = None
    soak_seconds: int = 0
    self_heal: bool = False  # put drifted live objects back


Unit = ServiceSpec | DatabaseSpec


@dataclass(frozen=True)
class EnvironmentConfig:
    """The effective configuration of one environment (overrides merged)."""

    environment: EnvironmentSpec
    services: tuple[ServiceSpec, ...] = ()
    databases: tuple[DatabaseSpec, ...] = ()

    @property
    def name(self) -> str:
        return self.environment.name

    def service(self, name: str) -> ServiceSpec | None:
        return next((s for s in self.services if s.name == name), None)

    def database(self, name: str) -> DatabaseSpec | None:
        return next((d for d in self.databases if d.name == name), None)

    def unit(self, name: str) -> Unit | None:
        return self.service(name) or self.database(name)

    def units(self) -> Iterator[Unit]:
        yield from self.databases
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
    warnings: tuple[Any, ...] = field(default=(), compare=False)

    def environment(self, name: str) -> EnvironmentConfig | None:
        return next((c for c in self.configs if c.name == name), None)

    @property
    def environment_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.environments)
