"""Following what happens: ``history``, ``wait`` (exit 0/1/3), ``status --watch``, the secret
prompt on a terminal, shell completion generated from the parser."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures import loading
from reconciler.cli import waiting, watching
from tests.plugins.git import GitRepo
from tests.plugins.nebula import DIGEST_B, Nebula

SHOP = loading.project("storefront")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    nebula.ok("member add alice --role owner")
    git_repo.commit({"nebula.toml": SHOP}, "Shop: first version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    return nebula


def _ticking(nebula: Nebula, then: Callable[[], None] | None = None) -> Callable[[float], None]:
    """A ``time.sleep`` that lets the reconciler move instead of sleeping."""

    def sleep(_: float) -> None:
        nebula.reconcile()
        nebula.clock.advance(1)
        if then is not None:
            then()

    return sleep


def test_history_lists_releases_newest_first_with_their_state(
    shop: Nebula, git_repo: GitRepo
) -> None:
    new_image = SHOP.replace("shop/api@sha256:" + "a" * 64, "shop/api@" + DIGEST_B)
    commit = git_repo.commit({"nebula.toml": new_image}, "New api image")
    shop.settle()
    rows = shop.json("history shop api --env staging")["releases"]
    assert [(r["release"], r["state"]) for r in rows] == [
        ("r-2", "active"),
        ("r-1", "rollback-able"),
    ]
    assert rows[0]["commit"] == commit and rows[0]["created_by"] == "shop"
    lines = shop.ok("history shop api --env staging").out.splitlines()
    assert lines[0].split() == ["RELEASE", "IMAGE", "STATE", "CREATED", "BY", "COMMIT"]
    assert lines[1].split()[:3] == [
        "r-2",
        "registry.example.com/shop/api@sha256:bbbbbbbbbbbb",
        "active",
    ]
    assert lines[1].split()[-2:] == ["shop", commit[:7]]
    unknown = shop.cli("history shop nope --env staging")
    assert (unknown.code, unknown.err) == (
        1,
        "error: No service 'nope' in shop/staging\nhint: services and databases: api, db, worker\n",
    )


def test_wait_prints_each_state_change_and_exits_0_when_healthy(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop.ok("approve 1 --as alice")
    monkeypatch.setattr(waiting.time, "sleep", _ticking(shop))
    api = next(
        d for d in shop.deployments() if d["environment"] == "production" and d["service"] == "api"
    )
    result = shop.cli(f"wait {api['id']}")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"deployment {api['id']}: api r-1 pending"
    assert lines[-1] == f"deployment {api['id']}: api r-1 healthy"
    assert len(lines) == len(set(lines)) > 2  # each change once


def test_wait_for_a_changeset_exits_1_with_the_message_when_it_ends_otherwise(
    shop: Nebula,
) -> None:
    shop.ok("reject 1 --as alice --reason 'not today'")
    result = shop.cli("wait --changeset 2")
    assert result.code == 1
    assert result.out.splitlines()[0] == "change set 2: rejected"
    assert result.err.startswith("error: ")


def test_wait_times_out_with_exit_3(shop: Nebula) -> None:
    result = shop.cli("wait --changeset 2 --timeout 0s")
    assert result.code == 3
    assert result.out == (
        "change set 2: pending-approval\n"
        + "".join(
            f"deployment {d['id']}: {d['service']} r-1 awaiting-approval\n"
            for d in shop.deployments()
            if d["environment"] == "production"
        )
    )
    assert result.err == (
        "error: timed out after 0s: change set 2 is still pending-approval\n"
        "hint: wait again with a longer --timeout, or see: nebula deployments\n"
    )
    usage = shop.cli("wait")
    assert (usage.code, usage.err) == (
        2,
        "error: give a deployment id or --changeset ID (one of them)\n",
    )


def test_status_watch_redraws_when_something_changes(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks = iter(range(3))

    def sleep(_: float) -> None:
        if next(looks) == 0:
            shop.ok("approve 1 --as alice")
            shop.settle()
            return
        raise KeyboardInterrupt  # Ctrl-C ends the watch, exit 0

    monkeypatch.setattr(watching.time, "sleep", sleep)
    result = shop.cli("status shop --watch")
    assert result.code == 0
    views = result.out.split("\n\n")
    assert len(views) == 2  # the first view, then one redraw after the change (no repeat)
    assert "awaiting-approval" in views[0] and "awaiting-approval" not in views[1]


def _on_a_terminal(args: list[str], typed: str, tmp_path: Path) -> tuple[int, str]:
    """Run ``nebula ARGS`` with a pseudo-terminal as its controlling terminal; type ``typed``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEBULA_STATE_DIR": str(tmp_path / "state")}
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr are the terminal
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "reconciler.cli.main", *args], env)
    seen = b""
    deadline = time.monotonic() + 60
    sent = False
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not sent and b"Value for" in seen:
            os.write(fd, typed.encode() + b"\r")
            sent = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), seen.decode(errors="replace")


def test_secret_set_on_a_terminal_prompts_without_echo(tmp_path: Path, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEBULA_STATE_DIR": str(tmp_path / "state")}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "reconciler.cli.main",
            "project",
            "add",
            "shop",
            "--repo",
            str(git_repo.url),
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    code, screen = _on_a_terminal(
        ["secret", "set", "shop", "staging", "STRIPE_KEY"], "sk_live_typed_value", tmp_path
    )
    assert code == 0, screen
    assert "Value for STRIPE_KEY: " in screen
    assert "sk_live_typed_value" not in screen  # not echoed
    assert "secret STRIPE_KEY set for shop/staging" in screen
    listed = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "secret", "list", "shop", "staging"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert listed.stdout == "STRIPE_KEY\n"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_know_every_command(nebula: Nebula, shell: str) -> None:
    script = nebula.ok(f"completion {shell}").out
    for command in ("history", "wait", "audit", "token", "completion", "status"):
        assert command in script
    assert "--changeset" in script  # options of subcommands too


def test_the_bash_completion_script_is_valid_bash(nebula: Nebula, tmp_path: Path) -> None:
    path = tmp_path / "nebula.bash"
    path.write_text(nebula.ok("completion bash").out, encoding="utf-8")
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert (checked.returncode, checked.stderr) == (0, "")


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_tables_are_coloured_only_on_a_terminal_and_never_with_no_color(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_color: str | None, coloured: bool
) -> None:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEBULA_STATE_DIR": str(tmp_path / "state")}
    subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "member", "add", "alice", "--role", "owner"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    code, screen = _on_a_terminal(["member", "list"], "", tmp_path)
    assert code == 0, screen
    assert ("\x1b[" in screen) is coloured
    assert "alice" in screen
    piped = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "member", "list"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "\x1b" not in piped.stdout  # a pipe never gets colour
