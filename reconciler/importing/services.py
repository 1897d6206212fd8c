"""One Compose service as a nebula.toml unit: what it is (a database when its image is
postgres or redis, else a service), its image, volumes, variables and ``depends_on``.

``Unit`` is read first for every service (``read``), since each one's variables are written
with what the others became (``variables``); the tables come last (``service_table``,
``database_table``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.importing import envfiles, interpolation, keys, processes, values, volumes
from reconciler.importing.notes import Notes
from reconciler.importing.processes import Process
from reconciler.importing.yamltree import At, Entry, Mapping, Node, Sequence, strings_of, text_of
from reconciler.model.engines import DatabaseEngine

ReadFile = Callable[[str], str | None]  # an env_file's text by its path as written; None: missing
ENGINES = {"postgres": DatabaseEngine.POSTGRES, "postgresql": DatabaseEngine.POSTGRES,
           "redis": DatabaseEngine.REDIS}  # fmt: skip
DATABASE_QUIET = ("image", "volumes", "environment", "healthcheck", "restart", "expose",
                  "hostname", "container_name", "networks", "build")  # fmt: skip
_SIZE_IT = "size it with instance_size and volume_size in [databases.{slug}]"
DATABASE_REPORTED = {
    "command": "Nebula runs {engine} with its own settings; remove it",
    "entrypoint": "Nebula runs {engine} with its own settings; remove it",
    "ports": "the database is reached inside the environment only, as ${{{{ {slug}.{host} }}}}",
    "env_file": "Nebula generates its credentials; the services that use it read them as "
    "${{{{ {slug}.KEY }}}}",
    "depends_on": "a database deploys before the services that use it anyway; remove it",
    "deploy": _SIZE_IT,
    "scale": _SIZE_IT,
    "cpus": _SIZE_IT,
    "mem_limit": _SIZE_IT,
    "mem_reservation": _SIZE_IT,
    "stop_grace_period": "remove it",
}
COMPLETED = "service_completed_successfully"
VOLUME_SIZE = "1Gi"
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def slug(name: str) -> str:
    """``My_App`` -> ``my-app``: a Compose name as a Nebula slug."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not text or not text[0].isalpha():
        text = f"s-{text}".rstrip("-")
    return text[:40].rstrip("-")


@dataclass
class Unit:
    name: str  # as written in the Compose file
    slug: str
    node: Mapping
    at: At
    image: str = ""
    engine: DatabaseEngine | None = None
    version: str | None = None
    hosts: frozenset[str] = frozenset()
    process: Process | None = None

    @property
    def where(self) -> str:
        return f"services.{self.name}"


def read(entry: Entry, notes: Notes, images: dict[str, str], once: bool) -> Unit | None:
    """The unit a Compose service becomes, or None (refused: its reasons are in ``notes``)."""
    if not isinstance(entry.value, Mapping):
        notes.refuse(
            entry.key_at, f"services.{entry.key} is not a mapping", "write its keys under it"
        )
        return None
    unit = Unit(entry.key, slug(entry.key), entry.value, entry.key_at)
    if unit.slug != unit.name:
        notes.note(entry.key_at, f"service '{unit.name}' is named '{unit.slug}' (a slug: lowercase "
                   "letters, digits and '-')", "use that name for it in commands")  # fmt: skip
    image = _image(unit, notes, images)
    if image is None:
        return None
    unit.image = image
    repository = image.split("@")[0].rsplit("/", 1)[-1]
    name, _, tag = repository.partition(":")
    unit.engine = ENGINES.get(name)
    if unit.engine is None and unit.name not in images:
        _maybe_database(unit, name, notes)
    unit.hosts = _hosts(unit)
    if unit.engine is not None:
        unit.version = _version(unit, tag, notes)
    else:
        unit.process = processes.read(
            unit.node, unit.where, notes, image=name, hosts=unit.hosts, once=once
        )
    return unit


