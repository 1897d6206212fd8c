"""What the server tests share: the project they push, its secret canary, members with API
tokens, and servers on loopback (the app in a thread, or ``nebula serve`` as a process)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx
import uvicorn
from fastapi import FastAPI

from fixtures import loading
from reconciler.admin import projects as project_rows
from reconciler.admin import secrets
from reconciler.context import Context
from reconciler.web.app import create_app
from tests.plugins import people
from tests.plugins.git import GitRepo, free_port
from tests.plugins.nebula import DIGEST_A, DIGEST_B, image

SLUG = "shop"
# A secret's value: it must never reach a page, an API answer or a log line.
CANARY = "canary-7d1f0c93e5b2-do-not-show"
API = image("api", DIGEST_A)
API_NEXT = image("api", DIGEST_B)
# An image the simulated cluster fails to pull (see FAULTS_TOML).
API_BROKEN = image("api", "sha256:" + "e" * 64)
FAULTS_TOML = f'[images."{API_BROKEN}"]\nfail = "image-pull"\n'


def shop_toml(*, api_image: str = API, level: str = "info", production: bool = True) -> str:
    """staging and (optionally) a protected production; an api reading a secret and a db:
    fixtures/projects/checkout."""
    edits = {API: api_image, 'LOG_LEVEL = "info"': f'LOG_LEVEL = "{level}"'}
    if not production:
        edits["\n[environments.production]\nprotected = true\n"] = ""
    return loading.project("checkout", edits)


@dataclass
class Tokens:
    """API tokens by member name: alice is an admin, bob a member, olga the owner."""

    by_name: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.by_name[name]}"}


def add_members(ctx: Context) -> Tokens:
    tokens = Tokens()
    with ctx.db.transaction() as session:
        for name, role in (("alice", "admin"), ("bob", "member"), ("olga", "owner")):
            people.member(session, ctx.clock, name, role)
            tokens.by_name[name] = people.token(session, ctx.clock, name)
    return tokens


def set_canary(
    ctx: Context, slug: str = SLUG, environments: tuple[str, ...] = ("staging", "production")
) -> None:
    with ctx.db.transaction() as session:
        project = project_rows.get(session, slug)
        for env in environments:
            secrets.put(session, ctx.clock, ctx.vault, project.id, env, "STRIPE_KEY", CANARY)


# -- the app in a thread -------------------------------------------------------------------


class AppServer:
    """A FastAPI app on uvicorn in a thread, on a free loopback port (no scheduler)."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_config=None,
            ws="none",
            lifespan="on",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the app did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


class ThreadedServer(AppServer):
    """``create_app(ctx)`` served as above."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(create_app(ctx))


# -- `nebula serve` as a process -----------------------------------------------------------


def nebula_command() -> list[str]:
    found = shutil.which("nebula") or str(Path(sys.executable).with_name("nebula"))
    if Path(found).exists():
        return [found]
    return [sys.executable, "-c", "from reconciler.cli.main import main; raise SystemExit(main())"]


@dataclass
class ServeProcess:
    """``nebula serve`` on a free port, with its own settings (environment variables)."""

    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Another ``nebula`` command against the same store (as an operator would run it)."""
        return subprocess.run(
            [*nebula_command(), *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def start(self, *extra: str) -> ServeProcess:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [*nebula_command(), "serve", "--port", str(self.port), *extra],
            env=self.env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nebula serve exited {self.process.returncode}:\n{self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"nebula serve did not answer within 60 s:\n{self.logs()}")

    def stop(self, timeout: float = 10.0) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds it took). Kills it if it overstays."""
        assert self.process is not None
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError(
                f"nebula serve did not stop within {timeout} s:\n{self.logs()}"
            ) from None
        return code, time.monotonic() - started

    def logs(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def setup_store(env: dict[str, str], repo_url: str, interval: int, slug: str = SLUG) -> str:
    """Members (alice admin, bob member), the project and its canary secret, in the store
    ``env`` names; returns alice's API token."""
    from datetime import timedelta

    from reconciler import bootstrap, settings

    ctx = bootstrap.open_context(settings.load(environ=env), git=False)
    try:
        with ctx.db.transaction() as session:
            people.member(session, ctx.clock, "alice", "admin")
            people.member(session, ctx.clock, "bob", "member")
            token = people.token(session, ctx.clock, "alice")
            project_rows.add(
                session, ctx.clock, slug, repo_url, interval=timedelta(seconds=interval)
            )
        set_canary(ctx, slug)
    finally:
        ctx.db.dispose()
    return token


def prepare_serve(
    tmp_path: Path, repo: GitRepo, *, interval: int, **settings: str
) -> tuple[ServeProcess, str]:
    """A ``nebula serve`` (not started yet) whose simulated cluster fails ``API_BROKEN``, on a
    store with members, the project at its first version and its canary secret, as an
    operator would set it up (written in-process: a CLI process per step would only add
    seconds of imports). Returns the process and alice's API token."""
    faults = tmp_path / "faults.toml"
    faults.write_text(FAULTS_TOML, encoding="utf-8")
    env = serve_env(tmp_path, simulated_faults=str(faults), **settings)
    repo.commit({"nebula.toml": shop_toml()}, "First version")
    return ServeProcess(env, tmp_path / "serve.log"), setup_store(env, repo.url, interval)


def set_webhook_secret(env: dict[str, str], secret: str, slug: str = SLUG) -> None:
    from reconciler import bootstrap, settings

    ctx = bootstrap.open_context(settings.load(environ=env), git=False)
    try:
        with ctx.db.transaction() as session:
            project = project_rows.get(session, slug)
            project_rows.set_value(session, ctx.vault, project, "webhook_secret", secret)
    finally:
        ctx.db.dispose()


def serve_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """The environment of a ``nebula serve`` under ``tmp_path``: its own store and git cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    env.update(
        NEBULA_STATE_DIR=str(tmp_path / "state"),
        NEBULA_SIMULATED_DELAY="0s",
        NEBULA_CLUSTER="simulated",
    )
    env.update({f"NEBULA_{k.upper()}": v for k, v in settings.items()})
    return env


def eventually(
    check: Callable[[], Any], *, timeout: float = 20.0, interval: float = 0.1, what: str = ""
) -> Any:
    """``check()``'s first truthy result, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"not within {timeout} s: {what or check} (last: {last!r})")


def api(url: str, path: str, **kwargs: Any) -> Any:
    response = httpx.get(f"{url}{path}", timeout=10, **kwargs)
    response.raise_for_status()
    return response.json()


def iter_units(status: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for env in status["environments"]:
        for unit in env["services"]:
            yield env["name"], unit
