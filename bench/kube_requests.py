"""What a deployment costs the Kubernetes API server, with the watch cache and with direct
reads (the cache turned off) as the baseline, in the same run.

    python bench/kube_requests.py [--late 20] [--units 10] [--idle 60] [--drift-every 5]
                                  [--mode deploy|idle|drift|both|all] [--strict] [--verbose]

Starts the test control plane (tests/infra: etcd, kube-apiserver 1.20 and the controller
manager, with the test kubelet playing the node), then for each contender, through the engine
(poll, tick until healthy), counting what the API server itself counted
(``apiserver_request_total`` plus the watches still open, tests/infra/apimetrics.py):

- **deploy**: a 2-replica http service whose pods are Ready at once, and one whose pods become
  Ready after ``--late`` seconds; each the first deployment of its own project (its own
  namespace), so each pays for its own informers. Requests per deployment, and late/at once.
- **idle**: ``--units`` services healthy in one project, then ``--idle`` seconds of reconcile
  ticks (one a second) with nothing to do: the requests counted meanwhile, and the watches open.
- **drift**: the same, idle with drift checks: NEBULA_DRIFT_INTERVAL is ``--drift-every``
  seconds (3m by default), so every unit's live objects are compared with its release about
  ``idle / drift-every`` times (the first check of each, when it went healthy, started the
  informers of the kinds a check reads): the requests counted over ``--idle`` seconds after one
  more round, and the checks made.

Targets (the watch cache): <= 25 requests per deployment, late/at once <= 1.3x, and no request
while idle, with or without drift checks. ``--strict`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reconciler import bootstrap, reconciling
from reconciler.cli import local
from reconciler.clock import SystemClock
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from tests.e2e_kube import projects
from tests.e2e_kube.installation import KubeNebula
from tests.infra import apimetrics
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRest
from tests.infra.kubeserver import ControlPlane, KubeAPI
from tests.infra.podstatus import Behaviour
from tests.plugins.git import GitRepo
from tests.runtimes.harness import http_server

MOST_PER_DEPLOYMENT = 25
MOST_RATIO = 1.3
CONTENDERS = ("watch cache", "direct reads")


@dataclass
class Figures:
    contender: str
    at_once: Counter[apimetrics.Series] = field(default_factory=Counter)
    late: Counter[apimetrics.Series] = field(default_factory=Counter)
    idle: Counter[apimetrics.Series] = field(default_factory=Counter)
    watches: int = 0  # open at the end of the idle period
    drift: Counter[apimetrics.Series] = field(default_factory=Counter)
    drift_warmup: Counter[apimetrics.Series] = field(default_factory=Counter)
    drift_watches: int = 0
    checks: int = 0  # drift checks made while counting

    @property
    def ratio(self) -> float:
        return apimetrics.total(self.late) / max(1, apimetrics.total(self.at_once))


class Bench:
    def __init__(self, api: KubeAPI, workdir: Path, port: int, kubelet: TestKubelet) -> None:
        self.api = api
        self.workdir = workdir
        self.port = port
        self.kubelet = kubelet
        self.settings = Settings(
            database_url=f"sqlite:///{workdir / 'nebula.db'}",
            state_dir=workdir / "state",
            cluster="kubernetes",
            kubeconfig=str(api.kubeconfig),
            readiness_timeout=timedelta(minutes=3),
        )
        self.ctx = bootstrap.open_context(self.settings, SystemClock())
        self._projects = 0

    def close(self) -> None:
        local.reset()
        self.ctx.clusters.close()
        self.ctx.db.dispose()
        if self.ctx.git is not None:
            self.ctx.git.close()

    def use(self, watch: bool) -> None:
        self.ctx.clusters.close()
        self.ctx.clusters = Clusters(
            self.settings, self.ctx.db, self.ctx.clock, self.ctx.vault, watch=watch
        )

    def project(self, text: str) -> tuple[KubeNebula, Counter[apimetrics.Series]]:
        """A new project of ``text``, settled: what the API server counted meanwhile."""
        self._projects += 1
        nebula = KubeNebula(self.ctx, f"bench{self._projects}")
        repo = GitRepo(self.workdir / "repos" / nebula.project, bare=False)
        nebula.register(repo, text, {})
        apimetrics.wait_quiet(self.api.rest)
        before = apimetrics.read(self.api.rest)
        nebula.settle(timeout=300)
        spent = apimetrics.read(self.api.rest) - before
        unhealthy = [d for d in nebula.deployments() if d["state"] != "healthy"]
        if unhealthy:
            raise SystemExit(f"a deployment did not go healthy: {unhealthy}")
        return nebula, spent

    def deploy(self, image: str, start_after: float) -> Counter[apimetrics.Series]:
        self.kubelet.script(image, Behaviour.RUNNING, serve_port=self.port, start_after=start_after)
        return self.project(projects.web_only(image, replicas=2))[1]

    def idle(
        self, image: str, units: int, seconds: float
    ) -> tuple[Counter[apimetrics.Series], int]:
        self.kubelet.script(image, Behaviour.RUNNING, serve_port=self.port)
        nebula, _ = self.project(many_services(image, units))
        spent, watches, _ = self._ticking(nebula, seconds)
        return spent, watches

    def drift(self, image: str, units: int, seconds: float, every: float, figures: Figures) -> None:
        """Idle with drift checks every ``every`` seconds: a warm-up round, then the count."""
        # Only this project's informers: older ones (the other modes') renew their watches
        # every 5 to 10 minutes, which is the cache's cost whether or not drift is checked.
        self.use(self.ctx.clusters.watch)
        self.kubelet.script(image, Behaviour.RUNNING, serve_port=self.port)
        nebula, _ = self.project(many_services(image, units))
        default = self.ctx.settings
        self.ctx.settings = default.with_(drift_interval=timedelta(seconds=every))
        try:
            before = apimetrics.read(self.api.rest)
            time.sleep(every)
            # Every unit is due: a round of checks (the first was when they went healthy).
            reconciling.run_once(self.ctx, nebula.project, poll=False)
            figures.drift_warmup = apimetrics.read(self.api.rest) - before
            figures.drift, figures.drift_watches, figures.checks = self._ticking(nebula, seconds)
        finally:
            self.ctx.settings = default
        unsynced = [u for u in nebula.units().values() if u["sync"] != "synced"]
        if unsynced:
            raise SystemExit(f"a drift check did not find the units synced: {unsynced}")

    def _ticking(
        self, nebula: KubeNebula, seconds: float
    ) -> tuple[Counter[apimetrics.Series], int, int]:
        """Reconcile ticks, one a second, for ``seconds``: (requests, watches open, checks)."""
        before = apimetrics.read(self.api.rest)
        checks = 0
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            # This project only: the other contender's units are checked by their own run.
            checks += reconciling.run_once(self.ctx, nebula.project, poll=False).checked
            time.sleep(min(1.0, max(0.0, left)))
        after = apimetrics.read(self.api.rest)
        return after - before, sum(after.watching.values()), checks


def many_services(image: str, units: int) -> str:
    text = "[environments.staging]\n"
    for n in range(units):
        text += f'''
[services.s{n}]
image = "{image}"
[services.s{n}.processes.web]
type = "http"
port = 8080
readiness_path = "/healthz"
instance_size = "nano"
stabilization_seconds = 1
'''
    return text


def run(args: argparse.Namespace, bench: Bench) -> list[Figures]:
    results = []
    for n, contender in enumerate(CONTENDERS):
        bench.use(watch=contender == "watch cache")
        figures = Figures(contender)
        if args.mode in ("deploy", "both", "all"):
            print(f"  {contender}: deploying, Ready at once ...", flush=True)
            figures.at_once = bench.deploy(projects.image("web", f"quick-{n}"), 0.2)
            print(f"  {contender}: deploying, Ready after {args.late:.0f} s ...", flush=True)
            figures.late = bench.deploy(projects.image("web", f"late-{n}"), args.late)
        if args.mode in ("idle", "both", "all"):
            print(f"  {contender}: {args.units} units healthy, {args.idle:.0f} s idle ...")
            figures.idle, figures.watches = bench.idle(
                projects.image("web", f"idle-{n}"), args.units, args.idle
            )
        if args.mode in ("drift", "all"):
            print(
                f"  {contender}: {args.units} units healthy, {args.idle:.0f} s idle, drift "
                f"checks every {args.drift_every:g} s ..."
            )
            bench.drift(
                projects.image("web", f"drift-{n}"),
                args.units,
                args.idle,
                args.drift_every,
                figures,
            )
        results.append(figures)
    return results


def report(args: argparse.Namespace, results: list[Figures]) -> list[str]:
    cache, direct = results
    total = apimetrics.total
    print()
    print(f"{'':34}{'watch cache':>14}{'direct reads':>14}{'cache/direct':>14}")
    if args.mode in ("deploy", "both", "all"):
        print("Requests per deployment (2-replica http service, first of its project)")
        for label, attr in (
            ("Ready at once", "at_once"),
            (f"Ready after {args.late:.0f} s", "late"),
        ):
            a, b = total(getattr(cache, attr)), total(getattr(direct, attr))
            print(f"  {label:32}{a:>14}{b:>14}{a / max(1, b):>13.2f}x")
        print(f"  {'late / at once':32}{cache.ratio:>13.2f}x{direct.ratio:>13.2f}x")
    if args.mode in ("idle", "both", "all"):
        print(f"Idle: {args.units} services healthy, {args.idle:.0f} s of ticks")
        print(f"  {'requests':32}{total(cache.idle):>14}{total(direct.idle):>14}")
        print(f"  {'watches open at the end':32}{cache.watches:>14}{direct.watches:>14}")
    if args.mode in ("drift", "all"):
        _drift_report(args, cache, direct)
    if args.verbose:
        for figures in results:
            for name in ("at_once", "late", "idle", "drift_warmup", "drift"):
                counts: Counter[apimetrics.Series] = getattr(figures, name)
                print(f"\n{figures.contender}, {name}:")
                for series, count in sorted(counts.items(), key=lambda i: (-i[1], str(i[0]))):
                    print(f"  {count:>5}  {series.verb} {series.resource} {series.code}")
    misses = []
    if args.mode in ("deploy", "both", "all"):
        for label, counts in (("at once", cache.at_once), ("late", cache.late)):
            if total(counts) > MOST_PER_DEPLOYMENT:
                misses.append(f"{label}: {total(counts)} requests > {MOST_PER_DEPLOYMENT}")
        if cache.ratio > MOST_RATIO:
            misses.append(f"late/at once {cache.ratio:.2f}x > {MOST_RATIO}x")
    if args.mode in ("idle", "both", "all") and total(cache.idle) > 0:
        misses.append(f"idle: {total(cache.idle)} requests > 0")
    if args.mode in ("drift", "all") and total(cache.drift) > 0:
        misses.append(f"idle with drift checks: {total(cache.drift)} requests > 0")
    return misses


def _drift_report(args: Any, cache: Figures, direct: Figures) -> None:
    total = apimetrics.total
    print(
        f"Idle with drift checks: {args.units} services, {args.idle:.0f} s, "
        f"NEBULA_DRIFT_INTERVAL={args.drift_every:g}s"
    )
    print(f"  {'drift checks made':32}{cache.checks:>14}{direct.checks:>14}")
    print(f"  {'requests':32}{total(cache.drift):>14}{total(direct.drift):>14}")
    per = [total(f.drift) / max(1, f.checks) for f in (cache, direct)]
    print(f"  {'requests per check':32}{per[0]:>14.2f}{per[1]:>14.2f}")
    warmup = (total(cache.drift_warmup), total(direct.drift_warmup))
    print(f"  {'a round before, not counted':32}{warmup[0]:>14}{warmup[1]:>14}")
    print(f"  {'watches open at the end':32}{cache.drift_watches:>14}{direct.drift_watches:>14}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--late", type=float, default=20.0)
    parser.add_argument("--units", type=int, default=10)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--drift-every", type=float, default=5.0)
    parser.add_argument(
        "--mode", choices=["deploy", "idle", "drift", "both", "all"], default="both"
    )
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    print("starting the control plane ...", flush=True)
    plane = ControlPlane()
    api = plane.start()
    kubelet = TestKubelet(KubeRest(api.server, api.token, api.ca_path), api.network, plane.workdir)
    try:
        kubelet.start()
        kubelet.resume()
        with http_server() as port, tempfile.TemporaryDirectory(prefix="nebula-bench-") as tmp:
            bench = Bench(api, Path(tmp), port, kubelet)
            try:
                results = run(args, bench)
            finally:
                bench.close()
    finally:
        kubelet.stop()
        plane.stop()
    misses = report(args, results)
    if misses:
        print()
        print("Missed targets:")
        for miss in misses:
            print(f"  {miss}")
    return 1 if misses and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
