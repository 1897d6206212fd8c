"""nebula.toml text -> a validated ``ProjectFile``, or every problem found.

Problems are collected, not raised one at a time: a user fixing a file wants the whole list.
Each environment's effective configuration (base tables with that environment's overrides
merged in) is validated on its own, so an override that breaks only production is reported
at the override's line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import tomlkit
import tomlkit.exceptions

from reconciler.errors import InvalidFileError
from reconciler.model import (
    crosschecks,
    environments,
    platforms,
    positions,
    rawmanifests,
    units,
)
from reconciler.model import (
    databases as database_tables,
)
from reconciler.model.problems import Code, Problem, Problems, Severity
from reconciler.model.reading import Reader, check_slug, not_a_table
from reconciler.model.specs import (
    MANIFESTS,
    EnvironmentConfig,
    EnvironmentSpec,
    Location,
    ProjectFile,
)

TOP_KEYS = ("project", "environments", "services", "databases", "kubernetes")
PROJECT_KEYS = ("name",)
KUBERNETES_KEYS = ("manifests",)
Files = Mapping[str, str]  # raw manifest files read at the commit: path -> text
Namespace = Callable[[str], str]  # an environment's namespace, from its name


def load(
    text: str,
    path: str = "nebula.toml",
    *,
    files: Files | None = None,
    namespace: Namespace | None = None,
) -> ProjectFile:
    """The validated file; raises ``InvalidFileError`` carrying every error."""
    project, problems = check(text, path, files=files, namespace=namespace)
    if project is None:
        raise InvalidFileError([p for p in problems if p.severity is Severity.ERROR])
    return project


def decode(data: bytes) -> str | None:
    """A nebula.toml's bytes as text: UTF-8, without the byte order mark some editors write
    first (TOML would read it as a key: "empty key"); None when it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def check(
    text: str,
    path: str = "nebula.toml",
    *,
    files: Files | None = None,
    namespace: Namespace | None = None,
) -> tuple[ProjectFile | None, list[Problem]]:
    """The file if it has no errors (warnings allowed), and every problem found, in file order.

    ``files``: the raw manifest files the file names, read at its commit (``manifest_paths``
    says which); without them no environment has a manifests unit. ``namespace`` checks a
    document's ``metadata.namespace`` against its environment's."""
    text = text.removeprefix("\ufeff")  # a byte order mark, if the text was read with one
    data = _tables(text, path)
    if isinstance(data, Problem):
        return None, [data]
    problems = Problems(path, positions.scan(text))
    project = _FileReader(problems, data, files, namespace).read(text)
    ordered = problems.sorted()
    if problems.errors:
        return None, ordered
    return project, ordered


def _tables(text: str, path: str) -> dict[str, Any] | Problem:
    """The file's tables, or why it is not TOML. The standard library's reader takes a
    thirtieth of tomlkit's time (10,000 services: 0.3 s against 7 s); tomlkit reads a file the
    former refused, for the line, column and words of its errors (what people read), and stays
    the judge of what is TOML, as it always was."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        pass
    try:
        unwrapped: dict[str, Any] = tomlkit.parse(text).unwrap()
        return unwrapped
    except tomlkit.exceptions.ParseError as exc:
        message = str(exc).split(" at line ")[0]
        line, col = exc.line, exc.col
        if isinstance(exc, tomlkit.exceptions.UnexpectedEofError) or "'\\x00'" in message:
            # tomlkit reads past the end as '\x00' and reports column 0 of some earlier line.
            message, line, col = "unexpected end of file", len(text) + 1, len(text) + 1
        return _syntax(Location(path, *_clamped(text, line, col)), message)
    except (tomlkit.exceptions.TOMLKitError, ValueError) as exc:
        # Raised while building the document (e.g. a table redefining a key), with no position.
        return _syntax(Location(path, 1, 1), str(exc))


def _syntax(location: Location, message: str) -> Problem:
    hint = (
        "a key or table may be defined only once: merge the two definitions"
        if message.endswith("already exists.")
        else "check quotes, brackets and '=' on this line (see https://toml.io)"
    )
    message = message[0].lower() + message[1:] if message else "syntax error"
    return Problem(location, Code.SYNTAX, f"invalid TOML: {message}", hint)


def _clamped(text: str, line: int, col: int) -> tuple[int, int]:
    """tomlkit's error position made a real one: it may say column 0, or a line past the end."""
    lines = text.removesuffix("\n").split("\n")
    line = min(max(line, 1), len(lines))
    return line, min(max(col, 1), len(lines[line - 1]) + 1)


def manifest_paths(project: ProjectFile) -> tuple[str, ...]:
    """Every raw manifest path any environment names: what a caller reads at the commit."""
    return tuple(dict.fromkeys(p for env in project.environments for p in env.manifest_paths))


