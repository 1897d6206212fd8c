"""An in-process Nebula for flow tests: a real store (SQLite file, or PostgreSQL), a real git
cache, the simulated cluster, a fake clock, and the real CLI run in-process.

``nebula`` runs on SQLite; ``nebula_any_db`` runs each test on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reconciler import bootstrap, reconciling
from reconciler.cli import local, main
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.settings import Settings
from reconciler.store import schema

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
DIGEST_C = "sha256:" + "c" * 64
DIGEST_D = "sha256:" + "d" * 64


def image(name: str, digest: str = DIGEST_A) -> str:
    return f"registry.example.com/shop/{name}@{digest}"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


class Nebula:
    """One Nebula installation under test."""

    def __init__(self, ctx: Context, clock: FakeClock, tmp: Path) -> None:
        self.ctx = ctx
        self.clock = clock
        self.tmp = tmp

    def cli(self, *args: str) -> Result:
        """Run ``nebula ARGS`` in-process; ``args`` may be one shell-quoted string."""
        argv = list(args) if len(args) != 1 else shlex.split(args[0])
        local.use(self.ctx)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main.main(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Result(code, out.getvalue(), err.getvalue())

    def ok(self, *args: str) -> Result:
        result = self.cli(*args)
        assert result.code == 0, f"nebula {' '.join(args)} exited {result.code}: {result.err}"
        return result

    def json(self, command: str) -> Any:
        return self.ok(command + " --json").json

    def reconcile(self, project: str | None = None) -> reconciling.PassReport:
        return reconciling.run_once(self.ctx, project)

    def settle(self, limit: int = 200, step: float = 1.0) -> None:
        """Tick (moving the fake clock by ``step`` s) until nothing can move by itself."""
        reconciling.run_once(self.ctx)
        for _ in range(limit):
            report = reconciling.run_once(self.ctx, poll=False)
            if not report.busy:
                return
            self.clock.advance(step)
        raise AssertionError("deployments still moving after the step limit")

    def status(self, project: str = "shop") -> dict[str, Any]:
        data = self.json(f"status {project}")
        return data["projects"][0]  # type: ignore[no-any-return]

    def unit(self, env: str, service: str, project: str = "shop") -> dict[str, Any]:
        for e in self.status(project)["environments"]:
            if e["name"] == env:
                for u in e["services"]:
                    if u["name"] == service:
                        return u  # type: ignore[no-any-return]
        raise AssertionError(f"no {service} in {env}")

    def deployments(self, project: str = "shop") -> list[dict[str, Any]]:
        return self.json(f"deployments {project}")["deployments"]  # type: ignore[no-any-return]

    def changesets(self, project: str = "shop") -> list[dict[str, Any]]:
        return self.json(f"changesets {project}")["changesets"]  # type: ignore[no-any-return]

    def approvals(self) -> list[dict[str, Any]]:
        return self.json("approvals")["approvals"]  # type: ignore[no-any-return]

    def events(self) -> list[schema.Event]:
        with self.ctx.db.transaction() as session:
            return list(session.query(schema.Event).order_by(schema.Event.id))


def _make(tmp_path: Path, url: str, **overrides: Any) -> Iterator[Nebula]:
    clock = FakeClock()
    settings = Settings(
        database_url=url,
        state_dir=tmp_path / "state",
        simulated_delay=timedelta(seconds=0),
        secret_key="",
        **overrides,
    )
    ctx = bootstrap.open_context(settings, clock)
    yield Nebula(ctx, clock, tmp_path)
    local.reset()
    ctx.db.dispose()
    if ctx.git is not None:
        ctx.git.close()


@pytest.fixture(autouse=True)
def _no_saved_contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's command line starts local: no contexts of the person running the tests,
    no server or token from their environment."""
    monkeypatch.setenv("NEBULA_CONFIG_HOME", str(tmp_path / "nebula-config"))
    monkeypatch.delenv("NEBULA_SERVER", raising=False)
    monkeypatch.delenv("NEBULA_TOKEN", raising=False)


@pytest.fixture
def nebula(tmp_path: Path) -> Iterator[Nebula]:
    yield from _make(tmp_path, f"sqlite:///{tmp_path / 'nebula.db'}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def nebula_any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Nebula]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'nebula.db'}"
    else:
        url = request.getfixturevalue("fresh_postgres_url")
    yield from _make(tmp_path, url)


def nebula_with(tmp_path: Path, **overrides: Any) -> Iterator[Nebula]:
    """For tests that need other settings (timeouts, faults): ``yield from nebula_with(...)``."""
    yield from _make(tmp_path, f"sqlite:///{tmp_path / 'nebula.db'}", **overrides)
