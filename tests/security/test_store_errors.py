"""Errors from the store never quote what a row holds, nor the database's password."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError

from reconciler.store import schema
from tests.plugins.git import free_port
from tests.plugins.nebula import Nebula
from tests.web.world import nebula_command


def test_a_failed_statement_does_not_quote_its_values(nebula: Nebula) -> None:
    canary = "cnry-row-" + secrets.token_hex(8)
    nebula.ok("project add shop --repo /srv/shop --no-check")
    with pytest.raises(IntegrityError) as failed, nebula.ctx.db.transaction() as session:
        session.add(
            schema.Project(
                slug="shop",
                repo_url=f"https://deploy:{canary}@git.example.com/shop.git",
                branch="main",
                path="nebula.toml",
                interval_seconds=60,
                clusters={},
                created_at=nebula.clock.now(),
            )
        )
        session.flush()
    assert "UNIQUE constraint failed" in str(failed.value)
    assert canary not in str(failed.value)
    assert "parameters hidden" in str(failed.value)


def test_an_unreachable_database_is_reported_without_its_password(tmp_path: Path) -> None:
    password = "cnry-dbpass-" + secrets.token_hex(8)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    env["NEBULA_DATABASE_URL"] = (
        f"postgresql+psycopg://nebula:{password}@127.0.0.1:{free_port()}/nebula"
    )
    env["NEBULA_STATE_DIR"] = str(tmp_path)
    result = subprocess.run(
        [*nebula_command(), "status"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: the database cannot be reached"), result.stderr
    assert password not in result.stdout + result.stderr
