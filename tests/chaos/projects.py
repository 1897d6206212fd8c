"""The projects the chaos run pushes: a database, an api reading it and a web front that
depends on the api, in staging and a protected production.

A project's file is a function of a few knobs (``Version``), so a push is "change one knob":
a new api image, a new web variable, a bigger database, or, now and then, an api image the
cluster cannot pull (the deployment fails and Slack is told) or a file that does not parse
(the project is blocked until the next push fixes it).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace

from fixtures import loading

ENVIRONMENTS = ("staging", "production")
UNITS = ("db", "api", "web")
SIZES = ("small", "medium", "large")


def image(name: str, tag: str) -> str:
    """A digest-pinned image of repository ``name``, one digest per ``tag``."""
    digest = hashlib.sha256(f"chaos/{name}:{tag}".encode()).hexdigest()
    return f"registry.example.com/chaos/{name}@sha256:{digest}"


# An api image no cluster can pull: the simulated cluster's faults file and the test kubelet
# are both told so.
BROKEN_API = image("api", "broken")


@dataclass(frozen=True)
class Version:
    api: int = 1
    web: int = 1
    db_size: int = 0
    broken_api: bool = False
    invalid: bool = False


def toml(name: str, version: Version) -> str:
    if version.invalid:
        return f'[project]\nname = "{name}"\n\n[services.api\nimage = "oops"\n'
    api_image = BROKEN_API if version.broken_api else image("api", str(version.api))
    return loading.project(
        "chaos",
        {
            'name = "Chaos"': f'name = "{name}"',
            'instance_size = "small"': f'instance_size = "{SIZES[version.db_size % len(SIZES)]}"',
            image("api", "1"): api_image,
            'BUILD = "1"': f'BUILD = "{version.web}"',
        },
    )


def next_version(current: Version, rng: random.Random) -> Version:
    """One push's change: mostly new api or web builds, sometimes a database resize, a broken
    image, or an invalid file. A broken or invalid version is always followed by a good one."""
    if current.invalid or current.broken_api:
        return replace(current, invalid=False, broken_api=False, api=current.api + 1)
    roll = rng.random()
    if roll < 0.04:
        return replace(current, invalid=True)
    if roll < 0.12:
        return replace(current, broken_api=True)
    if roll < 0.22:
        return replace(current, db_size=current.db_size + 1)
    if roll < 0.6:
        return replace(current, api=current.api + 1)
    return replace(current, web=current.web + 1)
