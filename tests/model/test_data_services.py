"""Redis as a database engine (behaviour.md "Data services (1.2)"): what it reads into, what
it exports to references, and its validation errors at the key written, with a hint."""

from __future__ import annotations

import pytest

from reconciler.model import graph, validation
from reconciler.model.engines import DatabaseEngine
from tests.model import samples


def _file(database: str, variables: str = "") -> str:
    return f"""\
[environments.staging]

[databases.cache]
{database}
[services.api]
image = "registry.example.com/shop/api@{samples.DIGEST}"

[services.api.processes.web]
type = "http"
port = 8000

[services.api.variables]
{variables}"""


def _problems(text: str) -> list[tuple[str, str, str]]:
    _, problems = validation.check(text, "nebula.toml")
    return [(f"{p.location.line}:{p.location.col}", p.message, p.hint) for p in problems]


def test_a_redis_database_reads_with_its_defaults_and_orders_before_its_readers() -> None:
    text = _file('engine = "redis"', 'BROKER = "${{ cache.REDIS_URL }}"')
    config = samples.valid(text).environment("staging")
    assert config is not None
    cache = config.database("cache")
    assert cache is not None
    assert (cache.engine, cache.version, cache.port) == (DatabaseEngine.REDIS, "7", 6379)
    assert graph.apply_order(config) == ["cache", "api"]
    assert graph.dependencies(config, "api") == ("cache",)


def test_postgres_stays_the_default_engine() -> None:
    config = samples.valid(_file("")).environment("staging")
    assert config is not None
    db = config.database("cache")
    assert db is not None
    assert (db.engine, db.version, db.port) == (DatabaseEngine.POSTGRES, "16", 5432)


@pytest.mark.parametrize(
    ("database", "variables", "expected"),
    [
        (
            'engine = "mysql"',
            "",
            (
                "4:10",
                "databases.cache.engine is 'mysql', which is not one of: postgres, redis",
                "use one of: postgres, redis",
            ),
        ),
        (
            'engine = "redis"\nautomatic_failover = true',
            "",
            (
                "5:22",
                "automatic_failover applies to postgres databases only, not redis",
                "remove automatic_failover (a redis database runs one replica)",
            ),
        ),
        (
            'engine = "redis"\nversion = "latest"',
            "",
            ("5:11", "version 'latest' is not a Redis version", 'e.g. version = "7"'),
        ),
        (
            'engine = "redis"',
            'URL = "${{ cache.DATABASE_URL }}"',
            (
                "13:7",
                "${{ cache.DATABASE_URL }}: database 'cache' exports no 'DATABASE_URL'",
                "a redis database exports: REDIS_URL, REDIS_HOST, REDIS_PORT, REDIS_PASSWORD",
            ),
        ),
    ],
    ids=["unknown engine", "failover on redis", "not a version", "a postgres key"],
)
def test_redis_mistakes_are_one_error_each(
    database: str, variables: str, expected: tuple[str, str, str]
) -> None:
    assert _problems(_file(database, variables)) == [expected]
