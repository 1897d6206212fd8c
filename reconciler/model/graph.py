"""The dependency graph of one environment: who deploys after whom.

A service depends on another unit when it says so (``[deploy] depends_on``) or reads one of
its values (``${{ svc.KEY }}``, ``${{ db.KEY }}``). ``${{ host(svc) }}`` is only an address and
makes no edge. Databases depend on nothing. Where the environment has raw manifests, every
service waits for them (a NetworkPolicy or an ExternalSecret a service needs is applied
first; when they fail, no service of that change set is applied after them).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from reconciler.model import references
from reconciler.model.specs import (
    MANIFESTS,
    DatabaseSpec,
    EnvironmentConfig,
    ManifestsSpec,
    ServiceSpec,
    Unit,
)


class Via(StrEnum):
    DEPENDS_ON = "depends_on"
    REFERENCE = "reference"
    MANIFESTS = "manifests"


@dataclass(frozen=True)
class Edge:
    source: str  # the dependent
    target: str  # what it waits for
    via: Via
    detail: str  # the depends_on entry or the variable name that made the edge


def service_edges(service: ServiceSpec, unit_names: Iterable[str]) -> list[Edge]:
    """``unit_names``: a set, when asked for every service (``edges``), so that a file of many
    services is not read once per service."""
    known = unit_names if isinstance(unit_names, set | frozenset) else set(unit_names)
    out = [Edge(service.name, t, Via.DEPENDS_ON, t) for t in service.depends_on]
    for key, value in service.variables:
        try:
            refs = references.references(value)
        except references.ReferenceSyntaxError:
            continue
        for ref in refs:
            if ref.kind is references.RefKind.VARIABLE and ref.target in known:
                out.append(Edge(service.name, ref.target, Via.REFERENCE, key))
    return out


def edges(config: EnvironmentConfig) -> list[Edge]:
    names = set(config.unit_names)
    out = [e for s in config.services for e in service_edges(s, names)]
    if config.manifests is not None:
        out += [Edge(s.name, MANIFESTS, Via.MANIFESTS, MANIFESTS) for s in config.services]
    return out


def dependencies(config: EnvironmentConfig, name: str) -> tuple[str, ...]:
    """The units ``name`` waits for directly, sorted, without duplicates."""
    return tuple(sorted({e.target for e in edges(config) if e.source == name and e.target != name}))


def find_cycle(nodes: Iterable[str], graph_edges: Iterable[Edge]) -> list[str] | None:
    """A cycle as a path that returns to its start, e.g. ``['api', 'search', 'api']``.

    Deterministic: nodes and their successors are visited in name order, and the path is
    rotated to start at its alphabetically first member.
    """
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for e in graph_edges:
        if e.source in succ and e.target in succ and e.target not in succ[e.source]:
            succ[e.source].append(e.target)
    for targets in succ.values():
        targets.sort()
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in succ[node]:
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :]
                first = cycle.index(min(cycle))
                rotated = cycle[first:] + cycle[:first]
                return [*rotated, rotated[0]]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(succ):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def _rank(unit: Unit) -> int:
    """Databases, then raw manifests, then services."""
    if isinstance(unit, DatabaseSpec):
        return 0
    return 1 if isinstance(unit, ManifestsSpec) else 2


def apply_order(config: EnvironmentConfig, names: Iterable[str] | None = None) -> list[str]:
    """The order to deploy ``names`` (default: every unit) in.

    Databases first, then services along the edges; ties are broken by name so the order is
    the same every time. Ordering is computed on the whole environment and then filtered, so
    a dependency through a unit not being deployed still orders the two that are.
    """
    kind = {u.name: _rank(u) for u in config.units()}
    waits_for: dict[str, set[str]] = {n: set() for n in kind}
    dependents: dict[str, set[str]] = {n: set() for n in kind}
    for e in edges(config):
        if e.target in kind and e.target != e.source:
            waits_for[e.source].add(e.target)
            dependents[e.target].add(e.source)
    ready = [(kind[n], n) for n, deps in waits_for.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for dep in dependents[node]:
            waits_for[dep].discard(node)
            if not waits_for[dep]:
                heapq.heappush(ready, (kind[dep], dep))
    # A cycle is a validation error; should one reach here, keep its members in name order.
    order += sorted(n for n in kind if n not in order)
    wanted = set(kind if names is None else names)
    return [n for n in order if n in wanted]
