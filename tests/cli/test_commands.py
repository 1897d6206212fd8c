"""The command line's own contract: one clear line per error (and a ``hint:`` line), exit 1 for a refused or invalid
request and 2 for bad usage, settings given with ``--config`` before or after the command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.cli import catalog, main, running
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula


def test_an_unsupported_repository_scheme_is_refused_when_the_project_is_added(
    nebula: Nebula,
) -> None:
    refused = nebula.cli("project add shop --repo ftp://deploy:hunter2hunter2@example.com/x.git")
    assert refused.code == 1
    assert refused.err == (
        "error: The repository URL ftp://***@example.com/x.git uses the unsupported scheme 'ftp'\n"
        "hint: use an absolute path, file://, git://, http(s):// or ssh:// (or user@host:path), "
        "with no part that starts with '-'\n"
    )
    assert nebula.json("project list")["projects"] == []


def test_a_project_repository_changed_to_an_unsupported_scheme_is_refused(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "Empty")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    refused = nebula.cli("project set shop repo svn://example.com/x")
    assert (refused.code, refused.err.count("\n")) == (1, 2)
    assert "unsupported scheme 'svn'" in refused.err.splitlines()[0]
    assert refused.err.splitlines()[1].startswith("hint: ")
    (project,) = nebula.json("project list")["projects"]
    assert project["repo"] == str(git_repo.url)


def test_reconciling_an_unknown_project_is_an_error(nebula: Nebula) -> None:
    refused = nebula.cli("reconcile --project nowhere")
    assert (refused.code, refused.out, refused.err) == (
        1,
        "",
        "error: No project named 'nowhere'\n"
        "hint: no project is registered yet: add one with nebula project add\n",
    )


def test_bad_usage_is_one_line_with_a_hint_and_exit_2(nebula: Nebula) -> None:
    missing = nebula.cli("rollback shop api")
    assert missing.code == 2
    assert missing.err == (
        "error: the following arguments are required: --env (see: nebula rollback --help)\n"
        "hint: usage: nebula rollback [-h] [--config FILE] [--server URL] [--context NAME] "
        "[--as NAME] --env ENV [--to TO] [-o {json,yaml,wide}] [--json] project service\n"
    )
    unknown = nebula.cli("status --colour")
    assert unknown.code == 2
    first, hint = unknown.err.splitlines()
    assert "--colour" in first and hint.startswith("hint: usage: nebula status [-h] ")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    return subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_config_is_read_before_or_after_the_command(tmp_path: Path) -> None:
    config = tmp_path / "nebula-server.toml"
    database = tmp_path / "state" / "given.db"
    config.write_text(f'NEBULA_DATABASE_URL = "sqlite:///{database}"\n', encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()

    after = _run("member", "add", "alice", "--role", "admin", "--config", str(config), cwd=work)
    assert after.returncode == 0, after.stderr
    before = _run("--config", str(config), "member", "list", "--json", cwd=work)
    assert before.returncode == 0, before.stderr
    assert [m["name"] for m in __import__("json").loads(before.stdout)["members"]] == ["alice"]
    assert database.exists()
    assert not (work / ".nebula" / "nebula.db").exists(), "the default store was never opened"


def test_a_reader_that_goes_away_ends_the_output_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """``nebula render ... | head -1``: the pipe closes while Nebula writes."""
    path = tmp_path / "nebula.toml"
    path.write_text(
        '[environments.staging]\n[services.api]\nimage = "registry.example.com/a@sha256:'
        + "a" * 64
        + '"\n[services.api.processes.web]\ntype = "http"\nport = 8080\n',
        encoding="utf-8",
    )
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    with os.fdopen(write, "w") as closed:
        monkeypatch.setattr(sys, "stdout", closed)
        code = main.main(["render", str(path), "--env", "staging"])
    assert code == 141  # 128 + SIGPIPE, as other tools end
    assert capfd.readouterr().err == ""


def test_each_command_is_registered_by_the_module_the_catalog_names() -> None:
    """``catalog.COMMANDS``: a command's parser is built from its module alone, and
    ``nebula --help`` is printed from the catalog: so the catalog must name every command's
    module and its help line, and the help it prints must be the whole parser's."""
    whole = running.build_parser()
    (subparsers,) = [a for a in whole._actions if isinstance(a, argparse._SubParsersAction)]
    shown = {action.dest: action.help for action in subparsers._choices_actions}
    assert shown == catalog.HELP
    assert list(shown) == list(catalog.HELP), "in the catalog's order"
    assert catalog.help_text() == whole.format_help()
    for module, lines in catalog.COMMANDS.items():
        for name in lines:
            alone = running.build_parser([name])
            (only,) = [a for a in alone._actions if isinstance(a, argparse._SubParsersAction)]
            assert set(only.choices) == set(lines) or name == "completion", (module, name)
    assert running.command_of(["--server", "http://x", "status", "shop"]) == "status"
    assert running.command_of(["--config", "f.toml", "--json"]) is None


def test_help_and_a_bare_nebula(nebula: Nebula) -> None:
    helped = nebula.cli("--help")
    assert (helped.code, helped.err) == (0, "")
    assert helped.out.startswith("usage: nebula [-h]") and "NEBULA_DATABASE_URL" in helped.out
    bare = nebula.cli()
    assert (bare.code, bare.out, bare.err) == (2, "", helped.out)
