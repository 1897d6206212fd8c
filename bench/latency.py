"""From a push to a change set, and to ``activating``, through a real ``nebula serve``.

    python bench/latency.py [--projects 50] [--pushes 2] [--interval 5] [--delay 0.2s]
                            [--single-pushes 10] [--registered 1000] [--skip-rss] [--strict]

Each scenario starts its own ``nebula serve`` (SQLite, the simulated cluster taking
``--delay`` per stage) on a free port, registers projects whose repositories are real git
repositories, waits for their first deploys, then pushes commits at random times (each push
a new image) and measures, per push, from the moment the commit exists:

- push -> change set: the change set for that commit is staged (its ``created_at``);
- push -> activating: its deployment enters ``activating`` (the event's time).

Scenarios: one project alone with push notifications (the baseline), ``--projects`` projects
with push notifications (``POST /hooks/git/<slug>`` right after each push, as a git host
sends it), and the same projects with polling only, at ``--interval`` seconds. Then the
server's resident memory with ``--registered`` projects registered and polled.

Targets: with webhooks, p95 for many projects <= 1.2x the single project's; with polling,
detection p95 <= interval + one tick (1 s); RSS <= 200 MB. ``--strict`` exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from sqlalchemy import func, select

from reconciler import bootstrap, settings
from reconciler.admin import projects as project_rows
from reconciler.store import schema
from reconciler.store.database import Database
from reconciler.web.hooks import signature
from tests.plugins.git import GitRepo
from tests.web.world import ServeProcess, serve_env

TICK = 1.0  # the scheduler's tick interval
HOOK_SECRET = "bench-hook-secret"


def toml(image_seed: str) -> str:
    digest = hashlib.sha256(image_seed.encode()).hexdigest()
    return f"""[environments.staging]

[services.web]
image = "registry.example.com/bench/web@sha256:{digest}"

