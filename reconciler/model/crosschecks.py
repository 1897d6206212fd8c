"""Checks that need a whole environment: references, dependencies, cycles, volumes, and what
the variables would resolve to (``resolving.oversized``)."""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.model import graph, references, resolving
from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems
from reconciler.model.reading import Locate
from reconciler.model.specs import DatabaseSpec, EnvironmentConfig, ServiceSpec


def check_environment(
    problems: Problems, config: EnvironmentConfig, locates: dict[str, Locate]
) -> None:
    """References, dependencies, cycles and volumes: checks that need the whole environment."""
    units: dict[str, ServiceSpec | DatabaseSpec] = {d.name: d for d in config.databases}
    units.update((s.name, s) for s in config.services)
    for service in config.services:
        locate = locates[service.name]
        base: Path = ("services", service.name)
        for key, value in service.variables:
            where = locate((*base, "variables", key))
            for ref in references.references(value):
                _check_reference(problems, where, service, ref, units)
        for index, dep in enumerate(service.depends_on):
            where = locate((*base, "deploy", "depends_on", index))
            if dep == service.name:
                problems.add(
                    where,
                    Code.SELF_DEPENDENCY,
                    f"service '{dep}' depends on itself",
                    f"remove '{dep}' from its depends_on",
                )
            elif dep not in units:
                problems.add(
                    where,
                    Code.UNKNOWN_DEPENDENCY,
                    f"depends_on names '{dep}', which is not a service or database of this file",
                    f"known: {', '.join(sorted(units)) or '(none)'}",
                )
        if service.volumes and not service.downtime_accepted:
            for volume in service.volumes:
                if not (volume.accept_downtime or service.accept_downtime):
                    problems.add(
                        locate((*base, "volumes", volume.name)),
                        Code.VOLUME_WITHOUT_DOWNTIME,
                        f"volume '{volume.name}' of service '{service.name}' needs accept_downtime = true",
                        "a release of a service with a volume stops the running release before the "
                        f"new one starts; add accept_downtime = true to [services.{service.name}.volumes.{volume.name}]",
                        key=True,
                    )
    for found in resolving.oversized(config):
        base = ("services", found.service, "variables")
        problems.add(
            locates[found.service]((*base, found.key) if found.key is not None else base),
            Code.OVERSIZED_VALUE,
            found.message,
            found.hint,
            key=found.key is None,
        )
    edges = [e for e in graph.edges(config) if e.source != e.target]
    cycle = graph.find_cycle(units, edges)
    if cycle is not None:
        first = next(e for e in edges if e.source == cycle[0] and e.target == cycle[1])
        locate = locates[first.source]
        base = ("services", first.source)
        where = (
            locate((*base, "deploy", "depends_on"))
            if first.via is graph.Via.DEPENDS_ON
            else locate((*base, "variables", first.detail))
        )
        problems.add(
            where,
            Code.DEPENDENCY_CYCLE,
            f"dependency cycle: {' -> '.join(cycle)}",
            "break the cycle: remove one depends_on entry or ${{ svc.KEY }} reference along it",
        )


def _some(names: Iterable[str], most: int = 20) -> str:
    """Names for a hint: sorted, the first ``most`` of them (a file may declare thousands)."""
    ordered = sorted(names)
    more = f" and {len(ordered) - most} more" if len(ordered) > most else ""
    return (", ".join(ordered[:most]) or "(none)") + more


def _check_reference(
    problems: Problems,
    where: Path,
    service: ServiceSpec,
    ref: references.Reference,
    units: dict[str, ServiceSpec | DatabaseSpec],
) -> None:
    if ref.kind is references.RefKind.SECRET:
        return
    target = units.get(ref.target)
    if target is None:
        what = "service" if ref.kind is references.RefKind.HOST else "service or database"
        problems.add(
            where,
            Code.UNKNOWN_REFERENCE,
            f"{ref} names unknown {what} '{ref.target}'",
            f"known: {_some(units)}",
        )
        return
    if ref.kind is references.RefKind.HOST:
        return
    if ref.target == service.name:
        problems.add(
            where,
            Code.SELF_DEPENDENCY,
            f"service '{service.name}' depends on itself: {ref} reads its own variable",
            f"write the value of {ref.key} directly",
        )
        return
    if isinstance(target, DatabaseSpec):
        if ref.key not in target.engine.keys:
            problems.add(
                where,
                Code.UNKNOWN_REFERENCE,
                f"{ref}: database '{target.name}' exports no '{ref.key}'",
                f"a {target.engine} database exports: {', '.join(target.engine.keys)}",
            )
    elif ref.key not in target.variable_map:
        problems.add(
            where,
            Code.UNKNOWN_REFERENCE,
            f"{ref}: service '{target.name}' has no variable '{ref.key}'",
            f"its variables: {', '.join(sorted(target.variable_map)) or '(none)'}",
        )
