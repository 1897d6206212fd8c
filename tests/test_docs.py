"""The reference docs in docs/ keep up with the code: every key the validator accepts, every
command and option the parser builds, and every route the server serves is documented.

Each test names what is missing, so adding a key, a command, an option or a route without a
word for users fails here. The docs' conventions these tests rely on:

- docs/nebula-toml.md: a heading holding the table's name in backticks (``### `[services.
  SERVICE]` ``), then a table with one row per key, starting ``| `key` |``;
- docs/cli.md: a heading per command, ``### `nebula changeset apply ID` ``, whose section
  names each of its options in backticks (``| `--env ENV` |``);
- docs/http.md: each route as ``METHOD /path`` in backticks.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from types import ModuleType

import pytest

from reconciler.cli import running
from reconciler.model import (
    databases,
    engines,
    environments,
    merging,
    platforms,
    podsettings,
    specs,
    units,
    validation,
)
from reconciler.model.problems import Code
from reconciler.web.app import create_app
from tests.plugins.nebula import Nebula
from tests.security.world import app_routes

DOCS = Path(__file__).resolve().parent.parent / "docs"
TOML = DOCS / "nebula-toml.md"
CLI = DOCS / "cli.md"
HTTP = DOCS / "http.md"


def sections(path: Path) -> dict[str, str]:
    """Each heading of a Markdown file (its text, without the ``#``s) and what follows it up
    to the next heading; lines in code blocks are never headings."""
    found: dict[str, list[str]] = {}
    current: list[str] = found.setdefault("", [])
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            current = found.setdefault(line.lstrip("#").strip(), [])
            continue
        current.append(line)
    return {heading: "\n".join(lines) for heading, lines in found.items()}


# -- nebula.toml -------------------------------------------------------------------------

# The heading of each table in docs/nebula-toml.md, and the keys the validator accepts there.
TABLES: dict[str, tuple[str, ...]] = {
    "Top-level tables": validation.TOP_KEYS,
    "`[project]`": validation.PROJECT_KEYS,
    "`[kubernetes]`": validation.KUBERNETES_KEYS,
    "`[environments.ENV]`": environments.ENVIRONMENT_KEYS,
    "`[services.SERVICE]`": units.SERVICE_KEYS,
    "`[services.SERVICE.processes.PROCESS]`": units.PROCESS_KEYS,
    "`[services.SERVICE.processes.PROCESS.autoscale]`": podsettings.AUTOSCALE_KEYS,
    "`[services.SERVICE.volumes.VOLUME]`": units.VOLUME_KEYS,
    "`[services.SERVICE.deploy]`": units.DEPLOY_KEYS,
    "`[services.SERVICE.kubernetes]`": podsettings.KUBERNETES_KEYS,
    "`[services.SERVICE.kubernetes.tolerations]`": podsettings.TOLERATION_KEYS,
    "`[services.SERVICE.environments.ENV]`": merging.OVERRIDE_KEYS,
    "`[databases.DATABASE]`": databases.DATABASE_TABLE_KEYS,
    "`[databases.DATABASE.environments.ENV]`": merging.DATABASE_OVERRIDE_KEYS,
}
# Where the validator keeps its lists of keys (``*_KEYS``).
KEY_MODULES: tuple[ModuleType, ...] = (
    validation,
    units,
    databases,
    environments,
    platforms,
    podsettings,
    merging,
)


def _key_lists() -> list[tuple[str, tuple[str, ...]]]:
    return [
        (f"{module.__name__}.{name}", value)
        for module in KEY_MODULES
        for name, value in vars(module).items()
        if name.endswith("_KEYS") and isinstance(value, tuple)
    ]


def test_every_key_list_of_the_validator_has_a_table_in_the_docs() -> None:
    """A new list of keys (a new table) must be added to TABLES, and so to the docs."""
    unmapped = [
        f"{name} {keys}"
        for name, keys in _key_lists()
        if not any(set(keys) <= set(table) for table in TABLES.values())
    ]
    assert unmapped == [], (
        "lists of keys with no table in docs/nebula-toml.md (add a section for each, and "
        f"map it in TABLES): {unmapped}"
    )


@pytest.mark.parametrize(
    ("heading", "key"),
    [
        pytest.param(heading, key, id=f"{heading.strip('`[]')}.{key}")
        for heading, keys in TABLES.items()
        for key in keys
    ],
)
def test_every_key_is_documented(heading: str, key: str) -> None:
    found = [text for title, text in sections(TOML).items() if heading in title]
    assert found, f"docs/nebula-toml.md has no section headed {heading}"
    rows = [line for line in found[0].splitlines() if line.startswith(f"| `{key}` |")]
    assert rows, f"docs/nebula-toml.md, section {heading}: no row for the key `{key}`"


VALUES: list[tuple[str, str]] = [
    *((f"code {code.value}", f"| `{code.value}` |") for code in Code),
    *((f"size {size.value}", f"| `{size.value}` |") for size in specs.InstanceSize),
    *((f"export {key}", f"`{key}`") for key in (*engines.POSTGRES_KEYS, *engines.REDIS_KEYS)),
    *(
        (f"{kind.__name__} {value.value}", f'"{value.value}"')
        for kind in (
            specs.ProcessType,
            specs.PodSecurity,
            engines.PostgresRunner,
            engines.DatabaseEngine,
        )
        for value in kind
    ),
]


@pytest.mark.parametrize(("what", "written"), [pytest.param(*v, id=v[0]) for v in VALUES])
def test_every_value_of_the_format_is_documented(what: str, written: str) -> None:
    """Error codes, instance sizes, database exports and the choices of enumerated keys."""
    assert written in TOML.read_text(encoding="utf-8"), f"docs/nebula-toml.md lacks {written}"


# -- the command line --------------------------------------------------------------------

# Options every command takes, documented once ("Options every command takes").
COMMON_OPTIONS = frozenset(
    {"-h", "--help", "--config", "--server", "--context", "--as", "-o", "--output", "--json"}
)


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command the parser runs (``nebula changeset apply``), with its parser."""
    out: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, words: str) -> None:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups and parser.get_default("func") is not None:
            out.append((words, parser))
        for group in groups:
            for name, sub in group.choices.items():
                walk(sub, f"{words} {name}")

    walk(running.build_parser(), "nebula")
    return out


