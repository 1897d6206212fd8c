"""What a new nebula.toml changes in one environment: the lines of a change set.

Lines are the fields whose value in the new file differs from the *last file recorded* for
the environment (not the live state, so a rollback is not undone by a push that does not
touch that service). Each line also carries ``before``, the live value when staged, which
apply compares again to refuse drifted changes.

"Value" means the *resolved* value (behaviour.md, "Resolved values"): a variable whose text is
the same in both files but which resolves differently, because a service it reads changed
(``${{ a.K }}``) or the port behind a ``${{ host(a) }}`` did, is a line too. Its ``before`` and
``after`` are the resolved values as the release's container reads them, and ``via`` names
the reference that changed (``a.K``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from reconciler.core.states import LineKind, ServiceKind
from reconciler.durations import format_duration
from reconciler.model import resolved
from reconciler.model.engines import DatabaseEngine
from reconciler.model.specs import (
    DatabaseSpec,
    EnvironmentConfig,
    EnvironmentSpec,
    ManifestsSpec,
    Platform,
    ServiceSpec,
    Unit,
)

Value = str | int | bool | list[str] | None
ENVIRONMENT_FIELDS = ("protected", "promote_from", "soak", "self_heal")
FIRST_DEPLOY_FIELD = "first_deploy"
REMOVAL_FIELD = "removal"


@dataclass(frozen=True)
class PlannedLine:
    service: str
    unit_kind: ServiceKind
    kind: LineKind
    field: str
    before: Value
    after: Value
    via: str | None = None  # the reference that changed this resolved value, e.g. "a.K"


def unit_kind(unit: Unit) -> ServiceKind:
    if isinstance(unit, DatabaseSpec):
        return ServiceKind.DATABASE
    if isinstance(unit, ManifestsSpec):
        return ServiceKind.MANIFESTS
    return ServiceKind.SERVICE


def flatten(unit: Unit) -> dict[str, Value]:
    """Every field of a unit as ``dotted.path -> value``: what lines are made of."""
    if isinstance(unit, DatabaseSpec):
        return {
            "engine": unit.engine.value,
            "version": unit.version,
            "instance_size": unit.instance_size.value,
            "volume_size": unit.volume_size,
            "automatic_failover": unit.automatic_failover,
            **_postgres(unit),
            **_platform(unit.platform, routed=False),
        }
    if isinstance(unit, ManifestsSpec):
        # One line per document, ``manifests NetworkPolicy/deny``: created (no before),
        # changed, deleted (no after); the value is the document's content hash.
        return {d.ref: document_digest(d.body) for d in unit.documents}
    out: dict[str, Value] = {
        "image": unit.image,
        "release_command": list(unit.release_command) if unit.release_command else None,
        "release_command_timeout": unit.release_command_timeout,
        "auto_deploy": unit.auto_deploy,
        "accept_downtime": unit.accept_downtime,
        "deploy.depends_on": list(unit.depends_on) or None,
    }
    for p in unit.processes:
        base = f"processes.{p.name}"
        out[f"{base}.type"] = p.type.value
        out[f"{base}.command"] = list(p.command) if p.command else None
        out[f"{base}.port"] = p.port
        out[f"{base}.readiness_path"] = p.readiness_path
        out[f"{base}.replicas"] = p.replicas
        out[f"{base}.instance_size"] = p.instance_size.value
        out[f"{base}.stabilization_seconds"] = p.stabilization_seconds
        out[f"{base}.primary"] = p.primary
        out[f"{base}.schedule"] = p.schedule
        out[f"{base}.cpu"] = p.cpu
        out[f"{base}.memory"] = p.memory
        out[f"{base}.domains"] = list(p.domains) or None
        out[f"{base}.liveness_path"] = p.liveness_path
        out[f"{base}.autoscale"] = None if p.autoscale is None else str(p.autoscale)
        out[f"{base}.shutdown_grace"] = format_duration(timedelta(seconds=p.shutdown_grace_seconds))
    for key, value in unit.variables:
        out[f"variables.{key}"] = value
    for v in unit.volumes:
        out[f"volumes.{v.name}.mount"] = v.mount
        out[f"volumes.{v.name}.size"] = v.size
        out[f"volumes.{v.name}.accept_downtime"] = v.accept_downtime
    placement = unit.kubernetes
    out["kubernetes.service_account"] = placement.service_account
    out["kubernetes.node_selector"] = _pairs(placement.node_selector)
    out["kubernetes.tolerations"] = [str(t) for t in placement.tolerations] or None
    out["kubernetes.annotations"] = _pairs(placement.annotations)
    out["kubernetes.labels"] = _pairs(placement.labels)
    out.update(_platform(unit.platform, routed=any(p.domains for p in unit.processes)))
    return out


def document_digest(body: str) -> str:
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()[:12]


def _pairs(pairs: tuple[tuple[str, str], ...]) -> Value:
    return [f"{k}={v}" for k, v in pairs] or None


def _postgres(unit: DatabaseSpec) -> dict[str, Value]:
    """How a postgres database runs in its environment, and its instances where it can have
    more than one: each change to them is an ordinary line."""
    if unit.engine is not DatabaseEngine.POSTGRES:
        return {}
    out: dict[str, Value] = {"postgres": unit.platform.postgres.value}
    if unit.cloudnative:
        out["instances"] = unit.instances
    return out


def _platform(platform: Platform, *, routed: bool) -> dict[str, Value]:
    """The environment's settings as each unit's pods see them: a change to one is a line of
    every unit it reshapes (its next release renders it); route settings only where a process
    has domains."""
    out: dict[str, Value] = {
        "pod_security": platform.pod_security.value,
        "image_pull_secrets": list(platform.image_pull_secrets) or None,
    }
    if routed:
        out["gateway"] = platform.gateway
        out["ingress_class"] = platform.ingress_class
        out["tls_issuer"] = platform.tls_issuer
    return out


def environment_values(spec: EnvironmentSpec) -> dict[str, Value]:
    """An environment's settings as lines show them (``environment.soak`` -> ``"30m"``)."""
    values: dict[str, Value] = {
        "protected": spec.protected,
        "promote_from": spec.promote_from,
        "soak": format_duration(timedelta(seconds=spec.soak_seconds)),
        "self_heal": spec.self_heal,
    }
    return {f"environment.{key}": values[key] for key in ENVIRONMENT_FIELDS}


