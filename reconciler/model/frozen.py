"""A release's frozen configuration: what a release of one unit renders from, forever.

A release must not change when the project's file changes later, so everything it needs is
frozen when it is created: the unit's effective spec (overrides merged), the units it waits
for, its variables with service references already replaced (``resolving``), and the port
behind every ``${{ host(svc) }}`` it uses. Stored as a JSON document on the release row
(``for_storage``) and read back as this value (``from_storage``), so no caller reads the
document's keys itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from reconciler.model import codec, graph, references, resolving
from reconciler.model.references import Literal, Reference, RefKind, Segment
from reconciler.model.resolving import Resolved
from reconciler.model.specs import (
    DatabaseSpec,
    EnvironmentConfig,
    ManifestsSpec,
    ServiceSpec,
    Unit,
)

Ports = tuple[tuple[str, int | None], ...]


@dataclass(frozen=True)
class FrozenRelease:
    unit: Unit
    dependencies: tuple[str, ...] = ()
    variables: Resolved = ()
    ports: Ports = ()  # the stable port of each host() target the variables use

    @classmethod
    def of(cls, config: EnvironmentConfig, unit: Unit) -> FrozenRelease:
        """``unit`` as a release in ``config``'s environment would freeze it now."""
        if not isinstance(unit, ServiceSpec):
            return cls(unit, graph.dependencies(config, unit.name))
        variables = resolving.resolve_variables(config, unit)
        return cls(
            unit, graph.dependencies(config, unit.name), variables, host_ports(config, variables)
        )

    @classmethod
    def from_storage(cls, data: Mapping[str, Any]) -> FrozenRelease:
        return cls(
            unit=codec.unit_from_dict(data["spec"]),
            dependencies=tuple(data.get("dependencies", ())),
            variables=tuple(
                (key, tuple(_segment_from_json(s) for s in items))
                for key, items in data.get("variables", ())
            ),
            ports=tuple(sorted((name, port) for name, port in data.get("ports", {}).items())),
        )

    def for_storage(self) -> dict[str, Any]:
        return {
            "spec": codec.unit_to_dict(self.unit),
            "dependencies": list(self.dependencies),
            "variables": [
                [key, [_segment_to_json(s) for s in segments]] for key, segments in self.variables
            ],
            "ports": dict(self.ports),
        }

    @property
    def service(self) -> ServiceSpec:
        """The unit, which the caller knows is a service (a database has no release spec)."""
        assert isinstance(self.unit, ServiceSpec), f"{self.unit.name} is a database"
        return self.unit

    @property
    def headline(self) -> str:
        """What a change-set line shows for the whole release: its image, or engine and version."""
        if isinstance(self.unit, DatabaseSpec):
            return f"{self.unit.engine} {self.unit.version}"
        if isinstance(self.unit, ManifestsSpec):
            return self.unit.headline
        return self.unit.image

    @property
    def secret_names(self) -> frozenset[str]:
        """The server-side secrets the release reads: a missing one is a configuration blocker."""
        return frozenset(
            segment.target
            for _, segments in self.variables
            for segment in segments
            if isinstance(segment, Reference) and segment.kind is RefKind.SECRET
        )

    @property
    def image(self) -> str:
        """What the release runs: the service's image, or the database engine's."""
        if isinstance(self.unit, DatabaseSpec):
            return f"{self.unit.engine}:{self.unit.version}"
        if isinstance(self.unit, ManifestsSpec):
            return f"manifests@{self.unit.digest}"
        return self.unit.image

    def with_image(self, image: str) -> FrozenRelease:
        """The same release with another image (a promotion keeps the target's settings)."""
        return replace(self, unit=replace(self.service, image=image))


def host_ports(config: EnvironmentConfig, variables: Resolved) -> Ports:
    """The port behind each ``host()`` the variables use: a service's primary port, or 5432.

    Only the units referenced, so that a release (and its render cache key) does not change
    when an unrelated service changes its port.
    """
    targets = {
        segment.target
        for _, segments in variables
        for segment in segments
        if isinstance(segment, references.Reference) and segment.kind is references.RefKind.HOST
    }
    ports: list[tuple[str, int | None]] = []
    for name in sorted(targets):
        if (database := config.database(name)) is not None:
            ports.append((name, database.port))
        elif (target := config.service(name)) is not None:
            ports.append((name, target.stable_port))
    return tuple(ports)


def _segment_to_json(segment: Segment) -> dict[str, str]:
    if isinstance(segment, Literal):
        return {"text": segment.text}
    return {"ref": segment.kind.value, "target": segment.target, "key": segment.key}


def _segment_from_json(item: Mapping[str, str]) -> Segment:
    if "text" in item:
        return Literal(item["text"])
    return Reference(RefKind(item["ref"]), item["target"], item["key"])
