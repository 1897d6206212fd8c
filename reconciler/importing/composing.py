"""A Compose file -> nebula.toml text, the notes on what was not carried over, and the
verdict of Nebula's own validator on the result (``convert``).

The file declares two environments, ``staging`` and a protected ``production``, the shape the
sample projects have; every unit deploys to both. Nothing is written by this module: the
command writes the text only when nothing was refused and the validator found no error.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingOf
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ConfigurationError
from reconciler.importing import keys, services, tomltext, values, volumes
from reconciler.importing.notes import Note, Notes
from reconciler.importing.services import COMPLETED, ReadFile, Unit
from reconciler.importing.yamltree import At, Mapping, YamlError, parse, text_of
from reconciler.model import validation
from reconciler.model.problems import Problem, Severity

ENVIRONMENTS: dict[str, dict[str, Any]] = {"staging": {}, "production": {"protected": True}}


@dataclass(frozen=True)
class Imported:
    text: str | None  # the nebula.toml, None when refused or invalid
    notes: list[Note]  # in file order
    problems: list[Problem] = field(default_factory=list)  # the validator's errors, if any
    services: int = 0
    databases: int = 0
    secrets: tuple[str, ...] = ()


def convert(
    text: str,
    path: str,
    *,
    project: str,
    images: MappingOf[str, str] | None = None,
    read_file: ReadFile = lambda _: None,
    out: str = "nebula.toml",
) -> Imported:
    """``path``: the Compose file's name in the notes; ``project``: the slug the secret
    commands name (a ``name:`` in the file wins); ``images``: ``--image SERVICE=REF``;
    ``read_file``: an env_file's text by its path as written; ``out``: the result's name in
    the validator's messages."""
    notes = Notes(path)
    images = dict(images or {})
    try:
        root = parse(text)
    except YamlError as exc:
        notes.refuse(exc.at, exc.message, "fix the YAML (docker compose config shows it too)")
        return Imported(None, notes.sorted())
    top = root if isinstance(root, Mapping) else None
    declared = top.value("services") if top is not None else None
    if top is None or not isinstance(declared, Mapping) or not declared.entries:
        notes.refuse(root.at if root else At(1, 1), "the file declares no services",
                     "import a Compose file with a services: mapping")  # fmt: skip
        return Imported(None, notes.sorted())
    unknown = sorted(set(images) - {e.key for e in declared})
    if unknown:
        raise ConfigurationError(
            f"--image names {', '.join(repr(u) for u in unknown)}, which {path} does not declare",
            hint=f"services: {', '.join(e.key for e in declared)}",
        )
    name = text_of(top.value("name"))
    project = services.slug(name) if name else project
    _top_keys(top, notes)
    named = volumes.declared(top.value("volumes"), notes, services.slug)
    once = _run_once(declared)
    units: dict[str, Unit] = {}
    for entry in declared:
        if entry.key.startswith("x-"):
            continue
        unit = services.read(entry, notes, images, entry.key in once)
        if unit is not None:
            units[entry.key] = unit
            _service_keys(unit, notes)
    _check_names(units, notes)
    if notes.refused:
        return Imported(None, notes.sorted())
    book = values.SecretBook(project, tuple(ENVIRONMENTS))
    tables = _tables(
        units, named, values.Context(*_addresses(units, read_file), book, notes), read_file, name
    )
    header = [f"Imported from {path} by nebula import compose: read the lines it printed about",
              "what it did not carry over, then check the file with nebula validate."]  # fmt: skip
    result = tomltext.dumps(tables, header)
    project_file, problems = validation.check(result, out)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    databases = sum(1 for u in units.values() if u.engine is not None)
    return Imported(
        result if project_file is not None else None,
        notes.sorted(),
        errors,
        services=len(units) - databases,
        databases=databases,
        secrets=tuple(book.values),
    )


def _top_keys(top: Mapping, notes: Notes) -> None:
    for entry in top:
        if entry.key in keys.TOP_MAPPED or entry.key in keys.TOP_IGNORED:
            continue
        if entry.key.startswith("x-"):
            continue  # extension fields: Compose ignores them too (they hold anchors)
        todo = keys.TOP_REPORTED.get(entry.key)
        if todo is None:
            notes.note(entry.key_at, f"'{entry.key}' is not a Compose key", "remove it")
        else:
            notes.note(entry.key_at, f"{entry.key} is not carried over", todo)


