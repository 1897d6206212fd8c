"""pygit2's C types are built before the git cache's threads use them (``cffitypes``): two
threads building one at once abort the process under cffi 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.plugins.git import GitRepoFactory

SCRIPT = """
import sys
from reconciler.gitsource import cffitypes
from reconciler.gitsource.cache import GitCache

print(cffitypes.realized())
with GitCache(sys.argv[1], concurrency=8) as cache:
    print(cffitypes.realized())
    heads = cache.heads([(url, "main") for url in sys.argv[2:]], fetch=True)
    print(sorted(h.error is None and h.commit is not None for h in heads.values()))
"""


def test_a_new_git_cache_builds_them_before_its_threads_fetch(
    tmp_path: Path, git_repos: GitRepoFactory
) -> None:
    urls = []
    for n in range(6):
        repo = git_repos.local(f"app{n}")
        repo.commit({"README": f"app {n}"}, "First")
        urls.append(repo.url)
    done = subprocess.run(  # a fresh process: nothing built yet
        [sys.executable, "-c", SCRIPT, str(tmp_path / "cache"), *urls],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.split("\n")[:3] == ["False", "True", str([True] * 6)]
