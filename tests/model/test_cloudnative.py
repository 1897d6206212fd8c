"""Postgres on CloudNativePG (nebula-toml.md ``postgres``, ``instances``; behaviour.md "Data
services (1.2)"): what an environment's ``postgres`` makes of a database, and every setting
that cannot be honoured refused at the key written, naming the environment, with a hint."""

from __future__ import annotations

import pytest

from reconciler.core import planning
from reconciler.model import validation
from reconciler.model.engines import PostgresRunner
from tests.model import samples


def _file(production: str = "", database: str = "", override: str = "") -> str:
    return f"""\
[environments.staging]

[environments.production]
{production}

[databases.db]
{database}

[databases.db.environments.production]
{override}

[services.api]
image = "registry.example.com/shop/api@{samples.DIGEST}"

[services.api.processes.web]
type = "http"
port = 8000
"""


CNPG = 'postgres = "cloudnative-pg"'


def _problems(text: str) -> list[tuple[str, str, str]]:
    _, problems = validation.check(text, "nebula.toml")
    return [(f"{p.location.line}:{p.location.col}", p.message, p.hint) for p in problems]


def test_failover_where_the_environment_runs_cloudnative_pg_defaults_to_three_instances() -> None:
    text = _file(CNPG, override="automatic_failover = true")
    project = samples.valid(text)
    staging = project.environment("staging")
    production = project.environment("production")
    assert staging is not None and production is not None
    db, ha = staging.database("db"), production.database("db")
    assert db is not None and ha is not None
    assert (db.cloudnative, db.instances, db.automatic_failover) == (False, 1, False)
    assert (ha.cloudnative, ha.instances, ha.automatic_failover) == (True, 3, True)
    assert ha.platform.postgres is PostgresRunner.CLOUDNATIVE_PG


def test_instances_may_be_set_and_change_as_one_line() -> None:
    before = samples.valid(_file(CNPG, override="instances = 2")).environment("production")
    after = samples.valid(_file(CNPG, override="instances = 5")).environment("production")
    assert before is not None and after is not None
    db = before.database("db")
    assert db is not None
    live = {"db": planning.flatten(db)}
    lines = planning.plan(before, after, live, {}, {}, namespace="shop-production")
    assert [(line.service, line.field, line.before, line.after) for line in lines] == [
        ("db", "instances", 2, 5)
    ]


def test_cloudnative_pg_without_failover_runs_one_instance() -> None:
    production = samples.valid(_file(CNPG)).environment("production")
    assert production is not None
    db = production.database("db")
    assert db is not None
    assert (db.cloudnative, db.instances) == (True, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _file(database="automatic_failover = true"),
            [
                (
                    "7:22",
                    "automatic_failover = true cannot be honoured in environment 'staging': its "
                    "postgres runs as one StatefulSet pod, with no standby to fail over to",
                    'add postgres = "cloudnative-pg" to [environments.staging], or turn '
                    "automatic_failover on only in the environments that have it "
                    "([databases.db.environments.<name>])",
                ),
                (
                    "7:22",
                    "automatic_failover = true cannot be honoured in environment 'production': "
                    "its postgres runs as one StatefulSet pod, with no standby to fail over to",
                    'add postgres = "cloudnative-pg" to [environments.production], or turn '
                    "automatic_failover on only in the environments that have it "
                    "([databases.db.environments.<name>])",
                ),
            ],
        ),
        (
            _file(override="instances = 3"),
            [
                (
                    "10:13",
                    'instances applies where postgres = "cloudnative-pg"; environment '
                    "'production' runs postgres as one StatefulSet pod",
                    'add postgres = "cloudnative-pg" to [environments.production], or set '
                    "instances only in the environments that have it",
                )
            ],
        ),
        (
            _file(CNPG, override="instances = 10"),
            [
                (
                    "10:13",
                    "databases.db.instances is 10; it must be between 1 and 9",
                    "set instances to a number between 1 and 9",
                )
            ],
        ),
        (
            _file(CNPG, override="automatic_failover = true\ninstances = 1"),
            [
                (
                    "11:13",
                    "automatic_failover = true needs a standby, but environment 'production' "
                    "has instances = 1",
                    "set instances to 2 or more (3 is the default with automatic_failover), or "
                    "turn automatic_failover off",
                )
            ],
        ),
        (
            _file('postgres = "patroni"'),
            [
                (
                    "4:12",
                    "environments.production.postgres is 'patroni', which is not one of: "
                    "statefulset, cloudnative-pg",
                    "use one of: statefulset, cloudnative-pg",
                )
            ],
        ),
        (
            _file(CNPG, database='engine = "redis"', override="instances = 3"),
            [
                (
                    "10:13",
                    "instances applies to postgres databases only, not redis",
                    "remove instances (a redis database runs one replica)",
                )
            ],
        ),
    ],
    ids=[
        "failover without the operator",
        "instances without the operator",
        "instances out of range",
        "failover with one instance",
        "unknown postgres",
        "instances on redis",
    ],
)
def test_settings_that_cannot_be_honoured_are_refused(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    assert _problems(text) == expected
