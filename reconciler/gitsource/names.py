"""What may name a tracked branch and the path of a file in a repository.

A branch name follows ``git check-ref-format --branch``: the rules git itself applies to
``refs/heads/<name>``, plus no leading ``-`` (it would read as an option). A path is relative,
inside the repository: no leading ``/``, no ``..``, no empty part. Each function returns what
is wrong, in words, or None; the caller says what to do.
"""

from __future__ import annotations

from pathlib import PurePosixPath

MAX_LENGTH = 255  # the columns that hold them
_FORBIDDEN = set(" ~^:?*[\\")


def branch_problem(name: str) -> str | None:
    """Why ``name`` cannot be a branch (git's rules for ``refs/heads/<name>``), or None."""
    if not name:
        return "it is empty"
    if len(name) > MAX_LENGTH:
        return f"it is longer than {MAX_LENGTH} characters"
    if name.startswith("-"):
        return "it starts with '-'"
    if name in ("@", "HEAD"):
        return f"'{name}' is not a branch name git allows"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "it holds a control character"
    bad = sorted({c for c in name if c in _FORBIDDEN})
    if bad:
        return "it holds " + ", ".join(repr(c) for c in bad)
    if ".." in name:
        return "it holds '..'"
    if "@{" in name:
        return "it holds '@{'"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "it starts or ends with '/', or has an empty part between two '/'"
    if name.endswith("."):
        return "it ends with '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return f"its part {part!r} starts with '.'"
        if part.endswith(".lock"):
            return f"its part {part!r} ends with '.lock'"
    return None


def normal_path(path: str) -> str:
    """``./deploy//nebula.toml`` -> ``deploy/nebula.toml`` (check it first)."""
    return str(PurePosixPath(path))


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be the path of a file inside a repository, or None."""
    if not path.strip():
        return "it is empty"
    if len(path) > MAX_LENGTH:
        return f"it is longer than {MAX_LENGTH} characters"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "it holds a control character"
    if "\\" in path:
        return "it holds '\\\\' (paths in git are written with '/')"
    if path.startswith("/"):
        return "it is absolute (it must be relative to the repository's root)"
    parts = PurePosixPath(path).parts
    if ".." in parts:
        return "it leaves the repository ('..')"
    if not parts or path.endswith("/"):
        return "it names a directory, not a file"
    if parts[0] == ".git":
        return "it points into .git"
    return None
