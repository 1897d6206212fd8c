"""A problem found in nebula.toml: where, what, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reconciler.model.positions import Path, Positions
from reconciler.model.specs import Location


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Code(StrEnum):
    """Every validation error nebula-toml.md requires, plus the file-level ones."""

    SYNTAX = "syntax"
    UNKNOWN_KEY = "unknown-key"
    MISSING_KEY = "missing-key"
    WRONG_TYPE = "wrong-type"
    INVALID_VALUE = "invalid-value"
    INVALID_SLUG = "invalid-slug"
    DUPLICATE_NAME = "duplicate-name"
    UNKNOWN_ENVIRONMENT = "unknown-environment"
    UNKNOWN_REFERENCE = "unknown-reference"
    INVALID_REFERENCE = "invalid-reference"
    UNKNOWN_DEPENDENCY = "unknown-dependency"
    SELF_DEPENDENCY = "self-dependency"
    DEPENDENCY_CYCLE = "dependency-cycle"
    MISSING_PORT = "missing-port"
    INVALID_SCHEDULE = "invalid-schedule"
    MULTIPLE_PRIMARY = "multiple-primary"
    UNKNOWN_INSTANCE_SIZE = "unknown-instance-size"
    MALFORMED_SIZE = "malformed-size"
    INVALID_IMAGE = "invalid-image"
    IMAGE_TAG = "image-tag"
    VOLUME_WITHOUT_DOWNTIME = "volume-without-downtime"
    OVERSIZED_VALUE = "oversized-value"  # a variable (or a release's) resolves past the limits
    NO_ENVIRONMENTS = "no-environments"
    SELF_PROMOTION = "self-promotion"
    PROMOTION_CYCLE = "promotion-cycle"
    SOAK_WITHOUT_PROMOTE_FROM = "soak-without-promote-from"
    MALFORMED_DURATION = "malformed-duration"


@dataclass(frozen=True)
class Problem:
    location: Location
    code: Code
    message: str
    hint: str = ""
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        label = "warning: " if self.severity is Severity.WARNING else ""
        text = f"{self.location}: {label}{self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.location.path,
            "line": self.location.line,
            "col": self.location.col,
            "severity": str(self.severity),
            "code": str(self.code),
            "message": self.message,
            "hint": self.hint,
        }


def dotted(path: Path) -> str:
    """``("services", "api", "deploy", "depends_on", 0)`` -> ``services.api.deploy.depends_on[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if part and all(c.isalnum() or c in "_-" for c in part) else f'"{part}"'
            out += f".{text}" if out else text
    return out


@dataclass
class Problems:
    """Collects problems for one file; duplicates (same place, same message) are kept once."""

    file: str
    positions: Positions
    found: list[Problem] = field(default_factory=list)
    _seen: set[Problem] = field(default_factory=set, repr=False)  # a file's worth: kept once

    def at(self, path: Path, *, key: bool = False) -> Location:
        line, col = self.positions.key(path) if key else self.positions.value(path)
        return Location(self.file, line, col)

    def add(
        self,
        path: Path,
        code: Code,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
        severity: Severity = Severity.ERROR,
    ) -> None:
        problem = Problem(self.at(path, key=key), code, message, hint, severity)
        if problem not in self._seen:
            self._seen.add(problem)
            self.found.append(problem)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.found if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.found if p.severity is Severity.WARNING]

    def sorted(self) -> list[Problem]:
        return sorted(self.found, key=lambda p: (p.location.line, p.location.col, p.code))
