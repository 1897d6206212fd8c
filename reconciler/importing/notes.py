"""What an import reports: one line per Compose key it could not carry over as written.

A ``Note`` is something the written nebula.toml does differently (or not at all), with what
to do about it; a refusal (``Level.REFUSED``) means nothing is written. Each prints as one
line, ``FILE:LINE:COL: what; what to do``, the position of the key in the Compose file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reconciler.importing.yamltree import At
from reconciler.model.specs import Location


class Level(StrEnum):
    NOTE = "note"  # carried over differently, or not at all: the file is still written
    REFUSED = "refused"  # no file can be written until this is fixed


@dataclass(frozen=True)
class Note:
    location: Location
    message: str
    todo: str
    level: Level = Level.NOTE

    def __str__(self) -> str:
        label = "error: " if self.level is Level.REFUSED else ""
        return f"{self.location}: {label}{self.message}; {self.todo}"


@dataclass
class Notes:
    """The notes of one import, kept in the order they were found (sorted when shown)."""

    path: str
    found: list[Note] = field(default_factory=list)

    def note(self, at: At, message: str, todo: str, *, path: str | None = None) -> None:
        """``path``: another file than the Compose file (an ``env_file``)."""
        self._add(Note(Location(path or self.path, at.line, at.col), message, todo))

    def refuse(self, at: At, message: str, todo: str) -> None:
        self._add(Note(Location(self.path, at.line, at.col), message, todo, Level.REFUSED))

    def _add(self, note: Note) -> None:
        if note not in self.found:
            self.found.append(note)

    @property
    def refused(self) -> list[Note]:
        return [n for n in self.found if n.level is Level.REFUSED]

    def sorted(self) -> list[Note]:
        return sorted(self.found, key=lambda n: (n.location.path, n.location.line, n.location.col))