def environment_lines(
    recorded: EnvironmentSpec | None, new: EnvironmentSpec, live: EnvironmentSpec | None
) -> list[PlannedLine]:
    """The settings of the environment itself that the new file changes (behaviour.md
    "Environment settings are change-set lines"), against the recorded file's, or against
    the live ones before any file was recorded."""
    baseline = recorded or live
    if baseline is None:
        return []
    old, now = environment_values(baseline), environment_values(new)
    current = environment_values(live) if live is not None else {}
    return [
        PlannedLine(
            new.name, ServiceKind.ENVIRONMENT, LineKind.ENVIRONMENT, f, current.get(f), now[f]
        )
        for f in now
        if old[f] != now[f]
    ]


def line_kind(field: str, after: Value) -> LineKind:
    if field.startswith("variables."):
        return LineKind.VARIABLE_SET if after is not None else LineKind.VARIABLE_DELETE
    last = field.rsplit(".", 1)[-1]
    if last == "replicas":
        return LineKind.REPLICAS
    if last == "instance_size":
        return LineKind.INSTANCE_SIZE
    if (field.startswith("volumes.") and last == "size") or field == "volume_size":
        return LineKind.VOLUME_SIZE
    if field == "auto_deploy":
        return LineKind.AUTO_DEPLOY
    if field == "automatic_failover":
        return LineKind.FAILOVER
    return LineKind.RELEASE


def headline(unit: Unit) -> str:
    """The one value a first-deploy or removal line shows."""
    if isinstance(unit, ServiceSpec):
        return unit.image
    if isinstance(unit, ManifestsSpec):
        return unit.headline
    return f"{unit.engine} {unit.version}"