[services.web.processes.web]
type = "http"
port = 8080
"""


@dataclass
class Push:
    slug: str
    at: float  # seconds after the start of the schedule
    sha: str = ""
    pushed: datetime | None = None


@dataclass
class Scenario:
    name: str
    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"changeset": [], "activating": []}
    )
    missing: int = 0

    def quantile(self, which: str, q: float) -> float | None:
        values = sorted(self.latencies[which])
        if not values:
            return None
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


class Installation:
    """A store, its repositories and its server, under one temporary directory."""

    def __init__(
        self, root: Path, count: int, interval: int, delay: str, *, keep: bool = True
    ) -> None:
        """``keep=False`` makes the repositories without keeping them open (for a thousand)."""
        self.root = root
        self.env = serve_env(root, simulated_delay=delay)
        self.repos: dict[str, GitRepo] = {}
        self.count = count
        ctx = bootstrap.open_context(settings.load(environ=self.env), git=False)
        with ctx.db.transaction() as session:
            for n in range(count):
                slug = f"p{n:04d}"
                path = root / "repos" / f"{slug}.git"
                if keep:
                    self.repos[slug] = GitRepo(path, bare=True)
                    self.repos[slug].commit({"nebula.toml": toml(f"{slug}-0")}, "First version")
                else:
                    GitRepo(path, bare=True).commit({"nebula.toml": toml(f"{slug}-0")})
                project = project_rows.add(
                    session, ctx.clock, slug, str(path), interval=timedelta(seconds=interval)
                )
                # Signed, as a git host sends them: unsigned ones are coalesced per 10 s.
                project_rows.set_value(session, ctx.vault, project, "webhook_secret", HOOK_SECRET)
        ctx.db.dispose()
        self.db = Database(f"sqlite:///{root / 'state' / 'nebula.db'}", migrate=False)
        self.server = ServeProcess(self.env, root / "serve.log")

    def settled(self) -> bool:
        """Every project polled, its first deploy healthy, nothing in flight."""
        with self.db.transaction() as session:

            def count(table: Any, *where: Any) -> int:
                return int(
                    session.scalar(select(func.count()).select_from(table).where(*where)) or 0
                )

            unpolled = count(schema.Project, schema.Project.last_polled_at.is_(None))
            running = count(schema.Deployment, schema.Deployment.finished_at.is_(None))
            healthy = count(schema.Deployment, schema.Deployment.state == "healthy")
        return unpolled == 0 and running == 0 and healthy >= self.count

    def wait_settled(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.settled():
            if time.monotonic() > deadline:
                raise SystemExit(f"not settled within {timeout:.0f} s; see {self.server.log_path}")
            time.sleep(0.2)

    def close(self) -> None:
        self.server.kill()
        self.db.dispose()


def schedule(slugs: list[str], pushes: int, spacing: float, rng: random.Random) -> list[Push]:
    """Each project's pushes fall at random in consecutive slots of ``spacing`` seconds (in the
    first half of each slot, so a push never lands on the previous one still deploying)."""
    plan = [
        Push(slug, k * spacing + rng.uniform(0, spacing / 2))
        for slug in slugs
        for k in range(pushes)
    ]
    return sorted(plan, key=lambda p: p.at)


def run_pushes(inst: Installation, plan: list[Push], *, webhooks: bool) -> None:
    start = time.monotonic()
    client = httpx.Client(timeout=10)
    for n, push in enumerate(plan, start=1):
        delay = start + push.at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        push.sha = inst.repos[push.slug].commit(
            {"nebula.toml": toml(f"{push.slug}-{n}")}, f"Push {n}"
        )
        push.pushed = datetime.now(UTC)
        if webhooks:
            body = b'{"ref": "refs/heads/main"}'
            client.post(
                f"{inst.server.url}/hooks/git/{push.slug}",
                content=body,
                headers={
                    "X-GitHub-Delivery": str(uuid.uuid4()),
                    "X-GitHub-Event": "push",
                    "X-Hub-Signature-256": signature(HOOK_SECRET, body),
                },
            )
    client.close()


def measure(inst: Installation, plan: list[Push], name: str, timeout: float) -> Scenario:
    result = Scenario(name)
    deadline = time.monotonic() + timeout
    pending = list(plan)
    while pending and time.monotonic() < deadline:
        still = []
        with inst.db.transaction() as session:
            for push in pending:
                found = _times(session, push)
                if found is None:
                    still.append(push)
                    continue
                assert push.pushed is not None
                staged, activating = found
                result.latencies["changeset"].append((staged - push.pushed).total_seconds())
                result.latencies["activating"].append((activating - push.pushed).total_seconds())
        pending = still
        time.sleep(0.25)
    result.missing = len(pending)
    return result


def _times(session: object, push: Push) -> tuple[datetime, datetime] | None:
    from sqlalchemy.orm import Session

    assert isinstance(session, Session)
    changeset = session.scalars(
        select(schema.ChangeSet).where(schema.ChangeSet.commit == push.sha)
    ).first()
    if changeset is None:
        return None
    activating = session.scalar(
        select(func.min(schema.Event.at))
        .join(schema.Deployment, schema.Deployment.id == schema.Event.deployment_id)
        .where(schema.Deployment.changeset_id == changeset.id, schema.Event.state == "activating")
    )
    if activating is None:
        return None
    return changeset.created_at, activating


def scenario(
    root: Path,
    name: str,
    count: int,
    pushes: int,
    *,
    window: float,
    interval: int,
    webhooks: bool,
    delay: str,
    seed: int,
) -> Scenario:
    inst = Installation(root, count, interval, delay)
    try:
        inst.server.start()
        inst.wait_settled(timeout=120 + count)
        spacing = max(window / pushes, interval + 5.0 if not webhooks else 4.0)
        plan = schedule(sorted(inst.repos), pushes, spacing, random.Random(seed))
        run_pushes(inst, plan, webhooks=webhooks)
        return measure(inst, plan, name, timeout=60)
    finally:
        inst.close()


def rss(root: Path, count: int, delay: str) -> tuple[float, float]:
    """(MB once every project is polled and deployed, peak MB seen on the way)."""
    started = time.monotonic()
    inst = Installation(root, count, 60, delay, keep=False)
    peak = 0.0
    try:
        inst.server.start()
        assert inst.server.process is not None
        pid = inst.server.process.pid
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _rss_mb(pid))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        inst.wait_settled(timeout=1200)
        time.sleep(5)  # a few idle ticks and polls at steady state
        settled = _rss_mb(pid)
        stop.set()
        sampler.join()
        print(f"  {count} projects polled and deployed in {time.monotonic() - started:.0f} s")
        return settled, peak
    finally:
        inst.close()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _fmt(value: float | None) -> str:
    return f"{value:6.2f}" if value is not None else "     -"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--pushes", type=int, default=2, help="pushes per project")
    parser.add_argument(
        "--window", type=float, default=60, help="seconds over which each project's pushes fall"
    )
    parser.add_argument("--single-pushes", type=int, default=10)
    parser.add_argument("--interval", type=int, default=5, help="poll interval of the polling run")
    parser.add_argument("--delay", default="0.2s", help="NEBULA_SIMULATED_DELAY (per stage)")
    parser.add_argument("--registered", type=int, default=1000)
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="nebula-latency-"))
    results: list[Scenario] = []
    try:
        runs = [
            ("1 project alone, webhook", 1, args.single_pushes, 3600, True),
            (f"{args.projects} projects, webhook", args.projects, args.pushes, 3600, True),
            (
                f"{args.projects} projects, polling {args.interval}s",
                args.projects,
                args.pushes,
                args.interval,
                False,
            ),
        ]
        for n, (name, count, pushes, interval, webhooks) in enumerate(runs):
            print(f"running: {name} ...", flush=True)
            results.append(
                scenario(
                    root / f"s{n}",
                    name,
                    count,
                    pushes,
                    window=args.window,
                    interval=interval,
                    webhooks=webhooks,
                    delay=args.delay,
                    seed=args.seed,
                )
            )
        settled = peak = None
        if not args.skip_rss:
            print(f"running: RSS with {args.registered} registered projects ...", flush=True)
            settled, peak = rss(root / "rss", args.registered, args.delay)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print()
    print(
        f"{'scenario':<32} {'pushes':>6}  {'push->change set (s)':>20}  {'push->activating (s)':>20}"
    )
    print(f"{'':<32} {'':>6}  {'p50':>9} {'p95':>10}  {'p50':>9} {'p95':>10}")
    for r in results:
        n = len(r.latencies["changeset"])
        print(
            f"{r.name:<32} {n:>6}  {_fmt(r.quantile('changeset', 0.5)):>9} {_fmt(r.quantile('changeset', 0.95)):>10}"
            f"  {_fmt(r.quantile('activating', 0.5)):>9} {_fmt(r.quantile('activating', 0.95)):>10}"
            + (f"   ({r.missing} not measured)" if r.missing else "")
        )
    single, many, polled = results
    ok = True
    checks = []
    for which in ("changeset", "activating"):
        base, got = single.quantile(which, 0.95), many.quantile(which, 0.95)
        if base and got is not None:
            ratio = got / base
            passed = ratio <= 1.2
            ok &= passed
            checks.append(
                f"webhook p95 push->{which}: {ratio:.2f}x the single project (target <= 1.2x) {'ok' if passed else 'MISSED'}"
            )
    detection = polled.quantile("changeset", 0.95)
    if detection is not None:
        passed = detection <= args.interval + TICK
        ok &= passed
        checks.append(
            f"polling p95 detection: {detection:.2f} s (target <= {args.interval} s + one tick = {args.interval + TICK:.0f} s) {'ok' if passed else 'MISSED'}"
        )
    if settled is not None and peak is not None:
        passed = settled <= 200
        ok &= passed
        checks.append(
            f"RSS with {args.registered} projects: {settled:.0f} MB settled, {peak:.0f} MB peak (target <= 200 MB) {'ok' if passed else 'MISSED'}"
        )
    print()
    print("\n".join(checks))
    return 1 if (args.strict and not ok) else 0


if __name__ == "__main__":
    raise SystemExit(main())
