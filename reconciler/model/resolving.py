"""Variables resolved for a release: what a release freezes.

A release must not change when another service's file changes later, so ``${{ svc.KEY }}`` is
replaced, at release creation, by the segments of that service's own (resolved) value. What is
left is only what the *cluster* supplies when the release runs: literal text, database exports
(``${{ db.KEY }}``, whose credentials live in a Secret), ``${{ host(svc) }}`` addresses and
``${{ secret.NAME }}`` server-side secrets.
"""

from __future__ import annotations

from reconciler.errors import ConfigurationError
from reconciler.model import references
from reconciler.model.references import Literal, Reference, RefKind, Segment
from reconciler.model.specs import EnvironmentConfig, ServiceSpec

Segments = tuple[Segment, ...]
Resolved = tuple[tuple[str, Segments], ...]


def resolve_variables(config: EnvironmentConfig, service: ServiceSpec) -> Resolved:
    """Each of ``service``'s variables with every service reference replaced, in file order.

    Database, host and secret references stay; adjacent literals are merged. Validation has
    already rejected unknown targets and cycles; should either reach here it is a
    ``ConfigurationError`` naming the chain, not a recursion error.
    """
    resolver = _Resolver(config)
    return tuple((key, resolver.value(service.name, key, ())) for key, _ in service.variables)


def resolve_variable(config: EnvironmentConfig, service: str, key: str) -> Segments:
    """What ``${{ service.KEY }}`` resolves to in ``config`` (``ConfigurationError`` if nothing)."""
    return _Resolver(config).value(service, key, ())


class _Resolver:
    def __init__(self, config: EnvironmentConfig) -> None:
        self.config = config
        self.done: dict[tuple[str, str], Segments] = {}

    def value(self, service: str, key: str, chain: tuple[str, ...]) -> Segments:
        here = f"{service}.{key}"
        if (service, key) in self.done:
            return self.done[(service, key)]
        if here in chain:
            cycle = " -> ".join((*chain[chain.index(here) :], here))
            raise ConfigurationError(
                f"variable reference cycle: {cycle}",
                hint="break the cycle: one of these values must not read the next",
            )
        spec = self.config.service(service)
        raw = spec.variable_map.get(key) if spec is not None else None
        if raw is None:
            raise ConfigurationError(
                f"${{{{ {service}.{key} }}}} names a variable that does not exist",
                hint="run nebula validate on the file",
            )
        out: list[Segment] = []
        for segment in references.parse(raw):
            if self._is_service_variable(segment):
                assert isinstance(segment, Reference)
                out.extend(self.value(segment.target, segment.key, (*chain, here)))
            else:
                out.append(segment)
        resolved = merge_literals(out)
        self.done[(service, key)] = resolved
        return resolved

    def _is_service_variable(self, segment: Segment) -> bool:
        return (
            isinstance(segment, Reference)
            and segment.kind is RefKind.VARIABLE
            and self.config.service(segment.target) is not None
        )


def merge_literals(segments: list[Segment] | Segments) -> Segments:
    """Adjacent literal segments as one, and no empty literals."""
    out: list[Segment] = []
    for segment in segments:
        if isinstance(segment, Literal):
            if not segment.text:
                continue
            if out and isinstance(out[-1], Literal):
                out[-1] = Literal(out[-1].text + segment.text)
                continue
        out.append(segment)
    return tuple(out)
