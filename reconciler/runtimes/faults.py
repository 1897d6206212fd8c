"""``NEBULA_SIMULATED_FAULTS``: a TOML file of faults the simulated cluster injects, by image.

[images."reg/api@sha256:..."]
fail = "image-pull"        # or capacity, readiness, release-command, route-activation
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from reconciler.core.states import Blocker
from reconciler.errors import ConfigurationError

FAULTS = (
    Blocker.IMAGE_PULL,
    Blocker.CAPACITY,
    Blocker.READINESS,
    Blocker.RELEASE_COMMAND,
    Blocker.ROUTE_ACTIVATION,
)


def load(path: str) -> dict[str, Blocker]:
    if not path:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"NEBULA_SIMULATED_FAULTS: {path}: no such file") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"NEBULA_SIMULATED_FAULTS: {path}: {exc}") from exc
    images = data.get("images", {})
    if not isinstance(images, dict) or set(data) - {"images"}:
        raise ConfigurationError(
            f'NEBULA_SIMULATED_FAULTS: {path}: expected only [images."<image>"] tables',
            hint='e.g. [images."reg/api@sha256:..."] fail = "image-pull"',
        )
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
