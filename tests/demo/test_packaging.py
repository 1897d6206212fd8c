"""The package is complete: the demo's sample project ships inside it (one source with
fixtures/projects/webapp), and ``nebula --version`` names the version. CI (.ci/run) also builds
the wheel, installs it into a fresh venv and runs ``nebula --version`` and ``nebula demo`` from
an empty directory."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import reconciler
from fixtures import loading
from reconciler import demo

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_sample_is_the_fixture_itself_not_a_copy() -> None:
    sample = ROOT / "reconciler" / "samples" / "webapp"
    assert sample.is_symlink()
    assert sample.resolve() == (ROOT / "fixtures" / "projects" / "webapp").resolve()
    assert demo.sample_file() == loading.project("webapp")


def test_the_sample_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "samples/webapp/*" in config["tool"]["setuptools"]["package-data"]["reconciler"]


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "--version"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"nebula {reconciler.__version__}\n",
        "",
    )
