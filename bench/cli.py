"""What a command costs before it does anything: CPU time (user + sys) of ``nebula`` commands,
as ratios to ``kubectl version --client`` measured in the same run.

    python bench/cli.py [--projects 20] [--runs 7] [--strict]

Builds a store with N projects deployed on the simulated cluster (SQLite, a local git
repository each), starts ``nebula serve`` on it, then measures, each the median of ``--runs``
after one warm-up:

- ``nebula --version`` and ``nebula --help`` (no store, no server);
- remote ``nebula status`` (``NEBULA_SERVER`` and ``NEBULA_TOKEN``: the server's CPU is not
  the command's);
- local ``nebula status`` on the same store.

The baseline is ``kubectl version --client``; without kubectl on the machine the bench says so
and uses ``python -c pass`` as the floor.

Python's bytecode is cached as on any installed Python (pip compiles a wheel's modules when it
installs it; an editable checkout writes ``__pycache__`` on first run): the commands run with
``PYTHONPYCACHEPREFIX`` in the bench's directory and without ``PYTHONDONTWRITEBYTECODE``, so
the warm-up run compiles and the measured runs do not. ``--no-bytecode-cache`` measures the
other case (every module compiled at every start, as on a machine that sets
``PYTHONDONTWRITEBYTECODE`` and installed packages without their bytecode). ``python -S -c
pass`` is printed beside ``python -c pass``: the difference is what ``site`` (and the ``.pth``
files of site-packages) costs every Python program on this machine.

Targets (issue 25): ``--version`` and ``--help`` <= 1.5x, remote ``status`` <= 3x, local
``status`` <= 6x. ``--strict`` exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures import loading  # noqa: E402
from tests.plugins.git import GitRepo, free_port  # noqa: E402

# The console script people run (pip's wrapper around reconciler.cli.main), beside this
# Python's own executable (a version manager's shim on PATH, pyenv's, is a shell script that
# costs more than the command it starts), else on PATH, else the module.
_BESIDE = Path(sys.executable).with_name("nebula")
_SCRIPT = str(_BESIDE) if _BESIDE.is_file() else shutil.which("nebula")
NEBULA = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "reconciler.cli.main"]


@dataclass(frozen=True)
class Target:
    name: str
    command: Sequence[str]
    most: float  # the largest ratio to the baseline the issue allows


def cpu_seconds(command: Sequence[str], environ: Mapping[str, str], runs: int) -> float:
    """The median user + sys CPU of ``command`` (and its children) over ``runs``, after one
    warm-up run; a run that fails stops the bench (a figure of an error is no figure)."""

    def once() -> float:
        process = subprocess.Popen(
            command, env=dict(environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            error = process.stderr.read().decode() if process.stderr else ""
            raise SystemExit(f"bench: {' '.join(command)} failed: {error.strip()}")
        if process.stderr:
            process.stderr.close()
        return usage.ru_utime + usage.ru_stime

    once()
    return statistics.median(once() for _ in range(runs))


def _environ(state: Path, config_home: Path, bytecode: Path | None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    if bytecode is not None:
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        environ["PYTHONPYCACHEPREFIX"] = str(bytecode)
    environ.update(
        NEBULA_STATE_DIR=str(state),
        NEBULA_CONFIG_HOME=str(config_home),
        NEBULA_SIMULATED_DELAY="0s",
        PYTHONPATH=str(ROOT),
    )
    return environ


def _nebula(environ: Mapping[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [*NEBULA, *args], env=dict(environ), input=stdin, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: nebula {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def build_store(root: Path, environ: Mapping[str, str], projects: int) -> str:
    """N projects deployed (staging healthy, production awaiting approval); an owner's token."""
    _nebula(environ, "member", "add", "olga", "--role", "owner")
    for number in range(projects):
        repo = GitRepo(root / "repos" / f"p{number}", bare=True)
        repo.commit({"nebula.toml": loading.project("checkout")}, "First version")
        _nebula(environ, "project", "add", f"p{number}", "--repo", repo.url)
    _nebula(environ, "reconcile", "--until-idle", "--timeout", "10m")
    return _nebula(environ, "token", "create", "--as", "olga").strip()


def _serve(environ: Mapping[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [*NEBULA, "serve", "--port", str(port)],
            env=dict(environ),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"bench: nebula serve did not start (see {log})")


# Printed for reference beside the baseline: Python's own start, without ``site`` (what the
# ``.pth`` files of site-packages cost every program here), and with the HTTP client that
# every command speaks through (httpx and httpcore, with the two optional imports
# ``client.http`` keeps out): the floor under any command that talks to a server.
_HTTP_CLIENT = (
    "import sys; sys.modules.setdefault('httpx._main', None); "
    "sys.modules.setdefault('trio', None); import httpx, httpcore"
)
REFERENCES = (
    ("(python -c pass)", ["-c", "pass"]),
    ("(python -S -c pass: without site)", ["-S", "-c", "pass"]),
    ("(python importing httpx and httpcore)", ["-c", _HTTP_CLIENT]),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module at every start (as with PYTHONDONTWRITEBYTECODE=1)",
    )
    args = parser.parse_args()

    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        baseline_name, baseline = "kubectl version --client", [kubectl, "version", "--client"]
    else:
        print("bench: kubectl is not on this machine; the floor is python -c pass instead")
        baseline_name, baseline = "python -c pass", [sys.executable, "-c", "pass"]

    root = Path(tempfile.mkdtemp(prefix="nebula-bench-cli-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        bytecode = None if args.no_bytecode_cache else root / "pycache"
        local = _environ(root / "state", root / "no-contexts", bytecode)
        print(f"building a store with {args.projects} projects ...", flush=True)
        token = build_store(root, local, args.projects)
        server, url = _serve(local, root / "serve.log")
        remote = {**local, "NEBULA_SERVER": url, "NEBULA_TOKEN": token}
        targets = [
            (Target("nebula --version", [*NEBULA, "--version"], 1.5), local),
            (Target("nebula --help", [*NEBULA, "--help"], 1.5), local),
            (Target(f"remote nebula status ({args.projects} projects)", [*NEBULA, "status"], 3.0), remote),
            (Target(f"local nebula status ({args.projects} projects)", [*NEBULA, "status"], 6.0), local),
        ]  # fmt: skip
        floor = cpu_seconds(baseline, os.environ, args.runs)
        cached = "not cached" if bytecode is None else "cached"
        print(f"\nCPU (user + sys), median of {args.runs} after a warm-up; bytecode {cached}")
        print(f"  {'baseline: ' + baseline_name:<44} {floor * 1000:8.1f} ms     1.00x")
        for name, command in REFERENCES:
            spent = cpu_seconds([sys.executable, *command], local, args.runs)
            print(f"  {name:<44} {spent * 1000:8.1f} ms  {spent / floor:7.2f}x")
        missed = 0
        for target, environ in targets:
            spent = cpu_seconds(target.command, environ, args.runs)
            ratio = spent / floor
            verdict = "met" if ratio <= target.most else "MISSED"
            missed += verdict == "MISSED"
            print(
                f"  {target.name:<44} {spent * 1000:8.1f} ms  {ratio:7.2f}x"
                f"   target <= {target.most}x: {verdict}"
            )
        return 1 if missed and args.strict else 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
