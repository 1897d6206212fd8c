"""Per-environment overrides merged into a unit's base table, keeping where each key was written."""

from __future__ import annotations

from typing import Any

from reconciler.model.positions import Path
from reconciler.model.problems import Problems
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
)
DATABASE_OVERRIDE_KEYS = ("engine", "version", "instance_size", "volume_size", "automatic_failover")


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
