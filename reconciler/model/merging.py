"""Per-environment overrides merged into a unit's base table, keeping where each key was written."""

from __future__ import annotations

import difflib
from typing import Any

from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems, dotted
from reconciler.model.reading import Locate, Reader, identity, not_a_table

OVERRIDE_KEYS = (
    "image",
    "release_command",
    "release_command_timeout",
    "auto_deploy",
    "accept_downtime",
    "processes",
    "variables",
    "volumes",
    "deploy",
    "kubernetes",
)
DATABASE_OVERRIDE_KEYS = (
    "engine",
    "version",
    "instance_size",
    "volume_size",
    "automatic_failover",
    "instances",
)


def merged(
    problems: Problems,
    kind: str,
    unit: str,
    table: dict[str, Any],
    env: str,
    allowed: tuple[str, ...],
) -> tuple[dict[str, Any], Locate]:
    """The unit's table with ``env``'s override merged in, and where each key came from."""
    base_path: Path = (kind, unit)
    overrides = table.get("environments")
    override = overrides.get(env) if isinstance(overrides, dict) else None
    base = {k: v for k, v in table.items() if k != "environments"}
    if override is None:
        return base, identity
    over_path: Path = (kind, unit, "environments", env)
    if not isinstance(override, dict):
        not_a_table(problems, over_path, override)
        return base, identity
    Reader(problems, override, over_path, allowed)  # unknown keys, reported at the override
    override = _known_processes(problems, unit, base, override, over_path)

    def locate(path: Path) -> Path:
        """Where ``path`` was written: the override for values it sets, else the base table."""
        rel = path[len(base_path) :]
        if path[: len(base_path)] != base_path:
            return path
        if _lookup(override, rel) is _MISSING:
            return path
        if isinstance(_lookup(override, rel), dict) and _lookup(base, rel) is not _MISSING:
            return path
        return (*over_path, *rel)

    return _deep_merge(base, {k: v for k, v in override.items() if k in allowed}), locate


_MISSING = object()


def _known_processes(
    problems: Problems, unit: str, base: dict[str, Any], override: dict[str, Any], at: Path
) -> dict[str, Any]:
    """An override that tunes a process the unit does not have (``processes.wbe.replicas``)
    is a misspelt name: said so, rather than "missing the required key 'type'" for a new
    process nobody meant to add. A process given its own ``type`` is a new one, and allowed."""
    processes = override.get("processes")
    declared = base.get("processes")
    if not isinstance(processes, dict) or not isinstance(declared, dict):
        return override
    unknown = [
        name
        for name, value in processes.items()
        if name not in declared and isinstance(value, dict) and "type" not in value
    ]
    for name in unknown:
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        problems.add(
            (*at, "processes", name),
            Code.UNKNOWN_KEY,
            f"[{dotted((*at, 'processes'))}] overrides the process '{name}', which {unit} does "
            "not have",
            f"{hint}its processes: {', '.join(declared)} (a new process needs its own type)",
            key=True,
        )
    if not unknown:
        return override
    kept = {k: v for k, v in processes.items() if k not in unknown}
    return {**override, "processes": kept}


def _lookup(table: dict[str, Any], rel: Path) -> Any:
    node: Any = table
    for part in rel:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
