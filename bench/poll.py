"""How fast a poll of many repositories is, next to its baselines, in the same run.

    python bench/poll.py [--repos 1000] [--moved 100] [--concurrency 8] [--rounds 5]
                         [--transport git|http]

Builds N bare repositories served on loopback (``git daemon``, or with ``--transport http``
git's smart HTTP from a child process; either way the server's CPU is in neither contender's
figures), primes a ``GitCache`` with a first poll, then measures, round after round:

- an idle poll (no head moved): ``GitCache.heads(fetch=True)`` for every repository, against
  ``git -c protocol.version=0 ls-remote URL refs/heads/main`` for each, at the same concurrency
  (wall time, and CPU of the child processes against this process's CPU);
- a changed poll (``--moved`` heads moved since the last one): ``GitCache.heads(fetch=True)``
  (each worker ensures the heads it learns, so fetches overlap other advertisements) +
  read_file of nebula.toml, against a raw pygit2 script doing list_heads + fetch depth 1 +
  read blob into its own caches.

Figures are medians over the rounds; the order of the contenders rotates from round to round.
Targets: idle <= 1.0x the ls-remote wall time and <= 0.5x its CPU, with 0 fetches; changed
<= 1.25x the raw pygit2 script. ``--strict`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pygit2

from reconciler.gitsource.cache import GitCache
from tests.plugins.git import GitDaemon, GitRepo, free_port, wait_for_port

BRANCH = "main"
FILE = "nebula.toml"


@dataclass
class Sample:
    wall: float
    cpu: float


@dataclass
class Series:
    samples: list[Sample] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def measured(series: Series, *, children: bool) -> Iterator[None]:
    """Wall time and CPU time: of waited-for child processes, or of this process."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    cpu0, wall0 = _cpu(who), time.perf_counter()
    yield
    series.samples.append(Sample(time.perf_counter() - wall0, _cpu(who) - cpu0))


class HttpServerProcess:
    """``GitHttpServer`` in a child process, so its CPU (and its ``git http-backend``
    children's) lands in neither contender's figures until the run is over."""

    SERVE = (
        "import sys, threading; from pathlib import Path; "
        "from tests.plugins.git import GitHttpServer; "
        "GitHttpServer(Path(sys.argv[1]), port=int(sys.argv[2])).start(); "
        "threading.Event().wait()"
    )

    def __init__(self, base_path: Path) -> None:
        self.base_path = base_path
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self.port = free_port()
        root = str(Path(__file__).resolve().parents[1])
        self._process = subprocess.Popen(
            [sys.executable, "-c", self.SERVE, str(self.base_path), str(self.port)],
            cwd=root,
        )
        wait_for_port(self.port, self._process)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)


def toml(n: int, version: int) -> str:
    return f'name = "svc-{n}"\n\n[environments.production]\n# version {version}\n'


# -- baselines --------------------------------------------------------------------------


