"""What the renderers take: frozen inputs, independent of the store and of the file.

A ``ReleaseSpec`` holds everything one release renders from: the effective service spec, the
release number and the variables as frozen at release creation. The reconciler rebuilds these
from stored releases; ``nebula render`` builds them from a file with the ``*_from_config``
helpers below. Every input is hashable and compared by content, which is what the render cache
keys on.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model import references
from reconciler.model.resolving import Resolved, resolve_variables
from reconciler.model.specs import DATABASE_PORT, DatabaseSpec, EnvironmentConfig, ServiceSpec
from renderers import naming


@dataclass(frozen=True)
class Scope:
    """One project environment: the namespace everything in it lives in."""

    project: str
    environment: str

    @property
    def namespace(self) -> str:
        return naming.namespace(self.project, self.environment)

    def __str__(self) -> str:
        return f"{self.project}/{self.environment}"


@dataclass(frozen=True)
class ReleaseSpec:
    scope: Scope
    service: ServiceSpec  # effective: the environment's overrides merged
    number: int
    variables: Resolved  # service references already replaced (reconciler.model.resolving)
    ports: tuple[tuple[str, int | None], ...] = ()  # the stable port of each host() target

    @property
    def name(self) -> str:
        return self.service.name

    @property
    def label(self) -> str:
        return f"{self.service.name} {naming.release_label(self.number)}"


@dataclass(frozen=True)
class DatabaseUnit:
    scope: Scope
    spec: DatabaseSpec


@dataclass(frozen=True)
class EnvironmentUnit:
    """The per-environment objects: the namespace and the server-side secrets it uses."""

    scope: Scope
    secret_names: tuple[str, ...] = ()


def release_from_config(
    project: str, config: EnvironmentConfig, service: str, number: int = 1
) -> ReleaseSpec:
    spec = config.service(service)
    if spec is None:
        raise KeyError(service)
    variables = resolve_variables(config, spec)
    return ReleaseSpec(
        scope=Scope(project, config.name),
        service=spec,
        number=number,
        variables=variables,
        ports=host_ports(config, variables),
    )


def host_ports(
    config: EnvironmentConfig, variables: Resolved
) -> tuple[tuple[str, int | None], ...]:
    """The port behind each ``host()`` the variables use: a service's primary port, or 5432.

    Only the units referenced, so that a release (and its cache key) does not change when an
    unrelated service changes its port.
    """
    targets = {
        segment.target
        for _, segments in variables
        for segment in segments
        if isinstance(segment, references.Reference) and segment.kind is references.RefKind.HOST
    }
    ports: list[tuple[str, int | None]] = []
    for name in sorted(targets):
        if config.database(name) is not None:
            ports.append((name, DATABASE_PORT))
        elif (target := config.service(name)) is not None:
            ports.append((name, target.stable_port))
    return tuple(ports)


def database_from_config(project: str, config: EnvironmentConfig, name: str) -> DatabaseUnit:
    spec = config.database(name)
    if spec is None:
        raise KeyError(name)
    return DatabaseUnit(Scope(project, config.name), spec)


def environment_from_config(project: str, config: EnvironmentConfig) -> EnvironmentUnit:
    names = {
        ref.target
        for service in config.services
        for _, value in service.variables
        for ref in references.references(value)
        if ref.kind is references.RefKind.SECRET
    }
    return EnvironmentUnit(Scope(project, config.name), tuple(sorted(names)))
