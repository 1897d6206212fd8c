"""A ``[databases.NAME]`` table, merged with its environment's overrides, as a ``DatabaseSpec``.

The engine (postgres or redis) decides the port, the default version and the exports; the
environment's ``postgres`` decides whether a postgres database runs as Nebula's one-pod
StatefulSet or as a CloudNativePG ``Cluster``, and so whether ``automatic_failover`` and
``instances`` can be honoured at all.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.model.engines import MAX_INSTANCES, DatabaseEngine, PostgresRunner
from reconciler.model.merging import DATABASE_OVERRIDE_KEYS, merged
from reconciler.model.problems import Code, Problems
from reconciler.model.reading import Reader
from reconciler.model.specs import DEFAULT_PLATFORM, DatabaseSpec, InstanceSize, Platform

DATABASE_TABLE_KEYS = (*DATABASE_OVERRIDE_KEYS, "environments")
ENGINES = tuple(e.value for e in DatabaseEngine)


def read_database(
    problems: Problems,
    name: str,
    table: dict[str, Any],
    env: str,
    platform: Platform = DEFAULT_PLATFORM,
) -> DatabaseSpec:
    table_merged, locate = merged(problems, "databases", name, table, env, DATABASE_OVERRIDE_KEYS)
    reader = Reader(problems, table_merged, ("databases", name), DATABASE_TABLE_KEYS, locate=locate)
    engine = DatabaseEngine(
        reader.choice("engine", ENGINES, DatabaseEngine.POSTGRES, Code.INVALID_VALUE)
        or DatabaseEngine.POSTGRES
    )
    version = reader.string(
        "version", engine.default_version, example=f'"{engine.default_version}"'
    )
    version = version or engine.default_version
    if not re.fullmatch(r"\d+(\.\d+)?", version):
        label = "Redis" if engine is DatabaseEngine.REDIS else "PostgreSQL"
        reader.error(
            "version",
            Code.INVALID_VALUE,
            f"version '{version}' is not a {label} version",
            f'e.g. version = "{engine.default_version}"',
        )
    failover, instances = _replication(reader, engine, env, platform)
    return DatabaseSpec(
        name=name,
        engine=engine,
        version=version,
        instance_size=InstanceSize(
            reader.choice(
                "instance_size",
                [s.value for s in InstanceSize],
                "small",
                Code.UNKNOWN_INSTANCE_SIZE,
            )
            or "small"
        ),
        volume_size=reader.size("volume_size", "10Gi") or "10Gi",
        automatic_failover=failover,
        platform=platform,
        instances=instances,
    )


def _replication(
    reader: Reader, engine: DatabaseEngine, env: str, platform: Platform
) -> tuple[bool, int]:
    """``automatic_failover`` and ``instances``, each honoured or refused: only a CloudNativePG
    Cluster has standbys to fail over to (behaviour.md "Data services": Nebula never records a
    setting it does not carry out)."""
    failover = reader.boolean("automatic_failover", False)
    if engine is DatabaseEngine.REDIS:
        for key in ("automatic_failover", "instances"):
            if reader.has(key):
                reader.error(
                    key,
                    Code.INVALID_VALUE,
                    f"{key} applies to postgres databases only, not redis",
                    f"remove {key} (a redis database runs one replica)",
                )
        return False, 1
    cloudnative = platform.postgres is PostgresRunner.CLOUDNATIVE_PG
    where = f"[environments.{env}]"
    if failover and not cloudnative:
        reader.error(
            "automatic_failover",
            Code.INVALID_VALUE,
            f"automatic_failover = true cannot be honoured in environment '{env}': its postgres "
            "runs as one StatefulSet pod, with no standby to fail over to",
            f'add postgres = "cloudnative-pg" to {where}, or turn automatic_failover on only '
            "in the environments that have it "
            f"([databases.{reader.path[-1]}.environments.<name>])",
        )
        failover = False
    default = 3 if failover else 1
    instances = reader.integer("instances", default, minimum=1, maximum=MAX_INSTANCES)
    if reader.has("instances") and not cloudnative:
        reader.error(
            "instances",
            Code.INVALID_VALUE,
            f"instances applies where postgres = \"cloudnative-pg\"; environment '{env}' runs "
            "postgres as one StatefulSet pod",
            f'add postgres = "cloudnative-pg" to {where}, or set instances only in the '
            "environments that have it",
        )
        return failover, 1
    instances = instances or default
    if failover and instances < 2:
        reader.error(
            "instances",
            Code.INVALID_VALUE,
            f"automatic_failover = true needs a standby, but environment '{env}' has instances = 1",
            "set instances to 2 or more (3 is the default with automatic_failover), or turn "
            "automatic_failover off",
        )
        failover = False
    return failover, instances if cloudnative else 1
