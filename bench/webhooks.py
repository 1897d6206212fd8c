"""A flood of unsigned push notifications, with and without the per-project limit.

    python bench/webhooks.py [--notifications 500] [--limit 10] [--clients 4] [--strict]

Issue 18 measured that a project without a webhook secret (anyone may notify it) took 500
made-up deliveries in 8.7 s and made 500 stored delivery ids and 516 git remote calls. This
starts an in-process server (the app of ``nebula serve`` on loopback, SQLite, a real local git
repository) with one project, sends ``--notifications`` notifications with distinct delivery
ids from ``--clients`` threads, and counts, per run: the answers by status, the stored delivery
ids, the polls made (ref listings of the git cache) and the wall time. (With the limit, the
one poll promised at the end of the window is the scheduler's, which this app has not: a
server makes one more then, two in all.)

Runs: ``webhook_limit 0`` (no limit: the baseline, what every project got before) and
``webhook_limit --limit`` (the default, 10 s), in the same process. Targets: with the limit at
most one poll per started window (the run is shorter than one window, so 1 poll) and 1 stored
delivery id; notifications per second not below 0.8x the baseline's. ``--strict`` exits 1 on a
miss.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from reconciler import bootstrap
from reconciler.admin import projects as project_rows
from reconciler.clock import SystemClock
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins.git import GitRepo
from tests.web.world import AppServer


@dataclass
class Run:
    name: str
    statuses: Counter[str]
    deliveries: int
    remote_calls: int
    seconds: float

    @property
    def rate(self) -> float:
        return sum(self.statuses.values()) / self.seconds


def flood(root: Path, limit: int, count: int, clients: int) -> Run:
    repo = GitRepo(root / "repo", bare=True)
    repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    settings = Settings(
        database_url=f"sqlite:///{root / 'nebula.db'}", state_dir=root / "state", secret_key=""
    )
    ctx = bootstrap.open_context(settings, SystemClock())
    try:
        with ctx.db.transaction() as session:
            project = project_rows.add(session, ctx.clock, "shop", repo.url, vault=ctx.vault)
            project_rows.set_value(session, ctx.vault, project, "webhook_limit", str(limit))
        assert ctx.git is not None
        before = ctx.git.counters().remote_calls
        body = b'{"ref": "refs/heads/main"}'
        with AppServer(create_app(ctx)) as app, httpx.Client(base_url=app.url) as client:

            def send(_: int) -> str:
                headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": str(uuid.uuid4())}
                answer = client.post("/hooks/git/shop", content=body, headers=headers)
                return str(answer.json()["status"])

            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                statuses = Counter(pool.map(send, range(count)))
            seconds = time.perf_counter() - started
            time.sleep(1.0)  # the polls the answers started, in the background
        with ctx.db.transaction() as session:
            deliveries = session.query(schema.WebhookDelivery).count()
        calls = ctx.git.counters().remote_calls - before
        name = f"webhook_limit {limit}" if limit else "no limit (baseline)"
        return Run(name, statuses, deliveries, calls, seconds)
    finally:
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notifications", type=int, default=500)
    parser.add_argument("--limit", type=int, default=10, help="seconds (the default is 10)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="nebula-bench-webhooks-"))
    try:
        runs = [
            flood(root / name, limit, args.notifications, args.clients)
            for name, limit in (("baseline", 0), ("limited", args.limit))
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.notifications} unsigned notifications, distinct delivery ids, {args.clients} clients"
    )
    print(f"{'run':<22} {'answers':<34} {'ids kept':>8} {'polls':>6} {'s':>6} {'per s':>7}")
    for run in runs:
        answers = ", ".join(f"{n} {s}" for s, n in sorted(run.statuses.items()))
        print(
            f"{run.name:<22} {answers:<34} {run.deliveries:>8} {run.remote_calls:>6} "
            f"{run.seconds:>6.2f} {run.rate:>7.0f}"
        )
    baseline, limited = runs
    ratio = limited.rate / baseline.rate
    print(
        f"polls: {limited.remote_calls} against {baseline.remote_calls} "
        f"({limited.remote_calls / max(baseline.remote_calls, 1):.3f}x); ids kept: "
        f"{limited.deliveries} against {baseline.deliveries}; rate: {ratio:.2f}x the baseline's"
    )
    windows = int(limited.seconds // args.limit) + 1
    missed = []
    if limited.remote_calls > windows or limited.deliveries > windows:
        missed.append(f"more than {windows} poll(s) or id(s) with the limit")
    if ratio < 0.8:
        missed.append(f"rate {ratio:.2f}x < 0.8x")
    for miss in missed:
        print(f"target missed: {miss}")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
