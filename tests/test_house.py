"""House rules, checked with the tests: lint, types, and the import direction of the layers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_changes_nothing() -> None:
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pure_core_imports_no_io_library() -> None:
    linter = shutil.which("lint-imports")
    if linter is None:
        pytest.fail("lint-imports (import-linter) is not installed: pip install -e '.[test]'")
    result = run(linter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 1 kept, 0 broken" in result.stdout


def test_modules_stay_small() -> None:
    """One concept per module: a module over 400 lines is hiding a second one."""
    big = [
        f"{path.relative_to(ROOT)} ({count} lines)"
        for package in ("reconciler", "renderers", "notifiers", "bench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > 400
    ]
    assert big == []
