"""The git cache a process polls with, made from the settings: its directory and the
credentials for https and ssh remotes. ``bootstrap`` loads this by name, only for a process
that polls (pygit2 and libgit2 cost a command that never polls a tenth of its start)."""

from __future__ import annotations

from pathlib import Path

from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.credentials import GitCredentials, SshKey
from reconciler.settings import Settings


def open_cache(settings: Settings) -> GitCache:
    key = settings.git_ssh_key
    return GitCache(
        settings.resolved_git_cache_dir,
        credentials=GitCredentials.parse(
            settings.git_credentials,
            ssh_key=SshKey(Path(key), passphrase=settings.git_ssh_key_passphrase) if key else None,
        ),
    )
