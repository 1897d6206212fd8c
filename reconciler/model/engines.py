"""Database engines and how an environment runs postgres: ports, default versions, and the
keys each exports to ``${{ db.KEY }}`` references (nebula-toml.md "Databases" and "Version 1.2
additions")."""

from __future__ import annotations

from enum import StrEnum

DATABASE_PORT = 5432
REDIS_PORT = 6379


class DatabaseEngine(StrEnum):
    POSTGRES = "postgres"
    REDIS = "redis"

    @property
    def port(self) -> int:
        return REDIS_PORT if self is DatabaseEngine.REDIS else DATABASE_PORT

    @property
    def default_version(self) -> str:
        return "7" if self is DatabaseEngine.REDIS else "16"

    @property
    def keys(self) -> tuple[str, ...]:
        """What ``${{ db.KEY }}`` may name for a database of this engine."""
        return REDIS_KEYS if self is DatabaseEngine.REDIS else POSTGRES_KEYS


POSTGRES_KEYS = ("DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE")
# Where a CloudNativePG Cluster's exports come from: keys of the operator's ``<db>-app`` Secret.
CLOUDNATIVE_SECRET_KEYS = {
    "DATABASE_URL": "uri",
    "PGHOST": "host",
    "PGPORT": "port",
    "PGUSER": "user",
    "PGPASSWORD": "password",
    "PGDATABASE": "dbname",
}
REDIS_KEYS = ("REDIS_URL", "REDIS_HOST", "REDIS_PORT", "REDIS_PASSWORD")
DATABASE_KEYS = POSTGRES_KEYS  # (a postgres database's: what 1.1 files name)
# The credentials among the exports: they render as secretKeyRef only, never as a value.
DATABASE_CREDENTIAL_KEYS = frozenset(
    {"DATABASE_URL", "PGUSER", "PGPASSWORD", "REDIS_URL", "REDIS_PASSWORD"}
)


class PostgresRunner(StrEnum):
    """How an environment runs its postgres databases (nebula-toml.md ``postgres``)."""

    STATEFULSET = "statefulset"  # one pod, Nebula's own StatefulSet
    CLOUDNATIVE_PG = "cloudnative-pg"  # a CloudNativePG Cluster: standbys and failover


MAX_INSTANCES = 9  # a CloudNativePG Cluster's instances: 1-9
