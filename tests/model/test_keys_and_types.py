"""Unknown keys are errors in every table; every key rejects a value of the wrong type."""

from __future__ import annotations

import pytest

from fixtures import loading
from reconciler.model.problems import Code
from tests.model import samples

# A complete file (fixtures/projects/every-table); each "#> NAME" line is where a test may write
# into the table above it.
FULL = loading.project("every-table")
TABLES = [line[3:] for line in FULL.splitlines() if line.startswith("#> ")]


def write(table: str, line: str) -> tuple[str, int]:
    """FULL with ``line`` written into ``table``, and the line number it landed on."""
    lines = FULL.splitlines()
    index = lines.index(f"#> {table}")
    lines[index] = line
    return "\n".join(lines) + "\n", index + 1


def test_the_full_file_is_valid() -> None:
    samples.valid(FULL)


@pytest.mark.parametrize("table", TABLES)
def test_unknown_key_is_an_error_where_it_is_written(table: str) -> None:
    text, line = write(table, "colour = 3")
    (problem,) = samples.problems(text)
    assert problem.code is Code.UNKNOWN_KEY
    assert (problem.location.line, problem.location.col) == (line, 1)
    shown = "top level" if table == "top level" else table
    assert problem.message == f"unknown key 'colour' in [{shown}]"
    assert problem.hint.startswith("allowed here: ")


@pytest.mark.parametrize(
    ("table", "typo", "meant"),
    [
        ("top level", "service", "services"),
        ("services.api", "imge", "image"),
        ("services.api.processes.web", "readiness", "readiness_path"),
        ("services.api.volumes.data", "mountpoint", "mount"),
        ("services.api.deploy", "depends", "depends_on"),
        ("databases.db", "volumesize", "volume_size"),
        ("environments.staging", "protect", "protected"),
    ],
)
def test_unknown_key_suggests_the_closest_known_one(table: str, typo: str, meant: str) -> None:
    text, _ = write(table, f"{typo} = 1")
    (problem,) = samples.problems(text)
    assert problem.hint.startswith(f"did you mean '{meant}'? allowed here: ")


@pytest.mark.parametrize(
    ("table", "key", "value", "message"),
    [
        ("project", "title", '"x"', "unknown key 'title' in [project]"),
        ("environments.staging", "protected", '"yes"',
         "environments.staging.protected must be true or false, not a string"),
        ("services.api", "release_command", '"bin/migrate"',
         "services.api.release_command must be an array of strings, not a string"),
        ("services.api", "release_command_timeout", "1.5",
         "services.api.release_command_timeout must be an integer, not a float"),
        ("services.api", "auto_deploy", "1",
         "services.api.auto_deploy must be true or false, not an integer"),
        ("services.api.environments.production", "variables", "[]",
         "services.api.variables must be a table, not an array"),
        ("services.api.volumes.data", "mount", "5",
         "services.api.volumes.data.mount must be a string, not an integer"),
        ("services.api.processes.web", "command", '"gunicorn app:app"',
         "services.api.processes.web.command must be an array of strings, not a string"),
        ("services.api.processes.web", "stabilization_seconds", "1979-05-27",
         "services.api.processes.web.stabilization_seconds must be an integer, not a date/time"),
        ("services.api.processes.web", "primary", '"true"',
         "services.api.processes.web.primary must be true or false, not a string"),
        ("services.api.processes.web", "readiness_path", "{ path = '/' }",
         "services.api.processes.web.readiness_path must be a string, not a table"),
        ("services.api.volumes.data", "size", "5",
         "services.api.volumes.data.size must be a string, not an integer"),
        ("services.api.deploy", "depends_on", '"db"',
         "services.api.deploy.depends_on must be an array of strings, not a string"),
        ("databases.db", "automatic_failover", '"no"',
         "databases.db.automatic_failover must be true or false, not a string"),
        ("databases.db", "engine", "16",
         "databases.db.engine must be a string, not an integer"),
    ],
)  # fmt: skip
def test_wrong_type(table: str, key: str, value: str, message: str) -> None:
    lines = FULL.splitlines()
    header = lines.index(f"[{table}]")
    end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    existing = next((i for i in range(header, end) if lines[i].startswith(f"{key} = ")), None)
    if existing is None:
        text, line = write(table, f"{key} = {value}")
    else:
        lines[existing] = f"{key} = {value}"
        text, line = "\n".join(lines) + "\n", existing + 1
    (problem,) = samples.problems(text)
    col = 1 if problem.code is Code.UNKNOWN_KEY else len(f"{key} = ") + 1
    assert samples.shown(problem) == f"{line}:{col}: {message}"
    assert problem.hint


def test_wrong_type_inside_an_array_points_at_the_element() -> None:
    text = FULL.replace('depends_on = ["db"]', 'depends_on = ["db", 3]')
    line = text.splitlines().index('depends_on = ["db", 3]') + 1
    assert samples.messages(text) == [
        f"{line}:21: services.api.deploy.depends_on[1] must be a string, not an integer"
    ]


def test_quoted_number_hint_is_the_number() -> None:
    text = FULL.replace("port = 8080", 'port = "8080"')
    (problem,) = samples.problems(text)
    assert problem.hint == "write it as port = 8080"


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("services.api.processes.web = 3",
         "services.api.processes.web must be a table, not an integer"),
        ("services.api.volumes.data = []",
         "services.api.volumes.data must be a table, not an array"),
        ('services.cache = "redis"', "services.cache must be a table, not a string"),
    ],
)  # fmt: skip
def test_named_section_written_as_a_value(written: str, message: str) -> None:
    top = written.split(" = ")[0].rsplit(".", 1)
    text = f"""\
[environments.staging]

[services.api]
image = "registry.example.com/shop/api@{samples.DIGEST}"

[{top[0]}]
{top[1]} = {written.split(" = ")[1]}
"""
    (problem,) = samples.problems(text)
    assert samples.shown(problem) == f"7:{len(top[1]) + 4}: {message}"
    assert problem.hint == f"write it as a section: [{written.split(' = ')[0]}]"
