"""Files only their owner may read: the state directory (0700) and what the store keeps in it
(0600): ``nebula.db`` with its ``-wal`` and ``-shm``, and ``secret.key``.

Set when they are created (each directory Nebula makes; the SQLite file before SQLite opens
it, and SQLite gives its ``-wal`` and ``-shm`` the database file's mode), and tightened when
they are opened, for files an earlier version created readable by others. A directory that
existed before (``NEBULA_STATE_DIR=$HOME``, say) keeps its mode: only its files are ours.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIRECTORY = 0o700
FILE = 0o600


def make_dir(path: Path) -> None:
    """``path`` and its missing parents, each one made 0700."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            directory.mkdir(mode=DIRECTORY)
            directory.chmod(DIRECTORY)  # whatever the umask let through


def create_file(path: Path) -> None:
    """An empty ``path`` made 0600 unless it exists; an existing one made 0600 (``tighten``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE)
    except FileExistsError:
        tighten(path)
    else:
        os.close(fd)


def tighten(path: Path) -> None:
    """Drop the group's and others' access to ``path``, if it exists and is ours."""
    try:
        info = path.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            path.chmod(stat.S_IMODE(info.st_mode) & ~0o077)
    except OSError:  # gone, or not ours to change: the store says so if it cannot be opened
        pass