class _FileReader:
    def __init__(
        self,
        problems: Problems,
        data: dict[str, Any],
        files: Files | None = None,
        namespace: Namespace | None = None,
    ) -> None:
        self.problems = problems
        self.top = Reader(problems, data, (), TOP_KEYS)
        self.files = files
        self.namespace = namespace
        self.shared_paths: tuple[str, ...] = ()
        if (table := self.top.table_of("kubernetes")) is not None:
            kubernetes = Reader(problems, table, ("kubernetes",), KUBERNETES_KEYS)
            self.shared_paths = rawmanifests.read_paths(kubernetes)

    def read(self, text: str) -> ProjectFile:
        name = None
        if (table := self.top.table_of("project")) is not None:
            name = Reader(self.problems, table, ("project",), PROJECT_KEYS).string("name")
        environments = self._environments()
        services = self._named_tables("services", "service")
        databases = self._named_tables("databases", "database")
        for dup in sorted(set(services) & set(databases)):
            self.problems.add(
                ("databases", dup),
                Code.DUPLICATE_NAME,
                f"'{dup}' names both a service and a database",
                "give each service and database its own name",
                key=True,
            )
        declared = tuple(e.name for e in environments)
        for kind, tables in (("services", services), ("databases", databases)):
            for unit, table in tables.items():
                self._check_override_names(kind, unit, table, declared)
        configs = []
        for env in environments or (EnvironmentSpec("(no environment)"),):
            read = {
                unit: units.read_service(self.problems, unit, table, env.name, env.platform)
                for unit, table in services.items()
            }
            config = EnvironmentConfig(
                env,
                tuple(spec for spec, _ in read.values()),
                tuple(
                    database_tables.read_database(
                        self.problems, unit, table, env.name, env.platform
                    )
                    for unit, table in databases.items()
                ),
            )
            locates = {u: loc for u, (_, loc) in read.items()}
            crosschecks.check_environment(self.problems, config, locates)
            platforms.check_routes(self.problems, config, locates)
            configs.append(self._with_manifests(config))
        written = self.top.table.get("environments")
        if not environments and not (isinstance(written, dict) and written):
            # (Environments written with invalid names are errors of their own already.)
            self.problems.add(
                (),
                Code.NO_ENVIRONMENTS,
                "no environments are declared, so nothing will be deployed",
                "add one, e.g. [environments.staging]",
                severity=Severity.WARNING,
            )
        if not environments:
            configs = []
        if any(e.manifest_paths for e in environments) and MANIFESTS in {*services, *databases}:
            kind = "services" if MANIFESTS in services else "databases"
            self.problems.add(
                (kind, MANIFESTS),
                Code.DUPLICATE_NAME,
                f"'{MANIFESTS}' names the raw manifests unit, which this file uses",
                f"give the {kind[:-1]} another name",
                key=True,
            )
        return ProjectFile(
            name,
            environments,
            tuple(configs),
            source=text,
            warnings=tuple(self.problems.warnings),
            files=tuple(sorted((self.files or {}).items())),
        )

    def _with_manifests(self, config: EnvironmentConfig) -> EnvironmentConfig:
        """The environment's raw manifests unit, when it names any and the files were read."""
        env = config.environment
        if not env.manifest_paths or self.files is None:
            return config
        tables = self.top.table.get("environments") or {}
        written = (tables.get(env.name) or {}).get("manifests") or []
        located = tuple(
            (path, ("kubernetes", "manifests", self.shared_paths.index(path)))
            if path in self.shared_paths
            else (path, ("environments", env.name, "manifests", written.index(path)))
            for path in env.manifest_paths
        )
        namespace = self.namespace(env.name) if self.namespace is not None else None
        found = rawmanifests.read(self.problems, located, self.files, namespace)
        return replace(config, manifests=replace(found, platform=env.platform))

    def _environments(self) -> tuple[EnvironmentSpec, ...]:
        tables = self._named_tables("environments", "environment")
        read = tuple(
            environments.read_environment(self.problems, name, table)
            for name, table in tables.items()
        )
        read = tuple(
            replace(e, manifest_paths=rawmanifests.paths_of(self.shared_paths, e.manifest_paths))
            for e in read
        )
        return environments.check_gates(self.problems, read, tables)

    def _named_tables(self, key: str, what: str) -> dict[str, dict[str, Any]]:
        tables = self.top.table_of(key) or {}
        out = {}
        for name, table in tables.items():
            if not check_slug(self.problems, (key, name), name, what):
                continue
            if not isinstance(table, dict):
                not_a_table(self.problems, (key, name), table)
                continue
            out[name] = table
        return out

    def _check_override_names(
        self, kind: str, unit: str, table: dict[str, Any], declared: tuple[str, ...]
    ) -> None:
        if "environments" not in table:
            return
        overrides = table["environments"]
        if not isinstance(overrides, dict):
            not_a_table(self.problems, (kind, unit, "environments"), overrides)
            return
        for env in overrides:
            if env not in declared:
                self.problems.add(
                    (kind, unit, "environments", env),
                    Code.UNKNOWN_ENVIRONMENT,
                    f"override for unknown environment '{env}' in {kind}.{unit}",
                    f"declare it with [environments.{env}] or use one of: "
                    f"{', '.join(declared) or '(none declared)'}",
                    key=True,
                )
