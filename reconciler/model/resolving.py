"""Variables resolved for a release: what a release freezes.

A release must not change when another service's file changes later, so ``${{ svc.KEY }}`` is
replaced, at release creation, by the segments of that service's own (resolved) value. What is
left is only what the *cluster* supplies when the release runs: literal text, database exports
(``${{ db.KEY }}``, whose credentials live in a Secret), ``${{ host(svc) }}`` addresses and
``${{ secret.NAME }}`` server-side secrets.

A reference copies the whole value it names, so ten references to a value that holds ten
references make a hundred copies: a small file can describe an enormous one. ``oversized``
measures what every variable would resolve to without resolving anything (one pass, memory
in proportion to the file) and names what is over the limits: ``MAX_VARIABLE`` for one
variable, ``MAX_RELEASE`` for all of a release's variables together. Validation reports
them; ``resolve_variables`` refuses them too, before it builds a single copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.errors import ConfigurationError
from reconciler.model import references
from reconciler.model.references import Literal, Reference, RefKind, Segment
from reconciler.model.specs import EnvironmentConfig, ServiceSpec
from reconciler.numbers import KIB, MIB, format_size

Segments = tuple[Segment, ...]
Resolved = tuple[tuple[str, Segments], ...]
Variable = tuple[str, str]  # (service, key)

MAX_VARIABLE = 64 * KIB
MAX_RELEASE = 1 * MIB
_SATURATED = 1 << 60  # sizes stop growing here: enough to compare with any limit


@dataclass(frozen=True)
class Oversized:
    """A variable (or, with ``key`` None, all of a service's variables) over its limit."""

    service: str
    key: str | None
    size: int  # bytes, at most _SATURATED
    limit: int
    chain: tuple[str, ...]  # "a.K", "b.K", ...: the value and, in turn, its largest part

    @property
    def message(self) -> str:
        chain = " -> ".join(self.chain)
        if self.key is None:
            return (
                f"the variables of {self.service} resolve to {_shown_size(self.size)} together, "
                f"more than the {format_size(self.limit)} a release may hold (the largest: "
                f"{chain})"
            )
        return (
            f"{self.service}.{self.key} resolves to {_shown_size(self.size)}, more than the "
            f"{format_size(self.limit)} a variable may hold: {chain}"
        )

    hint = (
        "a reference copies the whole value it names: write a large value once, and pass "
        "large data another way (a file in the image, a secret)"
    )


def oversized(config: EnvironmentConfig, service: ServiceSpec | None = None) -> list[Oversized]:
    """Each variable over ``MAX_VARIABLE`` whose own parts are all within it (the place the
    copies first grow too large; what reads it is larger still), then each service whose
    variables together pass ``MAX_RELEASE``. Only ``service``'s, when one is given."""
    sizes = _Sizes(config)
    wanted = [service] if service is not None else list(config.services)
    found: list[Oversized] = []
    for spec in wanted:
        over = False
        for key, _ in spec.variables:
            size = sizes.of((spec.name, key))
            if size > MAX_VARIABLE:
                over = True
                parts = sizes.parts.get((spec.name, key), ())
                if all(sizes.of(part) <= MAX_VARIABLE for part in parts):
                    found.append(
                        Oversized(spec.name, key, size, MAX_VARIABLE, sizes.chain(spec.name, key))
                    )
        total = min(_SATURATED, sum(sizes.of((spec.name, key)) for key, _ in spec.variables))
        if not over and total > MAX_RELEASE:
            largest = max(spec.variables, key=lambda item: sizes.of((spec.name, item[0])))[0]
            found.append(
                Oversized(spec.name, None, total, MAX_RELEASE, sizes.chain(spec.name, largest))
            )
    return found


class _Sizes:
    """What each variable would resolve to, in bytes, measured without resolving: literal
    text counts its length, a reference left for the cluster (a database export, an address,
    a secret) the length it is written with, a service variable its own measure."""

    def __init__(self, config: EnvironmentConfig) -> None:
        self.values = {(s.name, k): v for s in config.services for k, v in s.variables}
        self.parts: dict[Variable, tuple[Variable, ...]] = {}
        self.done: dict[Variable, int] = {}
        self._parsed: dict[Variable, tuple[Segment, ...]] = {}

    def of(self, variable: Variable) -> int:
        """Measured depth first with a stack of its own (a long chain is no recursion error);
        a variable met again on its own path is a cycle, reported elsewhere: it counts 0."""
        if variable in self.done:
            return self.done[variable]
        stack: list[tuple[Variable, int]] = [(variable, 0)]  # (variable, next part to look at)
        path = {variable}
        while stack:
            here, index = stack[-1]
            parts = self._parts(here)
            while index < len(parts) and (parts[index] in self.done or parts[index] in path):
                index += 1
            if index < len(parts):
                stack[-1] = (here, index + 1)
                stack.append((parts[index], 0))
                path.add(parts[index])
                continue
            stack.pop()
            path.discard(here)
            total = self._own(here) + sum(self.done.get(p, 0) for p in parts)
            self.done[here] = min(_SATURATED, total)
        return self.done[variable]

    def chain(self, service: str, key: str) -> tuple[str, ...]:
        """The variable, then its largest part, and that part's largest part, and so on."""
        chain, seen, here = [], set(), (service, key)
        while here not in seen:
            seen.add(here)
            chain.append(f"{here[0]}.{here[1]}")
            parts = [p for p in self.parts.get(here, ()) if p not in seen]
            if not parts:
                break
            here = max(parts, key=self.of)
        return tuple(chain)

    def _segments(self, variable: Variable) -> tuple[Segment, ...]:
        if variable not in self._parsed:
            raw = self.values.get(variable, "")
            try:
                self._parsed[variable] = references.parse(raw)
            except references.ReferenceSyntaxError:  # reported by validation; measured as is
                self._parsed[variable] = (Literal(raw),)
        return self._parsed[variable]

    def _parts(self, variable: Variable) -> tuple[Variable, ...]:
        if variable not in self.parts:
            self.parts[variable] = tuple(
                (s.target, s.key)
                for s in self._segments(variable)
                if isinstance(s, Reference)
                and s.kind is RefKind.VARIABLE
                and (s.target, s.key) in self.values
            )
        return self.parts[variable]

    def _own(self, variable: Variable) -> int:
        size = 0
        for segment in self._segments(variable):
            if isinstance(segment, Literal):
                size += len(segment.text.encode("utf-8"))
            elif not (
                segment.kind is RefKind.VARIABLE and (segment.target, segment.key) in self.values
            ):
                size += len(str(segment))
        return size


def _shown_size(size: int) -> str:
    return f"more than {format_size(_SATURATED)}" if size >= _SATURATED else format_size(size)


def resolve_variables(config: EnvironmentConfig, service: ServiceSpec) -> Resolved:
    """Each of ``service``'s variables with every service reference replaced, in file order.

    Database, host and secret references stay; adjacent literals are merged. Validation has
    already rejected unknown targets, cycles and values over the limits; should one reach
    here it is a ``ConfigurationError`` naming the chain, not a recursion or memory error.
    """
    for found in oversized(config, service):
        raise ConfigurationError(found.message, hint=found.hint)
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
