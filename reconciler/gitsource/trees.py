"""Reading a commit's tree: one file, or the files under a folder (raw manifests)."""

from __future__ import annotations

from pathlib import PurePosixPath

import pygit2

from reconciler.errors import ConfigurationError


def entry(commit: pygit2.Commit, path: str) -> pygit2.Object | None:
    """The tree entry at ``path`` in ``commit``, or None (a path out of the tree names nothing)."""
    parts = [p for p in PurePosixPath(path).parts if p not in ("/", ".")]
    if not parts or ".." in parts:
        return None
    try:
        return commit.tree["/".join(parts)]
    except KeyError:
        return None


def files_under(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    path: str,
    suffixes: tuple[str, ...],
    limit: int,
) -> dict[str, bytes]:
    """The file at ``path``, or every file under the folder ``path`` whose name ends in one of
    ``suffixes`` (at any depth), by path; {} when there is none. Symbolic links are skipped
    (Nebula reads files, not what links point to); a file over ``limit`` bytes raises
    ``ConfigurationError`` naming it."""
    top = entry(commit, path)
    if top is None:
        return {}
    base = "/".join(p for p in PurePosixPath(path).parts if p not in ("/", "."))
    out: dict[str, bytes] = {}
    pending: list[tuple[str, pygit2.Object | None]] = [(base, top)]
    while pending:
        where, obj = pending.pop()
        if isinstance(obj, pygit2.Tree):
            pending += [
                (f"{where}/{child.name}", repo.get(child.id))
                for child in obj
                if child.filemode != pygit2.enums.FileMode.LINK
            ]
            continue
        if not isinstance(obj, pygit2.Blob) or (obj is not top and not where.endswith(suffixes)):
            continue
        if obj.size > limit:
            raise ConfigurationError(
                f"{where} at {str(commit.id)[:7]} is {obj.size} bytes, more than "
                f"NEBULA_MAX_CONFIG_SIZE allows ({limit})"
            )
        out[where] = obj.data
    return out
