"""An in-process Nebula on the real control plane: a SQLite store, a real git cache, the
Kubernetes runtime, and the real CLI run in-process.

Time is the system clock's, for the engine and the runtime alike. The cluster lives in real
time: the test kubelet stamps a pod's Ready condition with the wall clock, the controller
manager computes availability from it, and the runtime compares those stamps with
``clock.now()`` for stabilization and Job deadlines. A fake clock far from the wall clock would
make every such comparison meaningless, and moving one forward would not make a pod Ready any
sooner. So ``settle`` ticks in real time instead, pausing briefly only when a tick moved
nothing; the scenarios keep waits short with their own settings (1 s stabilization, a 3 s
route-activation timeout) and pay the engine's real retry backoff (1 + 2 + 4 s) where they
test it.
"""

from __future__ import annotations

import io
import json
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from reconciler import reconciling
from reconciler.cli import local, main
from reconciler.context import Context
from reconciler.gitops import polling
from reconciler.store import schema
from tests.plugins.git import GitRepo

TICK_PAUSE = 0.1  # seconds between ticks that moved nothing


@dataclass
class Result:
    code: int
    out: str
    err: str


class Crash(BaseException):
    """The reconciler 'dies' right after a cluster call, before committing what it did: a
    BaseException, so nothing on the way catches it, like SIGKILL in tests/engine/test_crash."""


