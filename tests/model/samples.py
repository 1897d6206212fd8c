"""Sample nebula.toml texts and the fixture files, shared by the model tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fixtures import loading
from reconciler.model import validation
from reconciler.model.problems import Problem, Severity
from reconciler.model.specs import EnvironmentConfig, ProjectFile

PROJECTS = loading.PROJECTS
INVALID = loading.INVALID

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"registry.example.com/shop/api@{DIGEST}"

ENVIRONMENTS = """\
[environments.staging]

[environments.production]
protected = true
"""

_EXPECT = re.compile(r"^# expect: (\d+):(\d+): (.*)$")


def service(name: str, *, port: int = 8080, extra: str = "") -> str:
    """A valid service with one http process; ``extra`` lines go into its table."""
    return f"""
[services.{name}]
image = "registry.example.com/shop/{name}@{DIGEST}"
{extra}
[services.{name}.processes.web]
type = "http"
port = {port}
"""


def valid(text: str) -> ProjectFile:
    """The project, asserting the text has no problem at all (not even a warning)."""
    project, problems = validation.check(text, "nebula.toml")
    assert [str(p) for p in problems] == []
    assert project is not None
    return project


def problems(text: str) -> list[Problem]:
    return validation.check(text, "nebula.toml")[1]


def messages(text: str) -> list[str]:
    """``LINE:COL: message`` of every problem, as a user reads them."""
    return [shown(p) for p in problems(text)]


def shown(problem: Problem) -> str:
    label = "warning: " if problem.severity is Severity.WARNING else ""
    return f"{problem.location.line}:{problem.location.col}: {label}{problem.message}"


def config(text: str, env: str) -> EnvironmentConfig:
    found = valid(text).environment(env)
    assert found is not None
    return found


@dataclass(frozen=True)
class Expected:
    """An invalid fixture and the problems its ``# expect:`` header lists."""

    path: Path
    lines: tuple[str, ...]

    @property
    def warnings_only(self) -> bool:
        return all(": warning: " in line for line in self.lines)


def expected(path: Path) -> Expected:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if match := _EXPECT.match(line):
            lines.append(f"{match[1]}:{match[2]}: {match[3]}")
    return Expected(path, tuple(lines))


def invalid_fixtures() -> list[Path]:
    return sorted(INVALID.glob("*.toml"))


def project_fixtures() -> list[Path]:
    return sorted(PROJECTS.glob("*/nebula.toml"))
