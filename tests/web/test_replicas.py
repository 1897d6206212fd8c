"""Several servers on one store: SQLite refuses a second live server with a clear message;
PostgreSQL lets replicas share the work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.plugins.git import free_port
from tests.web.world import ServeProcess, nebula_command, serve_env


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
    env["NEBULA_SECRET_KEY"] = "k1ZqK6eFq2m6l5j7x2Jt0w8M0Jm1lH6Vb9Wq3Rk5Ys8="
    one = ServeProcess(env, tmp_path / "one.log").start()
    two = ServeProcess(env, tmp_path / "two.log").start()
    try:
        assert one.stop()[0] == 0
    finally:
        assert two.stop()[0] == 0
