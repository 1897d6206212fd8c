"""A person's laptop against ``nebula serve`` (issue 25): ``nebula login`` checks the token and
saves a context (0600, never printed), every command then acts through the server as that
member, the rights hold there (the approve grant, the self-approval rule, ``--as`` refused),
and ``logout`` makes the command line local again. Real processes: the server and each
command, with a store of their own."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.git import GitRepo
from tests.web.world import ServeProcess, eventually, nebula_command, prepare_serve

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, str]]:
    repo = GitRepo(tmp_path / "repos" / "shop", bare=False)
    server, token = prepare_serve(tmp_path, repo, interval=1)
    server.start()
    yield server, token
    server.kill()


def laptop(
    tmp_path: Path, *args: str, stdin: str | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``nebula ARGS`` on a machine with no store: only its contexts (``tmp_path/laptop``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    env.update(NEBULA_CONFIG_HOME=str(tmp_path / "laptop"), NEBULA_STATE_DIR=str(tmp_path / "none"))
    env.update(extra)
    return subprocess.run(
        [*nebula_command(), *args], env=env, input=stdin, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_login_then_everything_through_the_server(
    served: tuple[ServeProcess, str], tmp_path: Path
) -> None:
    server, alice = served
    made = server.cli("token", "create", "--as", "bob", "--name", "laptop")
    assert made.returncode == 0, made.stderr
    bob = made.stdout.strip()
    logged = laptop(tmp_path, "login", server.url, "--token-stdin", "--name", "prod", stdin=bob)
    assert logged.returncode == 0, logged.stderr
    config = tmp_path / "laptop" / "config.toml"
    assert logged.stdout == (
        f"Logged in to {server.url} as bob (member); context 'prod' saved in {config} and in use\n"
    )
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    listed = laptop(tmp_path, "context", "list", "-o", "json")
    assert bob not in listed.stdout and bob not in laptop(tmp_path, "context", "list").stdout
    assert listed.stdout and '"current": "prod"' in listed.stdout
    me = laptop(tmp_path, "whoami", "-o", "json")
    assert '"member": "bob"' in me.stdout and '"mode": "remote"' in me.stdout
    # The store is the server's: this machine has none, and made none.
    pending = eventually(
        lambda: [
            line
            for line in laptop(tmp_path, "approvals", "--state", "pending").stdout.splitlines()
            if "production" in line
        ],
        what="production's approval",
    )
    approval = pending[0].split()[0]
    assert not (tmp_path / "none").exists()
    refused = laptop(tmp_path, "approve", approval)
    assert (refused.returncode, refused.stderr.splitlines()[0]) == (
        1,
        "error: bob may not approve in shop/production: needs the approve grant or the admin role",
    )
    forged = laptop(tmp_path, "approve", approval, "--as", "alice")
    assert forged.returncode == 1
    assert forged.stderr.splitlines()[0].startswith(
        "error: --as is only for local administration; this command acts as bob (token "
    )
    # alice (an admin) approves with her own token, from the environment (a CI job's way).
    approved = laptop(tmp_path, "approve", approval, NEBULA_TOKEN=alice)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"approval {approval} approved by alice")
    gone = laptop(tmp_path, "logout")
    assert gone.returncode == 0 and "forgotten" in gone.stdout
    assert bob not in config.read_text()
    local = laptop(tmp_path, "whoami", "-o", "json")
    assert '"mode": "local"' in local.stdout


def test_a_secret_goes_in_the_body_once_and_never_comes_back(
    served: tuple[ServeProcess, str], tmp_path: Path
) -> None:
    server, alice = served
    value = "sk_live_laptop_canary_5a7d"
    done = laptop(
        tmp_path, "secret", "set", "shop", "staging", "PAYMENT_KEY", stdin=value,
        NEBULA_SERVER=server.url, NEBULA_TOKEN=alice,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "secret PAYMENT_KEY set for shop/staging\n"
    assert value not in server.logs(), "neither a URL nor a log line holds the value"
    audit = laptop(tmp_path, "audit", "-o", "json", NEBULA_SERVER=server.url, NEBULA_TOKEN=alice)
    assert "PAYMENT_KEY" in audit.stdout and value not in audit.stdout


def test_a_login_with_a_bad_token_saves_nothing(
    served: tuple[ServeProcess, str], tmp_path: Path
) -> None:
    server, _ = served
    refused = laptop(
        tmp_path, "login", server.url, "--token-stdin", stdin="nbl_0badc0de_" + "x" * 30
    )
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "error: the server refused the token (401): Invalid bearer token",
        "hint: check the token: nebula token create makes one (shown once)",
    ]
    assert not (tmp_path / "laptop" / "config.toml").exists()


def test_a_config_others_may_read_is_not_used(tmp_path: Path) -> None:
    home = tmp_path / "laptop"
    home.mkdir()
    config = home / "config.toml"
    config.write_text('current = "x"\n[contexts.x]\nserver = "http://127.0.0.1:9"\ntoken = "t"\n')
    config.chmod(0o644)
    refused = laptop(tmp_path, "status")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == (
        f"error: {config} may be read by others (mode 0644): the tokens in it are not used"
    )
