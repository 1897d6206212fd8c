"""Per-environment overrides merged into the effective configuration, and the defaults."""

from __future__ import annotations

import pytest

from reconciler.model.problems import Code
from reconciler.model.specs import InstanceSize, ProcessType
from tests.model import samples

BASE = (
    samples.ENVIRONMENTS
    + """
[databases.db]

[services.api]
image = "registry.example.com/shop/api@sha256:"""
    + "ab" * 32
    + """"
release_command = ["bin/migrate"]

[services.api.processes.web]
type = "http"
port = 8080
replicas = 2

[services.api.processes.jobs]
type = "worker"

[services.api.variables]
LOG_LEVEL = "info"
REGION = "eu"

[services.api.deploy]
depends_on = ["db"]
"""
)


def test_staging_without_override_is_the_base_table() -> None:
    api = samples.config(BASE, "staging").service("api")
    assert api is not None
    assert [(p.name, p.replicas) for p in api.processes] == [("web", 2), ("jobs", 1)]
    assert api.variable_map == {"LOG_LEVEL": "info", "REGION": "eu"}


def test_override_changes_only_the_keys_it_sets() -> None:
    text = (
        BASE
        + """
[services.api.environments.production]
image = "registry.example.com/shop/api@sha256:"""
        + "cd" * 32
        + """"
variables = { LOG_LEVEL = "warn", SENTRY = "on" }
processes.web.replicas = 6
processes.jobs.instance_size = "large"
"""
    )
    staging = samples.config(text, "staging").service("api")
    production = samples.config(text, "production").service("api")
    assert staging is not None and production is not None
    assert staging.image.endswith("ab" * 32)
    assert production.image.endswith("cd" * 32)
    assert production.variable_map == {"LOG_LEVEL": "warn", "REGION": "eu", "SENTRY": "on"}
    web, jobs = production.processes
    assert (web.type, web.port, web.replicas, web.instance_size) == (
        ProcessType.HTTP,
        8080,
        6,
        InstanceSize.SMALL,
    )
    assert (jobs.replicas, jobs.instance_size) == (1, InstanceSize.LARGE)
    assert production.release_command == ("bin/migrate",)
    assert production.depends_on == ("db",)
    assert [(p.replicas, p.instance_size) for p in staging.processes] == [
        (2, InstanceSize.SMALL),
        (1, InstanceSize.SMALL),
    ]


def test_override_replaces_arrays_instead_of_appending() -> None:
    text = (
        BASE
        + """
[services.api.environments.production]
release_command = ["bin/migrate", "--check"]
deploy.depends_on = []
"""
    )
    production = samples.config(text, "production").service("api")
    assert production is not None
    assert production.release_command == ("bin/migrate", "--check")
    assert production.depends_on == ()


def test_override_may_add_a_process_for_one_environment() -> None:
    text = (
        BASE
        + """
[services.api.environments.production.processes.cleanup]
type = "cron"
schedule = "*/15 * * * *"
"""
    )
    staging = samples.config(text, "staging").service("api")
    production = samples.config(text, "production").service("api")
    assert staging is not None and production is not None
    assert [p.name for p in staging.processes] == ["web", "jobs"]
    assert [p.name for p in production.processes] == ["web", "jobs", "cleanup"]


def test_database_override() -> None:
    text = (
        BASE.replace(
            "[environments.production]\n",
            '[environments.production]\npostgres = "cloudnative-pg"\n',
        )
        + """
[databases.db.environments.production]
instance_size = "xlarge"
volume_size = "200Gi"
automatic_failover = true
"""
    )
    staging = samples.config(text, "staging").database("db")
    production = samples.config(text, "production").database("db")
    assert staging is not None and production is not None
    assert (staging.instance_size, staging.volume_size, staging.automatic_failover) == (
        InstanceSize.SMALL,
        "10Gi",
        False,
    )
    assert (production.instance_size, production.volume_size, production.automatic_failover) == (
        InstanceSize.XLARGE,
        "200Gi",
        True,
    )
    assert (staging.instances, production.instances) == (1, 3)


# -- where override errors are reported ----------------------------------------------------------


def test_error_in_an_override_points_at_the_override_line() -> None:
    text = BASE + '\n[services.api.environments.production]\nprocesses.web.replicas = "many"\n'
    line = text.splitlines().index('processes.web.replicas = "many"') + 1
    assert samples.messages(text) == [
        f"{line}:26: services.api.processes.web.replicas must be an integer, not a string"
    ]


def test_unknown_key_in_an_override_points_at_the_override_line() -> None:
    text = BASE + "\n[services.api.environments.production]\nreplicas = 3\n"
    line = text.splitlines().index("replicas = 3") + 1
    (problem,) = samples.problems(text)
    assert (problem.code, problem.location.line, problem.location.col) == (
        Code.UNKNOWN_KEY,
        line,
        1,
    )
    assert problem.message == "unknown key 'replicas' in [services.api.environments.production]"


def test_unknown_nested_key_in_an_override_points_at_the_override_line() -> None:
    text = BASE + "\n[services.api.environments.production]\nprocesses.web.replica = 3\n"
    line = text.splitlines().index("processes.web.replica = 3") + 1
    assert samples.messages(text) == [
        f"{line}:15: unknown key 'replica' in [services.api.processes.web]"
    ]


