"""The git edge: the only package that talks to git remotes (through pygit2/libgit2).

``cache.GitCache`` asks remotes for branch heads, fetches only commits it lacks, and reads
files as blobs; ``urls`` classifies and sanitizes remote URLs; ``credentials`` hands tokens
and keys to libgit2; ``failures`` turns libgit2's errors into ours. Everything it returns is
a plain value from ``results``.
"""

from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.credentials import GitCredentials, HostToken, SshKey
from reconciler.gitsource.results import CommitInfo, GitCounters, HeadResult
from reconciler.gitsource.urls import sanitize_url

__all__ = [
    "CommitInfo",
    "GitCache",
    "GitCounters",
    "GitCredentials",
    "HeadResult",
    "HostToken",
    "SshKey",
    "sanitize_url",
]
