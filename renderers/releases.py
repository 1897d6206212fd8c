"""What the renderers take: frozen inputs, independent of the store and of the file.

A ``ReleaseSpec`` holds everything one release renders from: the effective service spec, the
release number and the variables as frozen at release creation (``model.frozen``). The
reconciler builds them from stored releases and ``nebula render`` from a file, both through
``release_spec``. Every input is hashable and compared by content, which is what the render cache
keys on.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model import references
from reconciler.model.frozen import FrozenRelease, Ports
from reconciler.model.resolving import Resolved
from reconciler.model.specs import DatabaseSpec, EnvironmentConfig, PodSecurity, ServiceSpec
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
    ports: Ports = ()  # the stable port of each host() target

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
    pod_security: PodSecurity = PodSecurity.BASELINE  # the namespace's Pod Security labels


def release_spec(scope: Scope, number: int, frozen: FrozenRelease) -> ReleaseSpec:
    """The one way a release spec is made: from a release's frozen configuration."""
    return ReleaseSpec(
        scope=scope,
        service=frozen.service,
        number=number,
        variables=frozen.variables,
        ports=frozen.ports,
    )


def release_from_config(
    project: str, config: EnvironmentConfig, service: str, number: int = 1
) -> ReleaseSpec:
    """What a release of ``service`` created from ``config`` now would render from."""
    spec = config.service(service)
    if spec is None:
        raise KeyError(service)
    return release_spec(Scope(project, config.name), number, FrozenRelease.of(config, spec))


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
    return EnvironmentUnit(
        Scope(project, config.name),
        tuple(sorted(names)),
        config.environment.platform.pod_security,
    )
