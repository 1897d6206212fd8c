"""A service's variables as a release resolves them: for telling which *resolved* values two
files (or a live release and a file) disagree on, and through which reference.

A variable whose text did not change may still resolve differently: ``X = "${{ a.K }}"``
reads whatever ``a.K`` says, and ``${{ host(a) }}`` the port ``a`` listens on. Each value is
compared as its segments (service references replaced, database, host and secret references
kept) with the port behind every ``host()`` it uses. What is shown of a value never holds a
secret or a credential: those stay references (``${{ secret.STRIPE_KEY }}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.errors import ConfigurationError
from reconciler.model import references, resolving
from reconciler.model.frozen import FrozenRelease, Ports, host_ports
from reconciler.model.references import Literal, Reference, RefKind
from reconciler.model.resolving import Segments
from reconciler.model.specs import EnvironmentConfig, ServiceSpec


@dataclass(frozen=True)
class Value:
    """One resolved value: its segments, and the port of each ``host()`` target it uses."""

    segments: Segments
    ports: Ports = ()

    def shown(self, namespace: str) -> str:
        """As the release's container reads it, secrets and credentials left as references."""
        ports = dict(self.ports)
        out: list[str] = []
        for segment in self.segments:
            if isinstance(segment, Literal):
                out.append(segment.text)
            elif segment.kind is RefKind.HOST:
                port = ports.get(segment.target)
                address = address_of(segment.target, namespace)
                out.append(address if port is None else f"{address}:{port}")
            else:
                out.append(str(segment))
        return "".join(out)


def address_of(unit: str, namespace: str) -> str:
    """The stable in-cluster address ``${{ host(unit) }}`` stands for (without the port)."""
    return f"{unit}.{namespace}.svc.cluster.local"


def _hosts(segments: Segments) -> frozenset[str]:
    return frozenset(
        s.target for s in segments if isinstance(s, Reference) and s.kind is RefKind.HOST
    )


def _value(segments: Segments, ports: Mapping[str, int | None]) -> Value:
    used = _hosts(segments)
    return Value(segments, tuple(sorted((n, p) for n, p in ports.items() if n in used)))


def of_release(frozen: FrozenRelease) -> dict[str, Value]:
    """Each variable of a release as it froze it."""
    ports = dict(frozen.ports)
    return {key: _value(segments, ports) for key, segments in frozen.variables}


def of_file(config: EnvironmentConfig, service: ServiceSpec) -> dict[str, Value]:
    """Each variable of ``service`` as a release created from ``config`` now would freeze it."""
    return of_release(FrozenRelease.of(config, service))


def _names_nothing(config: EnvironmentConfig, ref: Reference) -> bool:
    if ref.kind is RefKind.VARIABLE:
        return config.unit(ref.target) is None
    return ref.kind is RefKind.HOST and config.unit(ref.target) is None


def _reference(config: EnvironmentConfig, ref: Reference) -> Value | None:
    """What one reference resolves to in ``config`` (None: it names nothing there)."""
    if _names_nothing(config, ref):
        return None
    segments: Segments = (ref,)
    if ref.kind is RefKind.VARIABLE and config.service(ref.target) is not None:
        try:
            segments = resolving.resolve_variable(config, ref.target, ref.key)
        except ConfigurationError:  # the key is gone (a validated file says so elsewhere)
            return None
    return _value(segments, dict(host_ports(config, (("V", segments),))))


def via(old: EnvironmentConfig, new: EnvironmentConfig, raw: str) -> str | None:
    """The first reference in the variable text ``raw`` that resolves differently in ``new``
    than in ``old``, written as in the file without braces: ``a.K``, ``host(a)``."""
    for ref in references.references(raw):
        if _reference(old, ref) != _reference(new, ref):
            if ref.kind is RefKind.HOST:
                return f"host({ref.target})"
            if ref.kind is RefKind.SECRET:
                return f"secret.{ref.target}"
            return f"{ref.target}.{ref.key}"
    return None