COMMANDS = _commands()


def _command_section(command: str) -> str | None:
    pattern = re.compile(rf"^`{re.escape(command)}[ `]")
    for title, text in sections(CLI).items():
        if pattern.match(title):
            return text
    return None


def test_the_parser_has_commands_to_document() -> None:
    names = {name for name, _ in COMMANDS}
    assert {"nebula status", "nebula changeset apply", "nebula import compose"} <= names


@pytest.mark.parametrize("command", [pytest.param(parser, id=name) for name, parser in COMMANDS])
def test_every_command_and_option_is_documented(command: argparse.ArgumentParser) -> None:
    name = command.prog
    section = _command_section(name)
    assert section is not None, f"docs/cli.md has no heading ### `{name} ...`"
    missing = [
        option
        for action in command._actions
        for option in action.option_strings
        if option.startswith("--")
        and option not in COMMON_OPTIONS
        and not re.search(rf"`{re.escape(option)}[` ]", section)
    ]
    assert missing == [], f"docs/cli.md, section `{name}`: options not documented: {missing}"


# -- HTTP --------------------------------------------------------------------------------


def test_every_route_is_documented(nebula: Nebula) -> None:
    """Each method and path the app serves (HEAD answers as GET: documented once)."""
    text = HTTP.read_text(encoding="utf-8")
    served = [
        (method, path)
        for path, methods in app_routes(create_app(nebula.ctx))
        for method in methods - {"HEAD"}
    ]
    assert len(served) > 50, "the app's routes (through its included routers) were found"
    missing = sorted(
        f"{method} {path}"
        for method, path in served
        if not re.search(rf"`{method} {re.escape(path)}[`/?]", text)
    )
    assert missing == [], f"docs/http.md does not document: {missing}"
