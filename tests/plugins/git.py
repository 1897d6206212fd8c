"""Real git repositories for tests: made with pygit2, served by ``git daemon`` or smart HTTP.

Fixtures:

- ``git_repo``: a local (non-bare) repository ``app`` under ``tmp_path``; reach it by
  ``repo.url`` (a path) or ``repo.file_url``.
- ``git_repos``: a ``GitRepoFactory``; ``git_repos.local(name)`` or ``git_repos.served(name)``
  for a bare repository under the served root, reachable at ``repo.git_url`` (git daemon)
  and ``repo.http_url`` (smart HTTP that wants ``GIT_HTTP_TOKEN`` as the Basic password).
- ``git_daemon`` / ``git_http``: the session's servers (started on first use).
- ``git_cache``: a ``GitCache`` under ``tmp_path`` holding the token ``git_http`` wants.

Commits are written straight into the object database and refs, never through a working
tree, so a "push" is ``repo.commit({...})`` and a force-push is ``repo.rewrite({...})``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

import pygit2
import pytest
from pygit2.enums import FileMode

from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.credentials import GitCredentials
from tests.infra.quiet import QuietHandler

GIT_HTTP_TOKEN = "nbl-test-token-7f3a9c2e"
FIRST_COMMIT_TIME = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Author(NamedTuple):
    name: str
    email: str


DEFAULT_AUTHOR = Author("Ada Lovelace", "ada@example.com")


class Link(NamedTuple):
    """A symbolic link in a commit (its blob is the target path)."""

    target: str


Files = Mapping[str, "str | bytes | Link | None"]  # path -> content; None removes the file


class GitRepo:
    """A repository under test. ``branch`` defaults to ``main`` everywhere."""

    def __init__(
        self,
        path: Path,
        *,
        bare: bool,
        daemon: Callable[[], GitDaemon] | None = None,
        http: Callable[[], GitHttpServer] | None = None,
    ) -> None:
        self.path = path
        self.repo = pygit2.init_repository(str(path), bare=bare, initial_head="main")
        self._daemon = daemon
        self._http = http
        self._clock = FIRST_COMMIT_TIME

    # -- addresses --------------------------------------------------------------------

    @property
    def url(self) -> str:
        return str(self.path)

    @property
    def file_url(self) -> str:
        return self.path.as_uri()

    @property
    def git_url(self) -> str:
        if self._daemon is None:
            raise AssertionError("only repositories made with git_repos.served() have a git_url")
        return self._daemon().url(self.path.name)

    @property
    def http_url(self) -> str:
        if self._http is None:
            raise AssertionError("only repositories made with git_repos.served() have an http_url")
        return self._http().url(self.path.name)

    # -- history ----------------------------------------------------------------------

    def commit(
        self,
        files: Files,
        message: str = "Update nebula.toml",
        *,
        branch: str = "main",
        author: Author = DEFAULT_AUTHOR,
        when: datetime | None = None,
    ) -> str:
        """Commit ``files`` on top of the branch tip (creating the branch if needed)."""
        tip = self.head(branch)
        current = self.files(tip) if tip else {}
        return self._write(current, files, message, branch, author, when, [tip] if tip else [])

    def rewrite(
        self, files: Files, message: str = "Rewrite history", *, branch: str = "main"
    ) -> str:
        """A force-push: the branch now points at a new root commit holding only ``files``."""
        return self._write({}, files, message, branch, DEFAULT_AUTHOR, None, [])

    def reset(self, sha: str, *, branch: str = "main") -> None:
        """Point ``branch`` at any existing commit (a force-push back in history)."""
        self.repo.references.create(f"refs/heads/{branch}", pygit2.Oid(hex=sha), force=True)

    def delete_branch(self, name: str) -> None:
        self.repo.references.delete(f"refs/heads/{name}")

    def head(self, branch: str = "main") -> str | None:
        ref = self.repo.references.get(f"refs/heads/{branch}")
        return str(ref.target) if ref is not None else None

    def files(self, sha: str) -> dict[str, bytes]:
        commit = self.repo.get(sha)
        assert isinstance(commit, pygit2.Commit)
        return dict(_walk(self.repo, commit.tree, ""))

    def _write(
        self,
        current: dict[str, bytes],
        changes: Files,
        message: str,
        branch: str,
        author: Author,
        when: datetime | None,
        parents: list[str],
    ) -> str:
        merged: dict[str, bytes | Link] = dict(current)
        for path, content in changes.items():
            if content is None:
                merged.pop(path, None)
            else:
                merged[path] = content.encode() if isinstance(content, str) else content
        if when is None:
            self._clock += timedelta(minutes=1)
            when = self._clock
        signature = pygit2.Signature(author.name, author.email, int(when.timestamp()), 0)
        tree = _write_tree(self.repo, merged)
        oid = self.repo.create_commit(
            None, signature, signature, message, tree, [pygit2.Oid(hex=p) for p in parents]
        )
        self.repo.references.create(f"refs/heads/{branch}", oid, force=True)
        return str(oid)


def _write_tree(repo: pygit2.Repository, files: Mapping[str, bytes | Link]) -> pygit2.Oid:
    builder = repo.TreeBuilder()
    subdirs: dict[str, dict[str, bytes | Link]] = {}
    for path, data in files.items():
        head, sep, rest = path.strip("/").partition("/")
        if sep:
            subdirs.setdefault(head, {})[rest] = data
        elif isinstance(data, Link):
            builder.insert(head, repo.create_blob(data.target.encode()), FileMode.LINK)
        else:
            builder.insert(head, repo.create_blob(data), FileMode.BLOB)
    for name, sub in subdirs.items():
        builder.insert(name, _write_tree(repo, sub), FileMode.TREE)
    return builder.write()


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, bytes]]:
    for entry in tree:
        obj = repo.get(entry.id)
        if isinstance(obj, pygit2.Tree):
            yield from _walk(repo, obj, f"{prefix}{entry.name}/")
        elif isinstance(obj, pygit2.Blob):
            yield f"{prefix}{entry.name}", obj.data


class GitRepoFactory:
    def __init__(self, tmp_path: Path, served_root: Callable[[], ServedRoot]) -> None:
        self._tmp_path = tmp_path
        self._served_root = served_root

    def local(self, name: str = "app", *, bare: bool = False) -> GitRepo:
        return GitRepo(self._tmp_path / "repos" / name, bare=bare)

    def served(self, name: str = "app") -> GitRepo:
        """A bare repository the session's git daemon and HTTP server both serve."""
        root = self._served_root()
        unique = f"{name}-{uuid.uuid4().hex[:8]}.git"
        return GitRepo(root.path / unique, bare=True, daemon=root.daemon, http=root.http)