def _service_keys(unit: Unit, notes: Notes) -> None:
    for entry in unit.node:
        if entry.key in keys.SERVICE_MAPPED or entry.key.startswith("x-"):
            continue
        if entry.key == "restart":
            continue
        todo = keys.SERVICE_REPORTED.get(entry.key)
        if todo is None:
            notes.note(entry.key_at, f"{unit.where}.{entry.key} is not a Compose key", "remove it")
        else:
            notes.note(entry.key_at, f"{unit.where}.{entry.key} is not carried over", todo)
    restart = unit.node.get("restart")
    if restart is not None and unit.engine is None:
        policy = text_of(restart.value) or ""
        job = unit.process is None or unit.process.table.get("type") == "job"
        if policy not in ("always", "unless-stopped") and not job:
            notes.note(restart.value.at, f"{unit.where}.restart '{policy}' is not carried "
                       "over (the cluster restarts a long-running process always)",
                       "make it exit only on failure")  # fmt: skip


def _run_once(declared: Mapping) -> set[str]:
    """Services another one waits for with ``condition: service_completed_successfully``."""
    out = set()
    for entry in declared:
        node = entry.value.value("depends_on") if isinstance(entry.value, Mapping) else None
        for dep in node if isinstance(node, Mapping) else ():
            if (
                isinstance(dep.value, Mapping)
                and text_of(dep.value.value("condition")) == COMPLETED
            ):
                out.add(dep.key)
    return out


def _check_names(units: dict[str, Unit], notes: Notes) -> None:
    seen: dict[str, str] = {}
    for unit in units.values():
        if (other := seen.setdefault(unit.slug, unit.name)) != unit.name:
            notes.refuse(unit.at, f"services '{other}' and '{unit.name}' both become '{unit.slug}'",
                         "rename one of them in the Compose file")  # fmt: skip


def _addresses(
    units: dict[str, Unit], read_file: ReadFile
) -> tuple[dict[str, values.Database], dict[str, values.Peer]]:
    databases: dict[str, values.Database] = {}
    peers: dict[str, values.Peer] = {}
    for unit in units.values():
        if unit.engine is not None:
            env = services.settings_of(unit, read_file)
            user = env.get("POSTGRES_USER") or env.get("POSTGRESQL_USERNAME")
            password = (
                env.get("POSTGRES_PASSWORD")
                or env.get("POSTGRESQL_PASSWORD")
                or env.get("REDIS_PASSWORD")
                or services.requirepass(unit)
            )
            database = env.get("POSTGRES_DB") or env.get("POSTGRESQL_DATABASE")
            db = values.Database(unit.slug, unit.engine, unit.hosts, user, password, database)
            databases.update(dict.fromkeys(unit.hosts, db))
        else:
            port = unit.process.port if unit.process is not None else None
            peers.update(dict.fromkeys(unit.hosts, values.Peer(unit.slug, unit.hosts, port)))
    return databases, peers


def _tables(
    units: dict[str, Unit],
    named: dict[str, str],
    context: values.Context,
    read_file: ReadFile,
    name: str | None,
) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    if name:
        tables["project"] = {"name": name}
    tables["environments"] = ENVIRONMENTS
    databases = {u.slug: services.database_table(u, context.notes, named)
                 for u in units.values() if u.engine is not None}  # fmt: skip
    if databases:
        tables["databases"] = databases
    taken: dict[str, str] = {}
    out: dict[str, Any] = {}
    for unit in units.values():
        if unit.engine is not None or unit.process is None:
            continue
        table: dict[str, Any] = {"image": unit.image}
        table["processes"] = {unit.process.name: unit.process.table}
        found = services.variables(unit, context, read_file)
        if found:
            table["variables"] = found
        mounted = volumes.service_volumes(unit.node.value("volumes"), unit.where, context.notes,
                                          named, taken, unit.slug)  # fmt: skip
        if mounted:
            table["volumes"] = mounted
        depends = services.depends_on(unit, units, context.notes)
        if depends:
            table["deploy"] = {"depends_on": depends}
        out[unit.slug] = table
    if out:
        tables["services"] = out
    return tables