def test_an_error_in_the_base_table_is_reported_once_not_per_environment() -> None:
    text = BASE.replace("replicas = 2", "replicas = -2")
    line = text.splitlines().index("replicas = -2") + 1
    assert samples.messages(text) == [
        f"{line}:12: services.api.processes.web.replicas is -2; it must be between 0 and 1000"
    ]


def test_override_that_is_not_a_table() -> None:
    text = BASE.replace("release_command =", "environments.production = 3\nrelease_command =")
    line = text.splitlines().index("environments.production = 3") + 1
    assert samples.messages(text) == [
        f"{line}:27: services.api.environments.production must be a table, not an integer"
    ]


@pytest.mark.parametrize(
    ("table", "value"), [("services.api", "3"), ("databases.db", '"production"')]
)
def test_environments_key_that_is_not_a_table(table: str, value: str) -> None:
    header = f"[{table}]\n"
    text = BASE.replace(header, f"{header}environments = {value}\n", 1)
    line = text.splitlines().index(f"environments = {value}") + 1
    assert samples.messages(text) == [
        f"{line}:16: {table}.environments must be a table, not {'an integer' if value == '3' else 'a string'}"
    ]


def test_override_for_an_unknown_environment_is_an_error_at_its_name() -> None:
    text = BASE + "\n[services.api.environments.prod]\nprocesses.web.replicas = 3\n"
    line = text.splitlines().index("[services.api.environments.prod]") + 1
    (problem,) = samples.problems(text)
    assert samples.shown(problem) == (
        f"{line}:28: override for unknown environment 'prod' in services.api"
    )
    assert problem.hint == "declare it with [environments.prod] or use one of: staging, production"


# -- defaults --------------------------------------------------------------------------------------


def test_defaults() -> None:
    text = samples.ENVIRONMENTS + "\n[databases.db]\n" + samples.service("api")
    config = samples.config(text, "staging")
    api = config.service("api")
    db = config.database("db")
    assert api is not None and db is not None
    (web,) = api.processes
    assert (web.replicas, web.readiness_path, web.stabilization_seconds) == (1, "/", 10)
    assert (web.instance_size, web.primary, web.command, web.schedule) == (
        InstanceSize.SMALL,
        True,
        None,
        None,
    )
    assert (api.release_command, api.release_command_timeout, api.auto_deploy) == (None, 600, True)
    assert (api.variables, api.volumes, api.depends_on) == ((), (), ())
    assert (db.engine, db.version, db.instance_size, db.volume_size, db.automatic_failover) == (
        "postgres",
        "16",
        InstanceSize.SMALL,
        "10Gi",
        False,
    )


def _processes(*tables: tuple[str, str]) -> str:
    body = "".join(
        f'\n[services.api.processes.{name}]\ntype = "{kind}"\n'
        + ("port = 8080\n" if kind == "http" else "")
        + ('schedule = "0 3 * * *"\n' if kind == "cron" else "")
        for name, kind in tables
    )
    return (
        samples.ENVIRONMENTS
        + f'\n[services.api]\nimage = "registry.example.com/shop/api@{samples.DIGEST}"\n'
        + body
    )


@pytest.mark.parametrize(
    ("processes", "primary"),
    [
        ((("jobs", "worker"), ("web", "http")), "web"),  # the first http, not the first process
        ((("web", "http"), ("admin", "http")), "web"),
        ((("nightly", "cron"), ("jobs", "worker"), ("mail", "worker")), "jobs"),
        ((("nightly", "cron"), ("once", "job")), None),  # nothing long-running: no primary
    ],
)
def test_default_primary(processes: tuple[tuple[str, str], ...], primary: str | None) -> None:
    api = samples.config(_processes(*processes), "staging").service("api")
    assert api is not None
    assert [p.name for p in api.processes if p.primary] == ([primary] if primary else [])
    assert (api.primary_process.name if api.primary_process else None) == primary


def test_explicit_primary_wins_over_the_default() -> None:
    text = _processes(("web", "http"), ("jobs", "worker")) + "primary = true\n"
    api = samples.config(text, "staging").service("api")
    assert api is not None
    assert [p.name for p in api.processes if p.primary] == ["jobs"]
    assert api.stable_port is None  # the primary is a worker without a port


def test_an_override_of_a_process_the_service_does_not_have_names_the_misspelling() -> None:
    text = BASE + "\n[services.api.environments.production]\nprocesses.wbe.replicas = 4\n"
    (problem,) = samples.problems(text)
    assert samples.shown(problem) == (
        "28:11: [services.api.environments.production.processes] overrides the "
        "process 'wbe', which api does not have"
    )
    assert (
        problem.hint
        == "did you mean 'web'? its processes: web, jobs (a new process needs its own type)"
    )
    assert problem.code is Code.UNKNOWN_KEY


def test_an_override_may_add_a_process_with_its_own_type() -> None:
    text = BASE + '\n[services.api.environments.production]\nprocesses.extra.type = "worker"\n'
    production = samples.config(text, "production").service("api")
    staging = samples.config(text, "staging").service("api")
    assert production is not None and staging is not None
    assert [p.name for p in production.processes] == ["web", "jobs", "extra"]
    assert [p.name for p in staging.processes] == ["web", "jobs"]


def test_environments_all_misnamed_are_errors_without_a_no_environments_warning() -> None:
    assert samples.messages("[environments.Prod_1]\n") == [
        "1:15: invalid environment name: 'Prod_1' is not a valid environment name"
    ]
