"""A local cache of remote repositories: ask for heads cheaply, fetch only what moved.

One bare repository per remote URL lives under the cache root (``<sha256(url)[:16]>.git``,
the URL taken without its credentials). Asking for heads uses ``Remote.list_heads`` on an
anonymous remote of a scratch "probe" repository: the remote advertises its refs and no
object is transferred, so an idle poll of a thousand projects is a thousand ref
advertisements and nothing else. A fetch names the branch, not the commit (servers refuse
arbitrary commit ids by default), with ``+`` so a force-push simply replaces the cached tip.
Files are read as blobs of the commit's tree; nothing is ever checked out.

Threads: libgit2 releases the GIL while it waits on the network, so remotes are asked from a
small pool. Each thread has its own probe ``Repository`` (libgit2 objects are not shared
across threads), fetches into one cache repository are serialized by a per-URL lock, and
reads open their own ``Repository``; pygit2's C types are built before any thread shares them
(``cffitypes``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pygit2

from reconciler.errors import (
    Blocker,
    ConfigurationError,
    NebulaError,
    PermanentError,
    TransientError,
)
from reconciler.gitsource import cffitypes, failures, trees, urls
from reconciler.gitsource.credentials import NO_CREDENTIALS, GitCredentials, OneShotCallbacks
from reconciler.gitsource.results import CommitInfo, FileEntry, GitCounters, HeadResult, Target

log = logging.getLogger(__name__)

_COMMIT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_LIBGIT2_ERRORS = (pygit2.GitError, ValueError, KeyError)
CACHED_REFS = "refs/nebula/heads/"

_In = TypeVar("_In")
_Out = TypeVar("_Out")


class GitCache:
    def __init__(
        self,
        root: Path,
        *,
        credentials: GitCredentials = NO_CREDENTIALS,
        concurrency: int = 8,
        connect_timeout: float = 10.0,
        io_timeout: float = 60.0,
    ) -> None:
        """``concurrency`` is how many remotes are asked at once.

        The timeouts are libgit2 options and so apply to the whole process: a hung server
        must not hold a poll forever, and a short connect timeout keeps an unreachable host
        from delaying every other project.
        """
        cffitypes.realize()  # before any of the pool's threads uses pygit2
        self.root = Path(root)
        self._credentials = credentials
        self._concurrency = max(1, concurrency)
        self._probe_path = self.root / "probe.git"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not (self._probe_path / "HEAD").exists():
                pygit2.init_repository(str(self._probe_path), bare=True)
        except (OSError, pygit2.GitError) as exc:  # a full or read-only disk
            raise ConfigurationError(
                f"the git cache {self.root} cannot be created: {str(exc).splitlines()[0]}",
                hint="free space on its disk and make it writable (NEBULA_GIT_CACHE_DIR)",
            ) from exc
        pygit2.settings.server_connect_timeout = int(connect_timeout * 1000)
        pygit2.settings.server_timeout = int(io_timeout * 1000)
        self._thread_state = threading.local()
        self._guard = threading.Lock()
        self._url_locks: dict[str, threading.Lock] = {}
        self._counters = GitCounters()
        self._executor: ThreadPoolExecutor | None = None
        # (cache key, commit) already in the cache. Nothing is ever pruned from a cache
        # repository, so an entry stays true, and an idle poll checks it without opening
        # a thousand repositories.
        self._known_commits: set[tuple[str, str]] = set()

    # -- counters ---------------------------------------------------------------------

    @property
    def remote_calls(self) -> int:
        return self._counters.remote_calls

    @property
    def fetches(self) -> int:
        return self._counters.fetches

    def counters(self) -> GitCounters:
        with self._guard:
            return replace(self._counters)

    def _count(self, *, remote_calls: int = 0, fetches: int = 0) -> None:
        with self._guard:
            self._counters.remote_calls += remote_calls
            self._counters.fetches += fetches

    # -- heads ------------------------------------------------------------------------

    def heads(self, targets: Iterable[Target], *, fetch: bool = False) -> dict[Target, HeadResult]:
        """The head of every (url, branch), asking each distinct URL once.

        With ``fetch``, each worker also ``ensure``s the heads it just learned (a no-op for a
        commit already cached), so the fetches of moved heads overlap with the advertisements
        of other remotes instead of waiting for the slowest of a thousand. A head that was
        advertised but could not be fetched comes back with both ``commit`` and ``error``.
        """
        wanted: dict[str, list[str]] = {}
        for url, branch in targets:
            branches = wanted.setdefault(url, [])
            if branch not in branches:
                branches.append(branch)

        def ask(url: str) -> list[HeadResult]:
            return self._heads_of(url, wanted[url], fetch=fetch)

        results: dict[Target, HeadResult] = {}
        for url, answers in zip(wanted, self._map(ask, list(wanted)), strict=True):
            for branch, answer in zip(wanted[url], answers, strict=True):
                results[(url, branch)] = answer
        return results

    def _heads_of(self, url: str, branches: list[str], *, fetch: bool) -> list[HeadResult]:
        advertised = self._advertised(url)
        if isinstance(advertised, NebulaError):
            error = _as_result_error(advertised)
            return [HeadResult(None, error) for _ in branches]
        results = []
        for branch in branches:
            commit = advertised.get(f"refs/heads/{branch}")
            failed: NebulaError | None = None
            if fetch and commit is not None:
                try:
                    self.ensure(url, branch, commit)
                except NebulaError as exc:
                    failed = exc
            results.append(HeadResult(commit, _as_result_error(failed) if failed else None))
        return results

    def branches(self, url: str) -> list[str]:
        """The branches ``url`` has, sorted (one ref advertisement, nothing fetched); raises
        our error when it cannot be asked (``nebula project add`` checks with this)."""
        advertised = self._advertised(url)
        if isinstance(advertised, NebulaError):
            raise advertised
        return sorted(name.removeprefix("refs/heads/") for name in advertised)

    def _advertised(self, url: str) -> dict[str, str] | NebulaError:
        """The branches ``url`` advertises (ref name -> commit id), or why it could not say."""
        doing = "list the branches of"
        try:
            remote = urls.parse(url)
            self._check_local_path(remote, doing)
            self._count(remote_calls=1)
            probe = self._probe()
            try:
                anonymous = probe.remotes.create_anonymous(remote.raw)
                heads = anonymous.list_heads(callbacks=self._callbacks(remote))
            except _LIBGIT2_ERRORS as exc:
                raise failures.wrap(exc, remote, doing, self._credentials.secrets()) from exc
        except NebulaError as error:
            return error
        return {
            head.name: str(head.oid)
            for head in heads
            if head.name is not None and head.name.startswith("refs/heads/")
        }

    # -- fetching ---------------------------------------------------------------------

    def ensure(self, url: str, branch: str, commit: str) -> None:
        """Make ``commit`` (the head of ``branch`` seen by ``heads``) available locally.

        Does nothing when the commit is already cached. Otherwise fetches the branch tip,
        shallow where the transport allows it. If the branch moved again in between, the
        fetched tip is a different commit; that raises ``TransientError`` and the next poll
        sees the newer head.
        """
        if not _COMMIT_ID.match(commit):
            raise PermanentError(f"{commit!r} is not a commit id.", code=Blocker.DELIVERY)
        remote = urls.parse(url)
        key = (remote.cache_key, commit)
        if key in self._known_commits:
            return
        with self._lock_for(remote):
            repo = self._open(remote, create=True)
            assert repo is not None
            if _lookup_commit(repo, commit) is None:
                doing = f"fetch {branch} from"
                self._check_local_path(remote, doing)
                self._fetch(repo, remote, branch, doing)
                if _lookup_commit(repo, commit) is None:
                    raise TransientError(
                        f"{branch} of {remote.safe} moved while {commit[:7]} was being fetched. "
                        "The next poll fetches the new head.",
                        code=Blocker.DELIVERY,
                    )
        with self._guard:
            self._known_commits.add(key)

    def ensure_many(
        self, items: Iterable[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], NebulaError | None]:
        """``ensure`` for each (url, branch, commit), several remotes at once; None means done."""
        wanted = list(dict.fromkeys(items))

        def one(item: tuple[str, str, str]) -> NebulaError | None:
            try:
                self.ensure(*item)
            except NebulaError as error:
                return error
            return None

        return dict(zip(wanted, self._map(one, wanted), strict=True))

    def _fetch(
        self, repo: pygit2.Repository, remote: urls.RemoteUrl, branch: str, doing: str
    ) -> None:
        refspec = f"+refs/heads/{branch}:{CACHED_REFS}{branch}"
        depth = 1 if remote.transport.supports_shallow else 0
        anonymous = repo.remotes.create_anonymous(remote.raw)
        while True:
            self._count(fetches=1)
            log.debug("fetching %s from %s (depth %s)", branch, remote.safe, depth or "full")
            try:
                anonymous.fetch([refspec], callbacks=self._callbacks(remote), depth=depth)
                return
            except _LIBGIT2_ERRORS as exc:
                if depth and "shallow" in str(exc).lower():
                    depth = 0  # a server without shallow support: take the whole history
                    continue
                raise failures.wrap(exc, remote, doing, self._credentials.secrets()) from exc

    # -- reading ----------------------------------------------------------------------

    def read_file(self, url: str, commit: str, path: str) -> bytes | None:
        """The file at ``path`` in ``commit`` (already fetched), or None when there is none."""
        repo, found = self._cached_commit(url, commit)
        entry = trees.entry(found, path)
        blob = repo.get(entry.id) if entry is not None else None
        return blob.data if isinstance(blob, pygit2.Blob) else None

    def files_under(
        self, url: str, commit: str, path: str, suffixes: tuple[str, ...], limit: int
    ) -> dict[str, bytes]:
        """``trees.files_under`` in ``commit`` (already fetched)."""
        repo, found = self._cached_commit(url, commit)
        return trees.files_under(repo, found, path, suffixes, limit)

    def file_entry(self, url: str, commit: str, path: str) -> FileEntry | None:
        """The size of the file at ``path`` and whether it is a symbolic link, read from the
        object's header (the file itself is not loaded); None when there is no file there."""
        repo, found = self._cached_commit(url, commit)
        entry = trees.entry(found, path)
        if entry is None or entry.type_str != "blob":
            return None
        _, size = repo.odb.read_header(entry.id)
        return FileEntry(size=size, link=entry.filemode == pygit2.enums.FileMode.LINK)

    def commit_info(self, url: str, commit: str) -> CommitInfo:
        _, found = self._cached_commit(url, commit)
        sha = str(found.id)
        message = found.message
        return CommitInfo(
            sha=sha,
            short_sha=sha[:7],
            author_name=found.author.name,
            author_email=found.author.email,
            summary=message.strip().splitlines()[0] if message.strip() else "",
            message=message,
            committed_at=datetime.fromtimestamp(found.commit_time, UTC),
        )

    def _cached_commit(self, url: str, commit: str) -> tuple[pygit2.Repository, pygit2.Commit]:
        remote = urls.parse(url)
        repo = self._open(remote, create=False)
        found = (
            _lookup_commit(repo, commit) if repo is not None and _COMMIT_ID.match(commit) else None
        )
        if repo is None or found is None:
            raise PermanentError(
                f"Commit {commit[:7]} of {remote.safe} is not in the git cache; "
                "ensure() must fetch it before it is read.",
                code=Blocker.DELIVERY,
            )
        return repo, found

    # -- plumbing ---------------------------------------------------------------------

    def repository_path(self, url: str) -> Path:
        return self.root / f"{urls.parse(url).cache_key}.git"

    def _open(self, remote: urls.RemoteUrl, *, create: bool) -> pygit2.Repository | None:
        path = self.root / f"{remote.cache_key}.git"
        if (path / "HEAD").exists():
            return pygit2.Repository(str(path))
        if not create:
            return None
        repo = pygit2.init_repository(str(path), bare=True)
        (path / "description").write_text(f"Nebula's cache of {remote.safe}\n", encoding="utf-8")
        return repo

    def _probe(self) -> pygit2.Repository:
        probe: pygit2.Repository | None = getattr(self._thread_state, "probe", None)
        if probe is None:
            probe = pygit2.Repository(str(self._probe_path))
            self._thread_state.probe = probe
        return probe

    def _lock_for(self, remote: urls.RemoteUrl) -> threading.Lock:
        with self._guard:
            return self._url_locks.setdefault(remote.cache_key, threading.Lock())

    def _callbacks(self, remote: urls.RemoteUrl) -> OneShotCallbacks:
        return OneShotCallbacks(remote, self._credentials)

    @staticmethod
    def _check_local_path(remote: urls.RemoteUrl, doing: str) -> None:
        path = urls.local_path(remote)
        if path is not None and not path.exists():
            raise failures.missing_path(remote, doing)

    def _map(self, fn: Callable[[_In], _Out], items: list[_In]) -> Iterator[_Out]:
        if len(items) <= 1 or self._concurrency == 1:
            return map(fn, items)
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self._concurrency, thread_name_prefix="nebula-git"
                )
            executor = self._executor
        return executor.map(fn, items)

    def close(self) -> None:
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def __enter__(self) -> GitCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _lookup_commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit | None:
    try:
        found = repo.get(sha)
    except _LIBGIT2_ERRORS:
        return None
    return found if isinstance(found, pygit2.Commit) else None


def _as_result_error(error: NebulaError) -> TransientError | PermanentError:
    if isinstance(error, TransientError | PermanentError):
        return error
    return PermanentError(error.message, code=Blocker.DELIVERY)
