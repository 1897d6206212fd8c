"""What a large nebula.toml costs to validate (issue 26): time and peak memory of
``nebula validate`` on generated files, next to reading the same file with the standard
library's ``tomllib`` (a floor: parsing alone, no positions, no checks), in the same run.

    python bench/validate.py [--strict]

Files: 100, 1,000 and 10,000 services (each ``image`` and one process), a 3,000-long
``depends_on`` chain, and 6,000 services each reading the previous one's variable. Each runs in
a fresh process (its peak RSS is its own); figures are the median of three runs. Target: the
10,000-service file validates (or is refused) in under 5 s and 150 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAD = "[environments.staging]\n[environments.production]\nprotected = true\n"


def services(count: int) -> str:
    return HEAD + "".join(
        f'\n[services.s{i}]\nimage = "r/a:1"\n[services.s{i}.processes.web]\nport = 8080\n'
        for i in range(count)
    )


def chain(count: int) -> str:
    return HEAD + "".join(
        f'\n[services.s{i}]\nimage = "r/a:1"\n' + (f'depends_on = ["s{i - 1}"]\n' if i else "")
        for i in range(count)
    )


def references(count: int) -> str:
    return HEAD + "".join(
        f'\n[services.s{i}]\nimage = "r/a:1"\nvariables = {{ U = "'
        + (f"${{{{ s{i - 1}.U }}}}" if i else "x")
        + '" }\n'
        for i in range(count)
    )


CASES: list[tuple[str, Callable[[], str]]] = [
    ("100 services", lambda: services(100)),
    ("1,000 services", lambda: services(1000)),
    ("10,000 services", lambda: services(10000)),
    ("a 3,000-long depends_on chain", lambda: chain(3000)),
    ("6,000 services, each reading the last", lambda: references(6000)),
]


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run of ``command``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def median_of_three(command: list[str]) -> tuple[float, float]:
    runs = [run(command) for _ in range(3)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    missed = False
    with tempfile.TemporaryDirectory(prefix="nebula-bench-validate-") as tmp:
        print(f"{'file':<40} {'size':>9} {'validate':>10} {'peak':>8} {'tomllib':>9} {'ratio':>7}")
        for name, make in CASES:
            path = Path(tmp) / "nebula.toml"
            path.write_text(make(), encoding="utf-8")
            seconds, peak = median_of_three(
                [sys.executable, "-m", "reconciler.cli.main", "validate", str(path)]
            )
            floor, _ = median_of_three(
                [sys.executable, "-c", f"import tomllib; tomllib.load(open({str(path)!r}, 'rb'))"]
            )
            size = f"{path.stat().st_size // 1024} KiB"
            print(
                f"{name:<40} {size:>9} {seconds:>9.2f}s {peak:>6.0f}MiB {floor:>8.2f}s "
                f"{seconds / floor:>6.1f}x"
            )
            if name == "10,000 services":
                met = seconds < 5 and peak < 150
                missed = not met
                print(f"{'':<40} target < 5 s and < 150 MiB: {'met' if met else 'MISSED'}")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
