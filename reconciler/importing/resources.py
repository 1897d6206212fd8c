"""A Compose service's size and count: ``deploy.replicas`` / ``scale``, ``deploy.resources``
(and the older ``cpus``, ``mem_limit``, ``mem_reservation``), ``stop_grace_period``.

Nebula sets a CPU request and a memory request equal to its limit: the CPU taken is the
reservation (else the limit), the memory the limit (else the reservation); what that leaves
out is reported.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.importing import interpolation
from reconciler.importing.notes import Notes
from reconciler.importing.yamltree import Mapping, Node, text_of

_MEMORY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([bkmg]?)b?$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|ms|m|s|us|ns)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "ns": 1e-9}
DEPLOY_REPORTED = {
    "mode": "Nebula runs a number of replicas (global mode has no equivalent)",
    "restart_policy": "Kubernetes restarts long-running processes itself",
    "placement": "use [services.X.kubernetes] node_selector or tolerations",
    "update_config": "Nebula rolls out each release itself (stabilization_seconds)",
    "rollback_config": "roll back with nebula rollback",
    "labels": "use [services.X.kubernetes] labels or annotations",
    "endpoint_mode": "each service gets one stable in-cluster address",
}


def memory(text: str) -> str | None:
    """Compose's ``512M``, ``1.5g``, ``1gb`` or bytes -> ``512Mi``, ``1536Mi``, ``1Gi``."""
    match = _MEMORY.match(text.strip())
    if match is None:
        return None
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    for unit, factor in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{-(-size // 1024**2)}Mi" if size > 0 else None


def cpu(text: str) -> str | None:
    """Compose's ``0.5`` (cores) -> ``500m``; ``2`` -> ``2``."""
    try:
        cores = float(text)
    except ValueError:
        return None
    millis = round(cores * 1000)
    if millis <= 0:
        return None
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def seconds(text: str) -> int | None:
    """Compose's duration (``10s``, ``1m30s``, ``1.5s``) in whole seconds, rounded up."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    total = sum(float(n) * _SECONDS[u] for n, u in parts)
    return int(-(-total // 1))


def read(service: Mapping, where: str, notes: Notes, table: dict[str, Any]) -> None:
    """The replicas, cpu, memory and shutdown grace of one process, set in ``table``."""
    cpus: dict[str, tuple[str, Node]] = {}
    memories: dict[str, tuple[str, Node]] = {}
    for key, kind, into in (
        ("cpus", "limit", cpus), ("mem_limit", "limit", memories),
        ("mem_reservation", "reservation", memories),
    ):  # fmt: skip
        if (entry := service.get(key)) is not None and (text := _text(entry.value)) is not None:
            into[kind] = (text, entry.value)
    for key in ("scale",):
        if (entry := service.get(key)) is not None:
            _replicas(entry.value, f"{where}.{key}", notes, table)
    deploy = service.value("deploy")
    if isinstance(deploy, Mapping):
        _deploy(deploy, f"{where}.deploy", notes, table, cpus, memories)
    _pick(cpus, "cpu", cpu, where, notes, table, prefer="reservation")
    _pick(memories, "memory", memory, where, notes, table, prefer="limit")
    if (entry := service.get("stop_grace_period")) is not None:
        grace = seconds(_text(entry.value) or "")
        if grace is None:
            notes.note(entry.value.at, f"{where}.stop_grace_period is not a duration Nebula "
                       "reads", 'set shutdown_grace = "30s" on the process')  # fmt: skip
        else:
            table["shutdown_grace"] = f"{grace}s"


def _text(node: Node) -> str | None:
    text = text_of(node)
    return interpolation.expand(text).text if text is not None else None


def _replicas(node: Node, where: str, notes: Notes, table: dict[str, Any]) -> None:
    text = _text(node) or ""
    if text.isdigit() and int(text) <= 1000:
        table["replicas"] = int(text)
    else:
        notes.note(node.at, f"{where} '{text}' is not a number of replicas",
                   "set replicas on the process")  # fmt: skip


def _deploy(
    deploy: Mapping,
    where: str,
    notes: Notes,
    table: dict[str, Any],
    cpus: dict[str, tuple[str, Node]],
    memories: dict[str, tuple[str, Node]],
) -> None:
    for entry in deploy:
        if entry.key == "replicas":
            _replicas(entry.value, f"{where}.replicas", notes, table)
        elif entry.key == "resources" and isinstance(entry.value, Mapping):
            for kind_entry in entry.value:
                kind = kind_entry.key.removesuffix("s")  # limits, reservations
                if kind not in ("limit", "reservation") or not isinstance(
                    kind_entry.value, Mapping
                ):
                    notes.note(kind_entry.key_at, f"{where}.resources.{kind_entry.key} has no "
                               "equivalent", "remove it")  # fmt: skip
                    continue
                for item in kind_entry.value:
                    text = _text(item.value)
                    if item.key == "cpus" and text is not None:
                        cpus[kind] = (text, item.value)
                    elif item.key == "memory" and text is not None:
                        memories[kind] = (text, item.value)
                    else:
                        notes.note(item.key_at, f"{where}.resources.{kind_entry.key}.{item.key} "
                                   "has no equivalent", "Nebula sets cpu and memory only")  # fmt: skip
        elif entry.key.startswith("x-"):
            continue
        else:
            todo = DEPLOY_REPORTED.get(entry.key, "remove it")
            notes.note(entry.key_at, f"{where}.{entry.key} is not carried over", todo)


def _pick(
    given: dict[str, tuple[str, Node]],
    key: str,
    convert: Any,
    where: str,
    notes: Notes,
    table: dict[str, Any],
    *,
    prefer: str,
) -> None:
    if not given:
        return
    kind = prefer if prefer in given else next(iter(given))
    text, node = given[kind]
    value = convert(text)
    if value is None:
        notes.note(node.at, f"{where}: {key} '{text}' is not a quantity Nebula reads",
                   f'set {key} on the process, e.g. {key} = "500m"' if key == "cpu"
                   else f'set {key} on the process, e.g. {key} = "512Mi"')  # fmt: skip
        return
    table[key] = value
    for other, (other_text, other_node) in given.items():
        if other != kind and convert(other_text) != value:
            what = "a CPU request" if key == "cpu" else "memory request = limit"
            notes.note(other_node.at, f"{where}: the {key} {other} ({other_text}) is not "
                       f"carried over", f"Nebula sets {what}: {key} = \"{value}\" from the "
                       f"{kind}")  # fmt: skip