def plan(
    recorded: EnvironmentConfig | None,
    new: EnvironmentConfig,
    live: Mapping[str, Mapping[str, Value]],
    live_headline: Mapping[str, str],
    live_resolved: Mapping[str, Mapping[str, str]] | None = None,
    *,
    namespace: str = "",
    live_environment: EnvironmentSpec | None = None,
) -> list[PlannedLine]:
    """The lines to stage for one environment, in a stable order (unit order, then field).

    ``live`` holds each deployed unit's flattened live configuration; ``live_headline`` its
    live image (or engine and version) for removal lines; ``live_resolved`` each deployed
    service's variables as its active release resolved them (``variables.X`` -> the value
    shown), and ``namespace`` the environment's, for the addresses ``host()`` stands for.
    ``live_environment`` is the environment's own settings now: changed ones come first.
    """
    lines = environment_lines(
        recorded.environment if recorded is not None else None, new.environment, live_environment
    )
    old_units = {u.name: u for u in recorded.units()} if recorded is not None else {}
    for unit in new.units():
        kind = unit_kind(unit)
        previous = old_units.get(unit.name)
        if previous is None or type(previous) is not type(unit):
            before_head = live_headline.get(unit.name)
            lines.append(
                PlannedLine(
                    unit.name,
                    kind,
                    LineKind.FIRST_DEPLOY,
                    FIRST_DEPLOY_FIELD,
                    before_head,
                    headline(unit),
                )
            )
            continue
        old, now = flatten(previous), flatten(unit)
        current = live.get(unit.name, {})
        found = [
            PlannedLine(
                unit.name,
                kind,
                line_kind(field, now.get(field)),
                field,
                current.get(field),
                now.get(field),
            )
            for field in old.keys() | now.keys()
            if old.get(field) != now.get(field)
        ]
        if isinstance(unit, ServiceSpec) and isinstance(previous, ServiceSpec):
            assert recorded is not None
            shown = (live_resolved or {}).get(unit.name, {})
            found += _resolved_lines(recorded, new, previous, unit, shown, namespace)
        lines += sorted(found, key=lambda line: _field_order(line.field))
    for name, unit in old_units.items():
        if new.unit(name) is None:
            lines.append(
                PlannedLine(
                    name,
                    unit_kind(unit),
                    LineKind.REMOVAL,
                    REMOVAL_FIELD,
                    live_headline.get(name, headline(unit)),
                    None,
                )
            )
    return lines


def secret_field(name: str) -> str:
    return f"secret.{name}"


def secret_lines(name: str, services: Iterable[str]) -> list[PlannedLine]:
    """A new value of the server-side secret ``name``: one line per service that reads it.
    Values are never part of a line (``before`` and ``after`` stay empty)."""
    return [
        PlannedLine(s, ServiceKind.SERVICE, LineKind.SECRET, secret_field(name), None, None)
        for s in services
    ]


def _resolved_lines(
    recorded: EnvironmentConfig,
    new: EnvironmentConfig,
    previous: ServiceSpec,
    service: ServiceSpec,
    live: Mapping[str, str],
    namespace: str,
) -> list[PlannedLine]:
    """Variables written the same in both files that resolve differently now."""
    written = previous.variable_map
    before, after = resolved.of_file(recorded, previous), resolved.of_file(new, service)
    out = []
    for key, raw in service.variables:
        if written.get(key) != raw or before.get(key) == after[key]:
            continue  # a text change is a line of its own; an equal value is none
        field = f"variables.{key}"
        out.append(
            PlannedLine(
                service.name,
                ServiceKind.SERVICE,
                LineKind.VARIABLE_SET,
                field,
                live.get(field),
                after[key].shown(namespace),
                resolved.via(recorded, new, raw),
            )
        )
    return out


def _field_order(field: str) -> tuple[int, str]:
    # The image first: it is what a reviewer looks for; then everything else by name.
    return (0 if field == "image" else 1, field)