# -- servers ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing accepted connections on 127.0.0.1:{port} within 10 s")


class GitDaemon:
    """``git daemon`` on a free loopback port, exporting every repository under ``base_path``."""

    def __init__(self, base_path: Path) -> None:
        self.base_path = base_path
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> GitDaemon:
        self.port = free_port()
        command = [
            "git", "daemon", "--reuseaddr", f"--base-path={self.base_path}", "--export-all",
            "--enable=receive-pack", "--listen=127.0.0.1", f"--port={self.port}",
            "--max-connections=0", str(self.base_path),
        ]  # fmt: skip
        # Its own session, so stopping it also stops the upload-packs it forked.
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        wait_for_port(self.port, self._process)
        return self

    def stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGTERM)
        self._process.wait(timeout=10)
        self._process = None


class _GitHttpd(ThreadingHTTPServer):
    daemon_threads = True
    base_path: Path
    token: str | None
    requests: list[tuple[str, str, bool]]  # (method, path, authorized)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up (a refused clone) is not news, and stderr is a test's output


class _GitHttpHandler(QuietHandler):
    """Runs ``git http-backend`` as a CGI for every request."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _GitHttpd

    def do_GET(self) -> None:
        body = self._read_body()
        user = self._user()
        self.server.requests.append((self.command, self.path, user is not None))
        if user is None:
            self.answer(
                401, b"Authentication required\n", [("WWW-Authenticate", 'Basic realm="git"')]
            )
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.base_path),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": unquote(path),
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "REMOTE_USER": user,
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        output = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        ).stdout
        separator = b"\r\n\r\n" if b"\r\n\r\n" in output else b"\n\n"
        head, _, payload = output.partition(separator)
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.answer(status, payload, headers)

    do_POST = do_GET

    def _user(self) -> str | None:
        if self.server.token is None:
            return "anonymous"
        scheme, _, encoded = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        user, _, password = base64.b64decode(encoded).decode().partition(":")
        return user if self.server.token in (password, user) else None

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))


class GitHttpServer:
    """Git's smart HTTP on loopback; with a ``token``, every request needs it (Basic auth)."""

    def __init__(self, base_path: Path, token: str | None = None, *, port: int = 0) -> None:
        self.base_path = base_path
        self.token = token
        self._port = port
        self._server: _GitHttpd | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def requests(self) -> list[tuple[str, str, bool]]:
        assert self._server is not None
        return self._server.requests

    def url(self, name: str, *, userinfo: str | None = None) -> str:
        auth = f"{userinfo}@" if userinfo else ""
        return f"http://{auth}127.0.0.1:{self.port}/{name}"

    def start(self) -> GitHttpServer:
        server = _GitHttpd(("127.0.0.1", self._port), _GitHttpHandler)
        server.base_path, server.token, server.requests = self.base_path, self.token, []
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class ServedRoot(NamedTuple):
    path: Path
    daemon: Callable[[], GitDaemon]
    http: Callable[[], GitHttpServer]


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def git_served_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("git-served")


@pytest.fixture(scope="session")
def git_daemon(git_served_path: Path) -> Iterator[GitDaemon]:
    daemon = GitDaemon(git_served_path).start()
    yield daemon
    daemon.stop()


@pytest.fixture(scope="session")
def git_http(git_served_path: Path) -> Iterator[GitHttpServer]:
    server = GitHttpServer(git_served_path, token=GIT_HTTP_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def git_repos(
    tmp_path: Path, git_served_path: Path, request: pytest.FixtureRequest
) -> GitRepoFactory:
    def daemon() -> GitDaemon:
        found: GitDaemon = request.getfixturevalue("git_daemon")
        return found

    def http() -> GitHttpServer:
        found: GitHttpServer = request.getfixturevalue("git_http")
        return found

    return GitRepoFactory(tmp_path, lambda: ServedRoot(git_served_path, daemon, http))


@pytest.fixture
def git_repo(git_repos: GitRepoFactory) -> GitRepo:
    return git_repos.local("app")


@pytest.fixture
def git_cache(tmp_path: Path) -> Iterator[GitCache]:
    """A ``GitCache`` under ``tmp_path`` that holds the token ``git_http`` wants."""
    credentials = GitCredentials.parse(f"127.0.0.1={GIT_HTTP_TOKEN}")
    with GitCache(tmp_path / "git-cache", credentials=credentials, concurrency=4) as cache:
        yield cache
