"""What a deployment costs the Kubernetes API server, with the watch cache and with direct
reads (the cache turned off) as the baseline, in the same run.

    python bench/kube_requests.py [--late 20] [--units 10] [--idle 60] [--mode deploy|idle|both]
                                  [--strict] [--verbose]

Starts the test control plane (tests/infra: etcd, kube-apiserver 1.20 and the controller
manager, with the test kubelet playing the node), then for each contender, through the engine
(poll, tick until healthy), counting what the API server itself counted
(``apiserver_request_total`` plus the watches still open, tests/infra/apimetrics.py):

- **deploy**: a 2-replica http service whose pods are Ready at once, and one whose pods become
  Ready after ``--late`` seconds; each the first deployment of its own project (its own
  namespace), so each pays for its own informers. Requests per deployment, and late/at once.
- **idle**: ``--units`` services healthy in one project, then ``--idle`` seconds of reconcile
  ticks (one a second) with nothing to do: the requests counted meanwhile, and the watches open.

Targets (the watch cache): <= 25 requests per deployment, late/at once <= 1.3x, and no request
while idle. ``--strict`` exits 1 when a target is missed.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reconciler import bootstrap
from reconciler.cli import common
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
        common.reset()
        self.ctx.clusters.close()
        self.ctx.db.dispose()
        if self.ctx.git is not None:
            self.ctx.git.close()

    def use(self, watch: bool) -> None:
        self.ctx.clusters.close()
        self.ctx.clusters = Clusters(self.settings, self.ctx.db, self.ctx.clock, watch=watch)

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
        before = apimetrics.read(self.api.rest)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            nebula.tick()
            time.sleep(min(1.0, max(0.0, left)))
        after = apimetrics.read(self.api.rest)
        return after - before, sum(after.watching.values())


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
        if args.mode in ("deploy", "both"):
            print(f"  {contender}: deploying, Ready at once ...", flush=True)
            figures.at_once = bench.deploy(projects.image("web", f"quick-{n}"), 0.2)
            print(f"  {contender}: deploying, Ready after {args.late:.0f} s ...", flush=True)
            figures.late = bench.deploy(projects.image("web", f"late-{n}"), args.late)
        if args.mode in ("idle", "both"):
            print(f"  {contender}: {args.units} units healthy, {args.idle:.0f} s idle ...")
            figures.idle, figures.watches = bench.idle(
                projects.image("web", f"idle-{n}"), args.units, args.idle
            )
        results.append(figures)
    return results


def report(args: argparse.Namespace, results: list[Figures]) -> list[str]:
    cache, direct = results
    total = apimetrics.total
    print()
    print(f"{'':34}{'watch cache':>14}{'direct reads':>14}{'cache/direct':>14}")
    if args.mode in ("deploy", "both"):
        print("Requests per deployment (2-replica http service, first of its project)")
        for label, attr in (
            ("Ready at once", "at_once"),
            (f"Ready after {args.late:.0f} s", "late"),
        ):
            a, b = total(getattr(cache, attr)), total(getattr(direct, attr))
            print(f"  {label:32}{a:>14}{b:>14}{a / max(1, b):>13.2f}x")
        print(f"  {'late / at once':32}{cache.ratio:>13.2f}x{direct.ratio:>13.2f}x")
    if args.mode in ("idle", "both"):
        print(f"Idle: {args.units} services healthy, {args.idle:.0f} s of ticks")
        print(f"  {'requests':32}{total(cache.idle):>14}{total(direct.idle):>14}")
        print(f"  {'watches open at the end':32}{cache.watches:>14}{direct.watches:>14}")
    if args.verbose:
        for figures in results:
            for name in ("at_once", "late", "idle"):
                counts: Counter[apimetrics.Series] = getattr(figures, name)
                print(f"\n{figures.contender}, {name}:")
                for series, count in sorted(counts.items(), key=lambda i: (-i[1], str(i[0]))):
                    print(f"  {count:>5}  {series.verb} {series.resource} {series.code}")
    misses = []
    if args.mode in ("deploy", "both"):
        for label, counts in (("at once", cache.at_once), ("late", cache.late)):
            if total(counts) > MOST_PER_DEPLOYMENT:
                misses.append(f"{label}: {total(counts)} requests > {MOST_PER_DEPLOYMENT}")
        if cache.ratio > MOST_RATIO:
            misses.append(f"late/at once {cache.ratio:.2f}x > {MOST_RATIO}x")
    if args.mode in ("idle", "both") and total(cache.idle) > 0:
        misses.append(f"idle: {total(cache.idle)} requests > 0")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--late", type=float, default=20.0)
    parser.add_argument("--units", type=int, default=10)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--mode", choices=["deploy", "idle", "both"], default="both")
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
