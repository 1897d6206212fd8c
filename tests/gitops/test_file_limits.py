"""What a poll refuses to read, and what it reads anyway: an oversized nebula.toml
(``NEBULA_MAX_CONFIG_SIZE``, judged from the object's header before it is read), a symbolic
link, and a file an editor saved with a UTF-8 byte order mark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gitops.shop import BASE, with_log_level
from tests.plugins.git import GitRepo, Link
from tests.plugins.nebula import Nebula, nebula_with

LIMIT = 64 * 1024


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Nebula]:
    """A Nebula whose NEBULA_MAX_CONFIG_SIZE is 64 KiB."""
    yield from nebula_with(tmp_path, max_config_size=LIMIT)


def padded(size: int) -> str:
    """The shop's file, made ``size`` bytes long by a comment at its end (still valid)."""
    filler = size - len(BASE.encode()) - 3
    return BASE + "# " + "x" * filler + "\n"


def test_a_file_over_the_limit_is_a_configuration_blocker_and_nothing_is_staged(
    small: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": BASE}, "First version")
    small.ok(f"project add shop --repo {git_repo.url}")
    small.settle()
    count = len(small.changesets())
    big = git_repo.commit({"nebula.toml": padded(LIMIT + 1)}, "A huge comment")
    small.reconcile()
    status = small.status()
    assert status["blocker"] == "configuration"
    assert status["blocker_commit"] == big
    assert status["message"] == (
        f"nebula.toml at {big[:7]} is 64.0 KiB (65537 bytes), more than NEBULA_MAX_CONFIG_SIZE "
        "allows (64 KiB); nothing was staged and environments keep serving"
    )
    assert len(small.changesets()) == count
    assert small.unit("staging", "api")["active_release"] == "r-1"
    # A file of exactly the limit is read, and clears the blocker.
    git_repo.commit({"nebula.toml": padded(LIMIT).replace('"info"', '"warn"')}, "Fits")
    small.reconcile()
    assert small.status()["blocker"] is None
    assert len(small.changesets()) == count + 2


def test_the_default_limit_is_one_mebibyte(nebula: Nebula, git_repo: GitRepo) -> None:
    sha = git_repo.commit({"nebula.toml": padded(1024 * 1024 + 512)}, "1 MiB and a half KiB")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "configuration"
    assert status["message"].startswith(
        f"nebula.toml at {sha[:7]} is 1.0 MiB (1049088 bytes), more than NEBULA_MAX_CONFIG_SIZE "
        "allows (1 MiB)"
    )
    assert nebula.changesets() == []


def test_a_symbolic_link_is_refused_with_a_clear_blocker(nebula: Nebula, git_repo: GitRepo) -> None:
    sha = git_repo.commit(
        {"deploy/real.toml": BASE, "nebula.toml": Link("deploy/real.toml")}, "Linked"
    )
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "configuration"
    assert status["message"] == (
        f"nebula.toml at {sha[:7]} is a symbolic link; Nebula reads the file itself, not what "
        "a link points to (commit it as a regular file); nothing was staged and environments "
        "keep serving"
    )
    assert nebula.changesets() == []


def test_a_byte_order_mark_is_dropped(nebula: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": b"\xef\xbb\xbf" + BASE.encode()}, "Saved by an editor")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    assert nebula.status()["blocker"] is None
    assert [c["environment"] for c in nebula.changesets()] == ["staging", "production"]
    git_repo.commit({"nebula.toml": "\ufeff" + with_log_level("debug")}, "Again")
    nebula.reconcile()
    latest = [c for c in nebula.changesets() if c["environment"] == "staging"][-1]
    assert [line["field"] for line in latest["lines"]] == ["variables.LOG_LEVEL"]


def test_validate_refuses_an_oversized_file_and_reads_one_with_a_byte_order_mark(
    nebula: Nebula, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "nebula.toml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    result = nebula.cli(f"validate {path}")
    assert (result.code, result.err) == (0, "")
    assert result.out.startswith(f"{path}: valid")
    monkeypatch.setenv("NEBULA_MAX_CONFIG_SIZE", "4KiB")
    path.write_text(padded(5000), encoding="utf-8")
    result = nebula.cli(f"validate {path}")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"error: {path}: 4.9 KiB (5000 bytes) is more than NEBULA_MAX_CONFIG_SIZE allows "
        "(4 KiB)\n"
        "hint: keep large values out of nebula.toml, or raise NEBULA_MAX_CONFIG_SIZE\n"
    )