class KubeNebula:
    def __init__(self, ctx: Context, project: str) -> None:
        self.ctx = ctx
        self.project = project

    # -- the CLI -----------------------------------------------------------------------------

    def cli(self, command: str) -> Result:
        local.use(self.ctx)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main.main(shlex.split(command))
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Result(code, out.getvalue(), err.getvalue())

    def ok(self, command: str) -> Result:
        result = self.cli(command)
        assert result.code == 0, f"nebula {command} exited {result.code}: {result.err}"
        return result

    def json(self, command: str) -> Any:
        return json.loads(self.ok(command + " --json").out)

    def status(self) -> dict[str, Any]:
        found: dict[str, Any] = self.json(f"status {self.project}")["projects"][0]
        return found

    def units(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(environment, service) -> its entry in ``nebula status --json``."""
        return {
            (env["name"], unit["name"]): unit
            for env in self.status()["environments"]
            for unit in env["services"]
        }

    def deployments(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.json(f"deployments {self.project}")["deployments"]
        return found

    def latest(self, service: str, env: str = "staging") -> dict[str, Any]:
        found = [
            d for d in self.deployments() if d["service"] == service and d["environment"] == env
        ]
        assert found, f"no deployment of {service} in {env}"
        return max(found, key=lambda d: int(d["id"]))

    def show(self, deployment_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.json(f"deployment show {deployment_id}")["deployment"]
        return found

    def notes(self, deployment_id: str) -> list[str]:
        return [
            e["message"]
            for e in self.show(deployment_id)["events"]
            if e["kind"] == "deployment.note"
        ]

    # -- git ---------------------------------------------------------------------------------

    def register(self, git_repo: GitRepo, text: str, contexts: dict[str, str]) -> None:
        """Commit the first nebula.toml, add the project and point each environment at its
        kubeconfig context (before the first poll, so nothing deploys anywhere else)."""
        git_repo.commit({"nebula.toml": text}, "First version")
        self.ok(f"project add {self.project} --repo {git_repo.url}")
        for env, context in contexts.items():
            self.ok(f"project set {self.project} cluster.{env} {context}")

    def first_deploy(self, git_repo: GitRepo, text: str, contexts: dict[str, str]) -> None:
        """Register the project and let every first deploy go healthy."""
        self.register(git_repo, text, contexts)
        self.settle()
        assert {(d["state"], d["blocker"]) for d in self.deployments()} == {("healthy", None)}

    def push(self, git_repo: GitRepo, text: str, message: str = "Change") -> None:
        """A push, polled: its change sets are staged and applied; nothing advances yet."""
        git_repo.commit({"nebula.toml": text}, message)
        self.poll()

    def poll(self) -> None:
        """Poll the project now: stage and apply what its head brings, advance nothing."""
        polling.poll(self.ctx, [self.project])

    # -- time --------------------------------------------------------------------------------

    def tick(self) -> reconciling.PassReport:
        """One reconcile pass without polling."""
        return reconciling.run_once(self.ctx, poll=False)

    def settle(self, done: Callable[[], bool] | None = None, timeout: float = 60.0) -> None:
        """Tick in real time until ``done()`` (default: until nothing can move by itself)."""
        reconciling.run_once(self.ctx, self.project)
        deadline = time.monotonic() + timeout
        while True:
            report = self.tick()
            if done() if done is not None else not report.busy:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not settled after {timeout:.0f}s: {self._summary()}")
            if not report.moved:
                time.sleep(TICK_PAUSE)

    def settle_deployment(self, deployment_id: str, timeout: float = 60.0) -> dict[str, Any]:
        """Tick until the deployment ended; returns it as ``deployment show`` does."""
        final = {"healthy", "failed", "cancelled", "rejected", "superseded"}
        self.settle(lambda: self.state(deployment_id) in final, timeout)
        return self.show(deployment_id)

    def state(self, deployment_id: str) -> str:
        """Read straight from the store: cheaper than the CLI when only ticking."""
        with self.ctx.db.transaction() as session:
            row = session.get(schema.Deployment, int(deployment_id))
            assert row is not None
            return row.state

    def hold_at(self, deployment_id: str, state: str, timeout: float = 30.0) -> None:
        """Tick until the deployment is in ``state``."""
        self.settle(lambda: self.state(deployment_id) == state, timeout)

    def kind_events(self) -> list[tuple[str, str | None]]:
        """(kind, message) of every event, oldest first."""
        with self.ctx.db.transaction() as session:
            rows = session.scalars(select(schema.Event).order_by(schema.Event.id))
            return [(e.kind, e.message) for e in rows]

    def unit_events(self) -> list[tuple[str | None, str | None]]:
        """(state, message) of the unit events (teardowns), oldest first."""
        with self.ctx.db.transaction() as session:
            rows = session.scalars(
                select(schema.Event).where(schema.Event.kind == "unit").order_by(schema.Event.id)
            )
            return [(e.state, e.message) for e in rows]

    def _summary(self) -> str:
        return "; ".join(
            f"{d['environment']}/{d['service']} {d['release']} {d['state']}"
            + (f" [{d['blocker']}]" if d["blocker"] else "")
            + f": {d['message']}"
            for d in self.deployments()
            if d["finished_at"] is None
        )

    # -- crashing ----------------------------------------------------------------------------

    @contextmanager
    def crashing_after(self, method: str, unit: str) -> Iterator[None]:
        """Within the block, the first cluster call ``method`` for ``unit`` raises ``Crash``
        once it has done its work."""
        real = self.ctx.clusters
        self.ctx.clusters = _CrashingClusters(real, method, unit)
        try:
            yield
        finally:
            self.ctx.clusters = real


class _CrashingClusters:
    """Stands in for ``reconciler.runtimes.registry.Clusters``."""

    def __init__(self, inner: Any, method: str, unit: str) -> None:
        self._inner = inner
        self._target = (method, unit)
        self.crashed = False

    def for_environment(self, contexts: dict[str, str] | None, environment: str) -> Any:
        return _CrashingCluster(self, self._inner.for_environment(contexts, environment))

    def close(self) -> None:
        self._inner.close()


class _CrashingCluster:
    # Calls naming their unit as an argument rather than through ``objects.unit``.
    BY_ARGUMENT = {"drain", "remove", "teardown", "selected_release"}

    def __init__(self, owner: _CrashingClusters, inner: Any) -> None:
        self._owner = owner
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            if name in self.BY_ARGUMENT:
                unit = args[1] if len(args) > 1 else kwargs.get("unit")
            else:
                unit = getattr(args[0], "unit", None) if args else None
            if (name, unit) == self._owner._target and not self._owner.crashed:
                self._owner.crashed = True
                raise Crash(f"crashed after {name} for {unit}")
            return result

        return call
