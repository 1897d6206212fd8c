"""A small or a huge nebula.toml costs a bounded amount of memory, whatever it describes.

Measured as a user meets it, in ``nebula`` processes: each one's peak memory (``ru_maxrss``
from ``wait4``) against a baseline process doing the same on a small file in the same run.
Two inputs from the probe: services s0..sN each setting K to ten copies of the previous K
(2 KB that resolved to 111 MB of YAML, and one level more to a ``MemoryError``), and a 50 MB
file (100 s and 672 MB to validate, 1.1 GB to reconcile). Both are generated here.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.numbers import MIB
from tests.plugins.git import GitRepo
from tests.web.world import nebula_command, serve_env

IMAGE = "registry.example.com/shop/s@sha256:" + "5e" * 32
BOUND = 48 * MIB  # what a process may grow by over its baseline


def expanding(levels: int) -> str:
    """s0.K is ten bytes; each next K holds ten references to the one before: s(N).K would
    resolve to 10^(N+1) bytes."""
    lines = ["[environments.staging]", ""]
    for i in range(levels):
        value = "0123456789" if i == 0 else f"${{{{ s{i - 1}.K }}}}" * 10
        lines += [
            f"[services.s{i}]",
            f'image = "{IMAGE}"',
            f"[services.s{i}.variables]",
            f'K = "{value}"',
            "",
        ]
    return "\n".join(lines)


def huge(size: int) -> str:
    text = expanding(1)
    return text + "# " + "x" * (size - len(text) - 3) + "\n"


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    peak: int  # bytes


def run(tmp: Path, env: dict[str, str], *args: str) -> Ran:
    out, err = tmp / "out.txt", tmp / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [*nebula_command(), *args], env=env, stdout=stdout, stderr=stderr
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    return Ran(process.returncode, out.read_text(), err.read_text(), usage.ru_maxrss * 1024)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return serve_env(tmp_path)


def test_validating_an_expanding_file_is_an_error_naming_the_chain(
    tmp_path: Path, env: dict[str, str]
) -> None:
    small, deep = tmp_path / "small.toml", tmp_path / "deep.toml"
    small.write_text(expanding(2), encoding="utf-8")
    deep.write_text(expanding(9), encoding="utf-8")  # s8.K: 10^9 bytes, resolved
    assert len(deep.read_bytes()) < 4096
    baseline = run(tmp_path, env, "validate", str(small))
    assert baseline.code == 0, baseline.err
    refused = run(tmp_path, env, "validate", str(deep))
    assert refused.code == 1
    assert (
        f"{deep}:26:5: s4.K resolves to 97.7 KiB, more than the 64 KiB a variable may hold: "
        "s4.K -> s3.K -> s2.K -> s1.K -> s0.K"
    ) in refused.err.splitlines()
    assert refused.peak - baseline.peak < BOUND, (refused.peak, baseline.peak)


def test_validating_a_huge_file_reads_no_more_than_the_limit(
    tmp_path: Path, env: dict[str, str]
) -> None:
    small, big = tmp_path / "small.toml", tmp_path / "big.toml"
    small.write_text(expanding(2), encoding="utf-8")
    big.write_text(huge(50 * MIB), encoding="utf-8")
    baseline = run(tmp_path, env, "validate", str(small))
    refused = run(tmp_path, env, "validate", str(big))
    assert refused.code == 1
    assert refused.err.startswith(f"error: {big}: 50 MiB (52428800 bytes) is more than")
    assert refused.peak - baseline.peak < BOUND, (refused.peak, baseline.peak)


@pytest.mark.parametrize("kind", ["expanding", "huge"])
def test_polling_such_a_file_is_a_configuration_blocker_in_bounded_memory(
    tmp_path: Path, env: dict[str, str], kind: str
) -> None:
    repo = GitRepo(tmp_path / "repo", bare=False)
    repo.commit({"nebula.toml": "[environments.staging\n"}, "Broken")  # the baseline: a poll
    assert run(tmp_path, env, "project", "add", "shop", "--repo", repo.url).code == 0
    baseline = run(tmp_path, env, "reconcile")
    assert baseline.code == 0, baseline.err
    text = expanding(9) if kind == "expanding" else huge(50 * MIB)
    sha = repo.commit({"nebula.toml": text}, "Grown")
    polled = run(tmp_path, env, "reconcile")
    assert polled.code == 0, polled.err
    shown = run(tmp_path, env, "status", "shop", "--json")
    assert '"blocker": "configuration"' in shown.out
    assert f"nebula.toml at {sha[:7]} is" in shown.out
    assert "nothing was staged" in shown.out.lower()
    assert polled.peak - baseline.peak < BOUND, (polled.peak, baseline.peak)
