"""The ``[environments.NAME]`` tables: protection, the promotion gate, self-heal.

``promote_from`` names the environment a new image must first have stayed healthy in, for
``soak`` (a duration: ``90s``, ``30m``, ``2h``, ``1d``). Checked across environments: an
unknown or the same environment, a chain of ``promote_from`` that comes back to itself, and
``soak`` without ``promote_from`` are errors at the key the user wrote.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace
from typing import Any

from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError
from reconciler.model import platforms, rawmanifests
from reconciler.model.problems import Code, Problems, dotted
from reconciler.model.reading import Reader
from reconciler.model.specs import EnvironmentSpec

ENVIRONMENT_KEYS = (
    "protected",
    "promote_from",
    "soak",
    "self_heal",
    *platforms.PLATFORM_KEYS,
    "manifests",
)
DURATION = re.compile(r"^(?:[0-9]+[smhd])+$")
DURATION_HINT = "write a whole number and a unit: 90s, 30m, 2h or 1d"


def read_environment(problems: Problems, name: str, table: dict[str, Any]) -> EnvironmentSpec:
    reader = Reader(problems, table, ("environments", name), ENVIRONMENT_KEYS)
    soak = reader.string("soak", None, example='"30m"')
    seconds = 0
    if soak is not None:
        if DURATION.match(soak):
            try:
                seconds = int(parse_duration(soak).total_seconds())
            except ConfigurationError:
                reader.error(
                    "soak",
                    Code.MALFORMED_DURATION,
                    f"{dotted(('environments', name, 'soak'))} is '{soak[:40]}', longer than 10 "
                    "years (the longest duration Nebula takes)",
                    "give a shorter one, e.g. 30m or 1d",
                )
        else:
            reader.error(
                "soak",
                Code.MALFORMED_DURATION,
                f"{dotted(('environments', name, 'soak'))} is '{soak}', which is not a duration",
                DURATION_HINT,
            )
    return EnvironmentSpec(
        name,
        protected=reader.boolean("protected", False),
        promote_from=reader.string("promote_from", None, example='"staging"'),
        soak_seconds=seconds,
        self_heal=reader.boolean("self_heal", False),
        platform=platforms.read_platform(reader),
        manifest_paths=rawmanifests.read_paths(reader),
    )


def check_gates(
    problems: Problems, environments: tuple[EnvironmentSpec, ...], tables: dict[str, Any]
) -> tuple[EnvironmentSpec, ...]:
    """Each ``promote_from`` names another declared environment, and no chain of them
    returns to where it started; ``soak`` needs ``promote_from``. Problems are reported, and
    a broken gate is dropped so nothing downstream follows it."""
    names = [e.name for e in environments]
    out = []
    for env in environments:
        where = ("environments", env.name, "promote_from")
        source = env.promote_from
        if source is not None and source == env.name:
            others = [n for n in names if n != env.name]
            problems.add(
                where,
                Code.SELF_PROMOTION,
                f"environment '{env.name}' cannot promote from itself",
                f'name the environment that proves an image first, e.g. promote_from = "{others[0]}"'
                if others
                else "declare the environment that proves an image first, e.g. "
                "[environments.staging]",
            )
            source = None
        elif source is not None and source not in names:
            close = difflib.get_close_matches(source, names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            problems.add(
                where,
                Code.UNKNOWN_ENVIRONMENT,
                f"promote_from names '{source}', which is not an environment of this file",
                f"{hint}environments: {', '.join(names)}",
            )
            source = None
        written = tables.get(env.name, {})
        if "soak" in written and "promote_from" not in written:  # (a bad one is named above)
            problems.add(
                ("environments", env.name, "soak"),
                Code.SOAK_WITHOUT_PROMOTE_FROM,
                f"environment '{env.name}' has a soak but no promote_from: there is nothing "
                "to soak in",
                'add promote_from = "<environment>" (where an image must stay healthy first), '
                "or remove soak",
            )
        out.append(
            replace(env, promote_from=source, soak_seconds=env.soak_seconds if source else 0)
        )
    cycle = _cycle({e.name: e.promote_from for e in out})
    if cycle is not None:
        problems.add(
            ("environments", cycle[0], "promote_from"),
            Code.PROMOTION_CYCLE,
            f"promote_from cycle: {' -> '.join(cycle)}",
            "an environment cannot wait for itself: remove promote_from from one of them",
        )
        out = [replace(e, promote_from=None, soak_seconds=0) if e.name in cycle else e for e in out]
    return tuple(out)


def _cycle(sources: dict[str, str | None]) -> list[str] | None:
    """A chain of ``promote_from`` that returns to its start, from its alphabetically first
    member, e.g. ``['production', 'staging', 'production']``."""
    for start in sorted(sources):
        path = [start]
        while (nxt := sources.get(path[-1])) is not None:
            if nxt in path:
                loop = path[path.index(nxt) :]
                first = loop.index(min(loop))
                rotated = loop[first:] + loop[:first]
                return [*rotated, rotated[0]]
            path.append(nxt)
    return None
