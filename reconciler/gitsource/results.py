"""What the git edge hands back: plain frozen values, no pygit2 objects.

Callers above the edge (polling, planning) never see libgit2 types, so they can be tested
with values built by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reconciler.errors import PermanentError, TransientError

Target = tuple[str, str]  # (url, branch)


@dataclass(frozen=True)
class HeadResult:
    """One branch's head as the remote advertised it.

    ``commit`` is None with no ``error`` when the branch does not exist (deleted, or never
    pushed); with an ``error`` the remote could not be asked and nothing is known. Both set
    (only from ``heads(fetch=True)``): the head is known but could not be fetched.
    """

    commit: str | None
    error: TransientError | PermanentError | None = None

    @property
    def missing(self) -> bool:
        return self.commit is None and self.error is None


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    short_sha: str
    author_name: str
    author_email: str
    summary: str  # the message's first line
    message: str  # the whole message
    committed_at: datetime  # committer time, aware, UTC


@dataclass(frozen=True)
class FileEntry:
    """What a commit holds at a path, known without reading it: its size in bytes, and whether
    it is a symbolic link (whose blob is the link's target, not a file's text)."""

    size: int
    link: bool


@dataclass
class GitCounters:
    """How often the remote was asked (``list_heads``) and fetched from, for tests and metrics."""

    remote_calls: int = 0
    fetches: int = 0
