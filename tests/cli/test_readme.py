"""README's "Using it" stays true: every command it shows is one the parser accepts, as
written (with its options), and the flow it describes runs against a real store."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from fixtures import loading
from reconciler.cli import running
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

README = Path(__file__).resolve().parents[2] / "README.md"


def _using_it() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Using it") : text.index("### Settings")]
    block = section[section.index("```sh") + 5 : section.index("```", section.index("```sh") + 5)]
    commands = []
    for line in block.strip().splitlines():
        line = re.sub(r"\s+# .*$", "", line).strip()  # the comment
        line = line.split(" > ")[0].split("| ", 1)[-1]  # a redirect; what a pipe feeds
        commands += [part.strip() for part in line.split(" / ")]
    return commands


COMMANDS = _using_it()


def test_the_readme_shows_the_new_commands() -> None:
    shown = {shlex.split(c)[1] for c in COMMANDS}
    for command in ("wait", "history", "audit", "token", "completion", "status", "project"):
        assert command in shown


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_parses_as_written(command: str) -> None:
    argv = shlex.split(command)
    assert argv[0] == "nebula"
    args = running.build_parser().parse_args(argv[1:])  # exits 2 on a bad option or argument
    assert getattr(args, "func", None) is not None, command


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_readme_flow_runs(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's commands in its order, on the storefront sample (shop, api, production)."""
    import sys

    git_repo.commit({"nebula.toml": loading.project("storefront")}, "Shop")
    ran = {}
    for command in COMMANDS:
        argv = shlex.split(command)[1:]
        if argv[0] in ("init", "validate", "render", "completion", "demo", "serve", "login"):
            continue  # write or need a file, a shell or a server; tested on their own
        if argv[:2] == ["status", "--watch"] or argv[0] == "wait":
            continue  # they block: tests/cli/test_following.py
        if argv[:2] == ["project", "add"]:
            argv[argv.index("--repo") + 1] = str(git_repo.url)
        if argv[:2] == ["secret", "set"]:
            monkeypatch.setattr(sys, "stdin", io.StringIO("sk_test_value\n"))
        if argv[:2] == ["project", "remove"]:
            monkeypatch.setattr(sys, "stdin", _Terminal(argv[2] + "\n"))  # the slug, typed
        result = nebula.cli(*argv)
        ran[command] = result.code
        if argv[0] == "reconcile":
            nebula.settle()
    # Refusals are fine where the state says so (e.g. rejecting what was approved): what must
    # not happen is bad usage.
    assert all(code in (0, 1) for code in ran.values()), ran
    assert ran["nebula status shop"] == 0
    assert ran["nebula approve 1"] == 0
    assert ran["nebula history shop api --env production"] == 0
    assert ran["nebula audit --since 24h"] == 0
    assert ran["nebula whoami"] == 0
    assert ran["nebula project remove shop"] == 0
