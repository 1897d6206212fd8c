"""``NEBULA_SIMULATED_FAULTS``: a TOML file of faults the simulated cluster injects.

[images."reg/api@sha256:..."]
fail = "image-pull"        # or capacity, readiness, release-command, route-activation

[environments."shop/production"]
cloudnative_pg = false     # the CloudNativePG operator is not on this environment's cluster
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.core.states import Blocker
from reconciler.errors import ConfigurationError

FAULTS = (
    Blocker.IMAGE_PULL,
    Blocker.CAPACITY,
    Blocker.READINESS,
    Blocker.RELEASE_COMMAND,
    Blocker.ROUTE_ACTIVATION,
)
ENVIRONMENT_KEYS = ("cloudnative_pg",)


@dataclass(frozen=True)
class Faults:
    images: dict[str, Blocker] = field(default_factory=dict)
    # "project/environment" whose cluster lacks the CloudNativePG operator
    without_cloudnative_pg: frozenset[str] = frozenset()


def load(path: str) -> Faults:
    if not path:
        return Faults()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"NEBULA_SIMULATED_FAULTS: {path}: no such file") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"NEBULA_SIMULATED_FAULTS: {path}: {exc}") from exc
    images = data.get("images", {})
    environments = data.get("environments", {})
    if (
        not isinstance(images, dict)
        or not isinstance(environments, dict)
        or set(data) - {"images", "environments"}
    ):
        raise ConfigurationError(
            f'NEBULA_SIMULATED_FAULTS: {path}: expected only [images."<image>"] and '
            '[environments."<project>/<environment>"] tables',
            hint='e.g. [images."reg/api@sha256:..."] fail = "image-pull"',
        )
    return Faults(_images(path, images), _without_operator(path, environments))


def _images(path: str, images: dict[str, Any]) -> dict[str, Blocker]:
    out: dict[str, Blocker] = {}
    allowed = ", ".join(f.value for f in FAULTS)
    for image, table in images.items():
        fail = table.get("fail") if isinstance(table, dict) else None
        if fail not in {f.value for f in FAULTS}:
            raise ConfigurationError(
                f'NEBULA_SIMULATED_FAULTS: {path}: images."{image}".fail is {fail!r}',
                hint=f"use one of: {allowed}",
            )
        out[image] = Blocker(fail)
    return out


def _without_operator(path: str, environments: dict[str, Any]) -> frozenset[str]:
    out = set()
    for name, table in environments.items():
        where = f'NEBULA_SIMULATED_FAULTS: {path}: environments."{name}"'
        if "/" not in name:
            raise ConfigurationError(
                f"{where} is not written project/environment", hint='e.g. "shop/production"'
            )
        if not isinstance(table, dict) or set(table) - set(ENVIRONMENT_KEYS):
            raise ConfigurationError(
                f"{where} may only say cloudnative_pg = true or false",
                hint="cloudnative_pg = false: the CloudNativePG operator is not on its cluster",
            )
        present = table.get("cloudnative_pg", True)
        if not isinstance(present, bool):
            raise ConfigurationError(f"{where}.cloudnative_pg is {present!r}, not true or false")
        if not present:
            out.add(name)
    return frozenset(out)