def _image(unit: Unit, notes: Notes, images: dict[str, str]) -> str | None:
    build = unit.node.get("build")
    given = unit.node.get("image")
    if unit.name in images:
        image = images[unit.name]
    elif given is not None and (text := text_of(given.value)) is not None:
        expanded = interpolation.expand(text)
        if not expanded.known:
            names = ", ".join(f"${{{n}}}" for n in expanded.unknown)
            notes.refuse(given.value.at, f"{unit.where}.image uses {names}, which Compose fills in "
                         "from the shell", f"give the image: --image {unit.name}=REGISTRY/IMAGE:TAG")  # fmt: skip
            return None
        image = expanded.text
    else:
        flag = f"--image {unit.name}=REGISTRY/IMAGE:TAG"
        if build is not None:
            notes.refuse(build.key_at, f"{unit.where} has build: but no image",
                         f"build and push it, then give it: {flag}")  # fmt: skip
        else:
            notes.refuse(unit.at, f"{unit.where} has no image",
                         f"add an image: key, or give it: {flag}")  # fmt: skip
        return None
    if build is not None:
        notes.note(build.key_at, f"{unit.where}.build is not carried over (Nebula deploys images)",
                   f"build and push {image} in CI; releases name its digest")  # fmt: skip
    last = image.rsplit("/", 1)[-1]
    if ":" not in last and not _DIGEST.search(image) and last not in ENGINES:
        at = given.value.at if given is not None and unit.name not in images else unit.at
        notes.note(at, f"{unit.where}.image '{image}' has no tag: written as {image}:latest",
                   "pin it by digest: name@sha256:<64 hex digits>")  # fmt: skip
        image = f"{image}:latest"
    return image


def _maybe_database(unit: Unit, name: str, notes: Notes) -> None:
    """An image of its own whose name says postgres or redis: the official one would make it
    a database."""
    build = unit.node.get("build")
    for word, engine in ENGINES.items():
        if word in name and build is not None:
            official = "postgres:16" if engine is DatabaseEngine.POSTGRES else "redis:7"
            notes.note(build.key_at,
                       f"{unit.where} builds its own image '{name}': imported as a service, "
                       f"not as a {engine} database", f"to make it a database, give --image "
                       f"{unit.name}={official}")  # fmt: skip
            return


def _hosts(unit: Unit) -> frozenset[str]:
    names = {unit.name}
    for key in ("hostname", "container_name"):
        if (text := text_of(unit.node.value(key))) is not None:
            names.add(text)
    networks = unit.node.value("networks")
    if isinstance(networks, Mapping):
        for network in networks:
            if isinstance(network.value, Mapping):
                names.update(strings_of(network.value.value("aliases")) or ())
    return frozenset(names)


def _version(unit: Unit, tag: str, notes: Notes) -> str | None:
    match = re.match(r"(\d+)", tag)
    if match is not None:
        return match.group(1)
    assert unit.engine is not None
    given = unit.node.get("image")
    notes.note(given.value.at if given is not None else unit.at,
               f"{unit.where}.image names no {unit.engine} version: the database runs "
               f"version {unit.engine.default_version}", "set version in [databases."
               f"{unit.slug}] if it needs another")  # fmt: skip
    return None


def database_table(unit: Unit, notes: Notes, named: dict[str, str]) -> dict[str, Any]:
    """``named``: volumes declared at the top (name -> its slug)."""
    assert unit.engine is not None
    table: dict[str, Any] = {"engine": str(unit.engine)}
    if unit.version is not None:
        table["version"] = unit.version
    engine = "PostgreSQL" if unit.engine is DatabaseEngine.POSTGRES else "Redis"
    for entry in unit.node:
        if entry.key in keys.SERVICE_REPORTED or entry.key.startswith("x-"):
            continue  # reported with every service's keys
        if entry.key == "environment":
            for key, _, at in environment_of(entry.value):
                notes.note(at, f"{unit.where}.environment.{key} is not carried over (Nebula sets "
                           f"up {engine} and generates its credentials)", "the services that "
                           f"use it read them as ${{{{ {unit.slug}.KEY }}}}")  # fmt: skip
        elif entry.key == "volumes":
            _database_volumes(unit, entry.value, notes, named)
        elif entry.key not in DATABASE_QUIET and entry.key in keys.SERVICE_MAPPED:
            host = "PGHOST" if unit.engine is DatabaseEngine.POSTGRES else "REDIS_HOST"
            todo = DATABASE_REPORTED.get(entry.key, "remove it")
            notes.note(entry.key_at, f"{unit.where}.{entry.key} is not carried over (a "
                       f"{unit.engine} database)", todo.format(engine=engine, slug=unit.slug,
                                                            host=host))  # fmt: skip
    return table


def _database_volumes(unit: Unit, node: Node, notes: Notes, named: dict[str, str]) -> None:
    for item in node if isinstance(node, Sequence) else ():
        kind, source, target, _ = volumes.entry(item)
        if kind == "volume" and source in named:
            continue  # its data: the database's own volume (volume_size)
        notes.note(item.at, f"{unit.where}.volumes: '{source or target}' is not carried over "
                   "(the database keeps its data on its own volume)", "run setup scripts as a "
                   "release_command of the service that uses it")  # fmt: skip


