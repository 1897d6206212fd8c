"""Several servers on one store: SQLite refuses a second live server with a clear message;
PostgreSQL lets replicas share the work."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from reconciler.store import schema
from reconciler.store.database import Database
from tests.plugins.git import GitRepoFactory, free_port
from tests.web.world import (
    ServeProcess,
    eventually,
    nebula_command,
    serve_env,
    setup_store,
    shop_toml,
)

SECRET_KEY = "k1ZqK6eFq2m6l5j7x2Jt0w8M0Jm1lH6Vb9Wq3Rk5Ys8="
TICK = 1.0  # seconds between the scheduler's reconcile ticks


def test_a_second_server_on_the_same_sqlite_database_is_refused(tmp_path: Path) -> None:
    env = serve_env(tmp_path)
    first = ServeProcess(env, tmp_path / "first.log").start()
    try:
        second = subprocess.run(
            [*nebula_command(), "serve", "--port", str(free_port())],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 1
        assert "Another Nebula server (" in second.stderr
        assert (
            "is running on this SQLite database. SQLite has one writer: stop that server, or "
            "run several replicas on PostgreSQL (NEBULA_DATABASE_URL=postgresql+psycopg://...)."
            in second.stderr
        )
    finally:
        code, _ = first.stop()
    assert code == 0
    # Once the first has stopped (its lease released), a new server starts at once.
    again = ServeProcess(env, tmp_path / "again.log").start()
    assert again.stop()[0] == 0


@pytest.mark.postgres
def test_two_servers_share_one_postgresql_database(tmp_path: Path, fresh_postgres_url: str) -> None:
    env = serve_env(tmp_path, database_url=fresh_postgres_url, secret_key="")
    env["NEBULA_SECRET_KEY"] = SECRET_KEY
    one = ServeProcess(env, tmp_path / "one.log").start()
    two = ServeProcess(env, tmp_path / "two.log").start()
    try:
        assert one.stop()[0] == 0
    finally:
        assert two.stop()[0] == 0


@pytest.mark.postgres
def test_sigterm_mid_batch_finishes_it_releases_every_lease_and_the_other_replica_goes_on(
    tmp_path: Path, fresh_postgres_url: str, git_repos: GitRepoFactory
) -> None:
    """What Kubernetes does to a replica at a rollout or a node drain: SIGTERM while it holds
    deployments (each cluster call takes 0.3 s, so a batch is seconds long)."""
    repo = git_repos.local("shop")
    repo.commit({"README.md": "shop\n"}, "Start")  # nothing to deploy until both are up
    env = serve_env(
        tmp_path,
        database_url=fresh_postgres_url,
        simulated_delay="1s",
        simulated_latency="0.3s",
    )
    env["NEBULA_SECRET_KEY"] = SECRET_KEY
    setup_store(env, repo.url, interval=1)
    servers = {
        name: ServeProcess({**env, "NEBULA_REPLICA_ID": name}, tmp_path / f"{name}.log").start()
        for name in ("one", "two")
    }
    store = Database(fresh_postgres_url, migrate=False)
    try:
        repo.commit({"nebula.toml": shop_toml(production=False)}, "First version")
        holder = eventually(lambda: _holders(store, named=False), interval=0.01, what="a batch")
        stopping = sorted(holder)[0]
        other = next(name for name in servers if name != stopping)

        code, seconds = servers[stopping].stop()

        assert (code, seconds < 10) == (0, True)
        stopped = [
            json.loads(line)
            for line in servers[stopping].logs().splitlines()
            if '"scheduler stopped"' in line
        ]
        assert [line["clean"] for line in stopped] == [True]  # the batch in hand finished
        assert stopping not in _holders(store)  # nothing left held, not even until expiry
        exited = time.monotonic()
        eventually(
            lambda: other in _holders(store) or _finished(store),
            interval=0.01,
            timeout=TICK + 2,
            what=f"{other} taking over",
        )
        assert time.monotonic() - exited < TICK + 2
        eventually(lambda: _finished(store), timeout=60, what="every deployment ended")
    finally:
        store.dispose()
        for server in servers.values():
            server.kill()


def _holders(store: Database, *, named: bool = True) -> set[str]:
    """The replicas holding a deployment's lease, and (``named``) a named lease."""
    with store.transaction() as session:
        names = session.scalars(select(schema.Lease.owner)) if named else ()
        deployments = session.scalars(
            select(schema.Deployment.lease_owner).where(schema.Deployment.lease_owner.is_not(None))
        )
        return {str(owner) for owner in (*names, *deployments)}


def _finished(store: Database) -> bool:
    with store.transaction() as session:
        rows = session.scalars(select(schema.Deployment.finished_at)).all()
        return bool(rows) and all(at is not None for at in rows)
