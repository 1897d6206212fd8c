"""Start-up is a feature (issue 25): ``nebula --version`` and ``--help`` import only what they
print; a remote command imports no store, ORM, Kubernetes client, web framework or manifest
validator (run with those made unimportable, and read with ``-X importtime``); a local
command on the simulated cluster imports no Kubernetes client, and a local status on SQLite
no ORM. Each in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import ThreadedServer

ROOT = Path(__file__).resolve().parents[2]
SERVER_SIDE = (
    "sqlalchemy", "alembic", "pygit2", "kubernetes", "kubernetes_validate", "fastapi",
    "starlette", "uvicorn", "jinja2", "psycopg", "cryptography", "apscheduler", "slack_sdk",
)  # fmt: skip
# Run as the console script runs it, with the modules named made unimportable first.
BLOCKED = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} must not be imported by this command")
sys.meta_path.insert(0, Blocked())
from reconciler.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


def _run(
    args: Sequence[str], *, blocked: Sequence[str] = (), **environ: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    env.update(PYTHONPATH=str(ROOT), **environ)
    code = BLOCKED.format(blocked=tuple(blocked))
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules ``-X importtime`` reported, after the first of Nebula's own (the ones
    Python's start-up loads, ``site`` and what it pulls in, are the interpreter's)."""
    names = [
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    first = next(i for i, name in enumerate(names) if name.startswith("reconciler"))
    return {name.split(".")[0] for name in names[first:]}


# What the standard library only probes for (Jython's ``org.python.core``, in ``copy``).
PROBED = {"org"}


def third_party(modules: set[str]) -> set[str]:
    ours = {"reconciler", "renderers"}
    return {name for name in modules if name not in sys.stdlib_module_names | ours | PROBED}


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_help_import_nothing_they_do_not_print(args: list[str], tmp_path: Path) -> None:
    result = _run(args, NEBULA_CONFIG_HOME=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert third_party(imported(result)) == set()
    assert "tomllib" not in imported(result), "no TOML is read: no --config, no contexts"
    if args == ["--version"]:
        assert result.stdout == "nebula 0.1.0\n"
        assert imported(result) <= {"reconciler"} | PROBED | set(sys.stdlib_module_names)


@pytest.fixture
def served(nebula: Nebula, git_repo: GitRepo) -> Iterator[tuple[str, str]]:
    git_repo.commit(
        {"nebula.toml": (ROOT / "fixtures/projects/storefront/nebula.toml").read_text()}
    )
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    with nebula.ctx.db.transaction() as session:
        people.member(session, nebula.clock, "olga", "owner")
        token = people.token(session, nebula.clock, "olga")
    with ThreadedServer(nebula.ctx) as server:
        yield server.url, token


@pytest.mark.parametrize(
    "args", [["status"], ["status", "shop", "-o", "yaml"], ["approvals"], ["audit"], ["whoami"]]
)
def test_a_remote_command_imports_nothing_of_the_server(
    served: tuple[str, str], args: list[str], tmp_path: Path
) -> None:
    url, token = served
    result = _run(
        args, blocked=SERVER_SIDE, NEBULA_SERVER=url, NEBULA_TOKEN=token,
        NEBULA_CONFIG_HOME=str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert imported(result) & set(SERVER_SIDE) == set()
    assert "httpx" in imported(result)
    assert "click" not in imported(result), "httpx's own command line stays out"
    assert "tomllib" not in imported(result), "no TOML is read: no --config, no contexts file"


def test_a_local_command_on_the_simulated_cluster_imports_no_kubernetes_client(
    tmp_path: Path,
) -> None:
    state = {"NEBULA_STATE_DIR": str(tmp_path / "state"), "NEBULA_CONFIG_HOME": str(tmp_path)}
    assert _run(["member", "add", "olga", "--role", "owner"], **state).returncode == 0
    result = _run(["status"], blocked=("kubernetes", "kubernetes_validate", "fastapi"), **state)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kubernetes" not in imported(result)


def test_a_local_status_on_sqlite_reads_the_store_without_the_orm(
    nebula: Nebula, git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit(
        {"nebula.toml": (ROOT / "fixtures/projects/storefront/nebula.toml").read_text()}
    )
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    local = {
        "NEBULA_DATABASE_URL": f"sqlite:///{nebula.ctx.db.path}",
        "NEBULA_STATE_DIR": str(tmp_path / "state"),
        "NEBULA_CONFIG_HOME": str(tmp_path),
    }
    result = _run(["status", "-o", "json"], blocked=SERVER_SIDE, **local)
    assert result.returncode == 0, result.stderr[-3000:]
    assert imported(result) & set(SERVER_SIDE) == set()
    assert json.loads(result.stdout)["projects"] == nebula.json("status")["projects"]
    # Anything else a local command does still loads the store (here: who the members are).
    assert _run(["member", "list"], **local).returncode == 0
