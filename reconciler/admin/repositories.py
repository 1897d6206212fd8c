"""Before a project is registered: its repository answers and has the tracked branch.

A project added with a typo in its URL or branch would otherwise be registered and then
blocked at its first poll, the mistake told only by ``nebula project list``. Asked once (one
ref advertisement, nothing fetched), the same way a poll asks; ``nebula project add
--no-check`` skips it, for a repository that is not there yet or not reachable from here now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler import suggestions
from reconciler.errors import ConfigurationError, NebulaError, shown
from reconciler.gitsource import failures, urls

if TYPE_CHECKING:
    from reconciler.gitsource.cache import GitCache

SKIP = "or register it anyway with --no-check"


def check(git: GitCache | None, repo: str, branch: str) -> None:
    """Raises ``ConfigurationError`` (exit 1, HTTP 422) when ``repo`` cannot be asked for its
    branches, or has no ``branch``; the hint names the branches there are."""
    if git is None:  # every route that adds a project opens the git cache: a bug otherwise
        raise ConfigurationError("the repository cannot be checked here", hint=SKIP)
    try:
        branches = git.branches(repo)
    except NebulaError as exc:
        raise ConfigurationError(
            exc.message.removesuffix(failures.RETRIED),
            hint=f"check the URL (and its host's credentials in NEBULA_GIT_CREDENTIALS), {SKIP}",
        ) from exc
    if branch not in branches:
        where = urls.sanitize_url(repo.strip())
        there = suggestions.hint(branch, branches, "its branches", none="it has no branch yet")
        raise ConfigurationError(
            f"{where} has no branch {shown(branch)}",
            hint=f"{there} (or push {shown(branch, quote=False)} first, {SKIP})",
        )