def variables(unit: Unit, context: values.Context, read_file: ReadFile) -> dict[str, str]:
    given: list[values.Variable] = []
    env_files = unit.node.value("env_file")
    for path, at in _env_file_paths(env_files):
        text = read_file(path)
        if text is None:
            context.notes.note(at, f"{unit.where}.env_file '{path}' cannot be read: its variables "
                               "are not carried over", "write them under environment, or import "
                               "from the folder holding it")  # fmt: skip
            continue
        lines, bad = envfiles.parse(text)
        for bad_at in bad:
            context.notes.note(bad_at, "this line is not KEY=VALUE", "fix or remove it", path=path)
        # One note per line of the file, however many services read it.
        given += [values.Variable(line.key, line.value, line.at, "", path) for line in lines]
    environment = unit.node.value("environment")
    written = environment_of(environment) if environment is not None else []
    keys_written = {key for key, _, _ in written}
    given = [v for v in given if v.key not in keys_written]  # environment wins, as in Compose
    given += [values.Variable(k, v, at, f"{unit.where}.environment") for k, v, at in written]
    usable = []
    for var in given:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var.key) is None:
            named = f"{var.where}.{var.key}" if var.where else var.key
            context.notes.note(var.at, f"{named} is not a variable name Nebula takes",
                               "rename it: letters, digits and '_'", path=var.path)  # fmt: skip
        else:
            usable.append(var)
    return values.variables(context, unit.slug, usable)


def settings_of(unit: Unit, read_file: ReadFile) -> dict[str, str | None]:
    """Its environment as Compose gives it (env_file, then environment), with no notes: a
    database's, to know its user, password and database name."""
    out: dict[str, str | None] = {}
    for path, _ in _env_file_paths(unit.node.value("env_file")):
        text = read_file(path)
        out.update((line.key, line.value) for line in envfiles.parse(text or "")[0])
    out.update((key, value) for key, value, _ in environment_of(unit.node.value("environment")))
    return out


def requirepass(unit: Unit) -> str | None:
    """The password a redis ``command`` sets (``redis-server --requirepass X``), as written."""
    node = unit.node.value("command")
    words = strings_of(node) or (text_of(node) or "").split()
    for before, word in itertools.pairwise(words):
        if before == "--requirepass":
            return word
    return None


def _env_file_paths(node: Node | None) -> list[tuple[str, At]]:
    if node is None:
        return []
    items = node.items if isinstance(node, Sequence) else (node,)
    out = []
    for item in items:
        target = item.value("path") if isinstance(item, Mapping) else item
        if (text := text_of(target)) is not None:
            out.append((text, item.at))
    return out


def environment_of(node: Node | None) -> list[tuple[str, str | None, At]]:
    """``environment`` as a mapping or a list of ``KEY=VALUE``: (key, value or None, where)."""
    if isinstance(node, Mapping):
        return [(e.key, text_of(e.value), e.key_at) for e in node]
    out: list[tuple[str, str | None, At]] = []
    for item in node if isinstance(node, Sequence) else ():
        text = text_of(item) or ""
        key, equals, value = text.partition("=")
        out.append((key, value if equals else None, item.at))
    return out


def depends_on(unit: Unit, units: dict[str, Unit], notes: Notes) -> list[str]:
    node = unit.node.value("depends_on")
    names: list[tuple[str, At, Mapping | None]] = []
    if isinstance(node, Sequence):
        names = [(text_of(i) or "", i.at, None) for i in node]
    elif isinstance(node, Mapping):
        names = [(e.key, e.key_at, e.value if isinstance(e.value, Mapping) else None) for e in node]
    out = []
    for name, at, options in names:
        other = units.get(name)
        if other is None:
            notes.note(at, f"{unit.where}.depends_on names '{name}', which is not imported",
                       "add it once it is (see its own lines)")  # fmt: skip
            continue
        out.append(other.slug)
        for option in options or ():
            text = text_of(option.value)
            if option.key == "condition" and text == COMPLETED:
                notes.note(option.value.at, f"{unit.where} waits for {name} to complete; Nebula "
                           f"deploys it after {other.slug} but does not wait for its job",
                           f"if it prepares {unit.slug} (migrations), make it {unit.slug}'s "
                           "release_command instead")  # fmt: skip
            elif option.key == "condition" or (option.key == "required" and text == "true"):
                continue  # service_started, service_healthy: deploys wait for healthy
            else:
                notes.note(option.key_at, f"{unit.where}.depends_on.{name}.{option.key} is not "
                           "carried over", "Nebula orders deploys only")  # fmt: skip
    return list(dict.fromkeys(out))