def ls_remote(url: str) -> str:
    out = subprocess.run(
        ["git", "-c", "protocol.version=0", "ls-remote", url, f"refs/heads/{BRANCH}"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    return out.split()[0]


class RawPygit2:
    """The plainest pygit2 poll: what ``GitCache`` should cost no more than 1.25x of."""

    def __init__(self, root: Path, urls: list[str]) -> None:
        self.root = root
        self.paths = {url: root / f"{i}.git" for i, url in enumerate(urls)}
        self.known: dict[str, str] = {}
        self.local = threading.local()
        root.mkdir(parents=True)
        pygit2.init_repository(str(root / "probe.git"), bare=True)

    def _probe(self) -> pygit2.Repository:
        if not hasattr(self.local, "repo"):
            self.local.repo = pygit2.Repository(str(self.root / "probe.git"))
        repo: pygit2.Repository = self.local.repo
        return repo

    def head(self, url: str) -> str:
        remote = self._probe().remotes.create_anonymous(url)
        for head in remote.list_heads():
            if head.name == f"refs/heads/{BRANCH}":
                return str(head.oid)
        raise RuntimeError(f"{url} has no {BRANCH}")

    def poll(self, url: str) -> bytes | None:
        sha = self.head(url)
        if self.known.get(url) == sha:
            return None
        path = self.paths[url]
        if path.exists():
            repo = pygit2.Repository(str(path))
        else:
            repo = pygit2.init_repository(str(path), bare=True)
        remote = repo.remotes.create_anonymous(url)
        remote.fetch([f"+refs/heads/{BRANCH}:refs/remotes/origin/{BRANCH}"], depth=1)
        commit = repo.get(sha)
        assert isinstance(commit, pygit2.Commit)
        blob = commit.tree[FILE]
        assert isinstance(blob, pygit2.Blob)
        self.known[url] = sha
        return blob.data


# -- the contender ----------------------------------------------------------------------


class Ours:
    def __init__(self, cache: GitCache) -> None:
        self.cache = cache
        self.known: dict[str, str] = {}

    def poll(self, urls: list[str]) -> dict[str, bytes | None]:
        """What the poller does: heads (fetching what moved as it goes), then read the files."""
        heads = self.cache.heads(((url, BRANCH) for url in urls), fetch=True)
        contents: dict[str, bytes | None] = {}
        for (url, _), head in heads.items():
            if head.error is not None:
                raise head.error
            if head.commit is None:
                raise RuntimeError(f"{url} has no {BRANCH}")
            if self.known.get(url) != head.commit:
                contents[url] = self.cache.read_file(url, head.commit, FILE)
                self.known[url] = head.commit
        return contents


def run_pool(concurrency: int, fn: Callable[[str], object], urls: list[str]) -> list[object]:
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(fn, urls))


# -- the run ----------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


class Bench:
    def __init__(self, workdir: Path, urls: list[str], repos: list[GitRepo], concurrency: int):
        self.urls = urls
        self.repos = repos
        self.concurrency = concurrency
        self.cache = GitCache(workdir / "cache", concurrency=concurrency)
        self.ours = Ours(self.cache)
        self.raw = RawPygit2(workdir / "raw", urls)
        self.first_ours, self.first_raw = Series(), Series()
        self.idle_ls, self.idle_ours, self.idle_raw = Series(), Series(), Series()
        self.changed_ours, self.changed_raw = Series(), Series()
        self.idle_fetches: list[int] = []
        self.idle_calls: list[int] = []
        self.changed_fetches: list[int] = []

    def first_poll(self) -> None:
        with measured(self.first_ours, children=False):
            self.ours.poll(self.urls)
        with measured(self.first_raw, children=False):
            run_pool(self.concurrency, self.raw.poll, self.urls)

    def round(self, number: int, moved: list[int]) -> None:
        """One idle poll, then move heads, then one changed poll; who goes first rotates."""
        idle = [self.idle_baseline, self.idle_cache, self.idle_raw_heads]
        for step in idle[number % 3 :] + idle[: number % 3]:
            step()

        for n in moved:
            self.repos[n].commit({FILE: toml(n, number + 1)}, f"Round {number + 1}")
        expected = {self.urls[n]: toml(n, number + 1).encode() for n in moved}
        changed = [self.changed_cache, self.changed_baseline]
        for changed_step in changed if number % 2 == 0 else reversed(changed):
            changed_step(expected)

    def idle_raw_heads(self) -> None:
        with measured(self.idle_raw, children=False):
            run_pool(self.concurrency, self.raw.head, self.urls)

    def idle_baseline(self) -> None:
        with measured(self.idle_ls, children=True):
            shas = run_pool(self.concurrency, ls_remote, self.urls)
        assert shas == [self.ours.known[u] for u in self.urls]

    def idle_cache(self) -> None:
        before = self.cache.counters()
        with measured(self.idle_ours, children=False):
            contents = self.ours.poll(self.urls)
        after = self.cache.counters()
        assert contents == {}
        self.idle_fetches.append(after.fetches - before.fetches)
        self.idle_calls.append(after.remote_calls - before.remote_calls)

    def changed_baseline(self, expected: dict[str, bytes]) -> None:
        with measured(self.changed_raw, children=False):
            got = run_pool(self.concurrency, self.raw.poll, self.urls)
        assert {u: c for u, c in zip(self.urls, got, strict=True) if c is not None} == expected

    def changed_cache(self, expected: dict[str, bytes]) -> None:
        before = self.cache.fetches
        with measured(self.changed_ours, children=False):
            contents = self.ours.poll(self.urls)
        self.changed_fetches.append(self.cache.fetches - before)
        assert contents == expected

    def report(self, where: str, moved: int, rounds: int, built: float) -> bool:
        """Print the figures; True when every target is met."""
        idle_wall = self.idle_ours.wall / self.idle_ls.wall
        idle_cpu = self.idle_ours.cpu / self.idle_ls.cpu
        changed_wall = self.changed_ours.wall / self.changed_raw.wall
        fetches = sum(self.idle_fetches)
        row = "  {:<52} wall {:7.3f} s   CPU {:7.3f} s {}"
        print(
            f"Nebula poll benchmark: {len(self.urls)} repositories over {where}, {moved} moved "
            f"per round, concurrency {self.concurrency}, median of {rounds} round(s), "
            f"{os.cpu_count()} CPUs"
        )
        print(f"  setup: built the repositories in {built:.2f} s")
        print(
            f"  first poll (fetch everything): GitCache {self.first_ours.wall:.2f} s, "
            f"raw pygit2 {self.first_raw.wall:.2f} s"
        )
        print("\nidle poll (no head moved)")
        print(
            row.format(
                "git ls-remote, protocol v0",
                self.idle_ls.wall,
                self.idle_ls.cpu,
                "(child processes)",
            )
        )
        print(
            row.format(
                "GitCache.heads(fetch=True)",
                self.idle_ours.wall,
                self.idle_ours.cpu,
                "(this process)",
            )
        )
        print(
            row.format(
                "raw pygit2 list_heads (for information)",
                self.idle_raw.wall,
                self.idle_raw.cpu,
                "(this process)",
            )
        )
        print(f"  remote calls per poll: {max(self.idle_calls)}; fetches: {fetches}")
        print(f"  wall {idle_wall:.2f}x ls-remote (target <= 1.0x): {verdict(idle_wall <= 1.0)}")
        print(f"  CPU  {idle_cpu:.2f}x ls-remote (target <= 0.5x): {verdict(idle_cpu <= 0.5)}")
        print(f"  fetches {fetches} (target 0): {verdict(fetches == 0)}")
        print(f"\nchanged poll ({moved} heads moved)")
        print(
            row.format(
                "raw pygit2 (list_heads + fetch depth 1 + read blob)",
                self.changed_raw.wall,
                self.changed_raw.cpu,
                "",
            )
        )
        print(
            row.format(
                "GitCache (heads with ensure + read_file)",
                self.changed_ours.wall,
                self.changed_ours.cpu,
                "",
            )
        )
        print(f"  fetches per poll: {sorted(set(self.changed_fetches))}")
        print(
            f"  wall {changed_wall:.2f}x raw pygit2 (target <= 1.25x): {verdict(changed_wall <= 1.25)}"
        )
        return idle_wall <= 1.0 and idle_cpu <= 0.5 and fetches == 0 and changed_wall <= 1.25


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--moved", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--transport", choices=["git", "http"], default="git")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    moved = min(args.moved, args.repos)
    workdir = Path(tempfile.mkdtemp(prefix="nebula-bench-poll-"))
    served = workdir / "served"
    served.mkdir()
    server: GitDaemon | HttpServerProcess
    server = GitDaemon(served) if args.transport == "git" else HttpServerProcess(served)
    try:
        started = time.perf_counter()
        repos = [GitRepo(served / f"svc-{n:04d}.git", bare=True) for n in range(args.repos)]
        for n, repo in enumerate(repos):
            repo.commit({FILE: toml(n, 0)}, "Initial commit")
        built = time.perf_counter() - started
        server.start()
        bench = Bench(workdir, [server.url(r.path.name) for r in repos], repos, args.concurrency)
        bench.first_poll()
        rng = random.Random(7)
        for number in range(args.rounds):
            bench.round(number, rng.sample(range(len(repos)), moved))
        bench.cache.close()
        met = bench.report(server.url("<name>.git"), moved, args.rounds, built)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if met or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
