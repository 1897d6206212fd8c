"""``nebula demo``: the README's first command, end to end, leaving nothing behind."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx


def test_the_demo_runs_the_main_job_end_to_end_and_cleans_up() -> None:
    started = time.monotonic()
    lines: list[str] = []
    page_seen = ""
    with subprocess.Popen(
        [sys.executable, "-m", "reconciler.cli.main", "demo", "--delay", "0.05s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if "status page:" in line and not page_seen:
                url = line.split("status page:")[1].split()[0]
                page_seen = httpx.get(url, timeout=10).text
        errors = process.stderr.read()
        assert process.wait(timeout=60) == 0, errors
    elapsed = time.monotonic() - started
    out = "\n".join(lines)
    assert elapsed < 60
    # The page was served while the demo ran, and showed the project.
    assert "webapp" in page_seen
    # Staging deploys at once; production waits for staging (its promotion gate), then for
    # an approval an admin gives, which shows what staging proved.
    assert re.search(r"staging\s+web\s+r-1\s+healthy", out)
    assert "approval 1: production change set 2" in out
    assert "requested by webapp (push by Demo Developer <dev@example.com>), pending" in out
    # A first deploy's "before" reads (none), never Python's None.
    assert re.search(r"db\s+first_deploy\s+\(none\) -> postgres 16", out)
    assert "None" not in out
    assert "production  change set 2 waits: Waiting for cache to be healthy in staging" in out
    assert out.index("change set 2 waits") < out.index("approval 1: production change set 2")
    assert re.search(r"Verified in staging: web r-1 healthy since \S+ \S+ UTC \(\d+s\)", out)
    assert "production  change set 4 waits: Waiting for web to be healthy in staging" in out
    assert "alice approved approval 1" in out
    # The second push: a variable and an image; production's approval is decided by bob.
    assert re.search(r"staging\s+web\s+r-2\s+healthy", out)
    assert "bob approved approval 2" in out
    assert re.search(
        r"production\s+web\s+service\s+r-2\s+\w+\s+registry\.example\.com/webapp/web@sha256:5d41402",
        out,
    )
    assert re.search(r"production\s+db\s+database\s+r-1\s+synced\s+postgres:16", out)
    # Both engines: Celery's Redis broker, and production's Postgres on CloudNativePG.
    assert re.search(r"production\s+cache\s+database\s+r-1\s+synced\s+redis:7", out)
    assert re.search(r"cache\s+first_deploy\s+\(none\) -> redis 7", out)
    # web scaled behind Nebula's back: staging (self_heal) puts it back, production shows it.
    assert re.search(
        r"staging\s+Drift: Deployment/web-r2 spec\.replicas is 5, release r-2 says 1\n"
        r"\s+staging\s+Self-heal: re-applied Deployment/web-r2 \(spec\.replicas 5 -> 1\)\n"
        r"\s+staging\s+Drift cleared",
        out,
    )
    assert "production  Drift: Deployment/web-r2 spec.replicas is 5, release r-2 says 3" in out
    assert "--- live/Deployment/web-r2\n     +++ r-2/Deployment/web-r2" in out
    assert re.search(r"production\s+web\s+service\s+r-2\s+drifted", out)
    # Nothing is left: the temporary state directory is gone.
    state = re.search(r"state: (\S+) \(SQLite\)", out)
    assert state is not None
    assert not Path(state.group(1)).parent.exists()
