"""How fast manifests render, next to a floor measured in the same run.

    python bench/render.py [--rounds 7] [--services 200] [--strict]

Two projects: a shop-like one (fixtures/projects/bench-shop: a database, three services,
http/worker/cron/job processes, references, secrets, a volume) and a generated one with
``--services`` services. For each, per service (its release objects plus its per-service
objects), the median over rounds of:

- render: ``Renderer.release`` + ``Renderer.service`` with an empty cache (templates compiled);
- floor: the same templates rendered with the same values, already built, plus a CSafeLoader
  parse of each output: what any Jinja-and-YAML renderer pays at least;
- cached: the same calls again with the content-hash cache warm;
- validate: ``schemas.validate`` of the service's objects (a separate step, validators warm;
  the first pass, which loads the schema files, is reported on its own).

Targets: render <= 1.5x the floor, cached <= 0.05x the floor. ``--strict`` exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from fixtures import loading
from reconciler.model import validation
from renderers import capabilities, objects, releases, schemas, templating
from renderers.manifests import Draft, Loader
from renderers.releases import ReleaseSpec
from renderers.rendering import Renderer

RENDER_TARGET = 1.5
CACHED_TARGET = 0.05
DIGEST = "@sha256:" + "c" * 64

SHOP = loading.project("bench-shop")


def generated(count: int) -> str:
    """``count`` services: each reads its predecessor, some have workers, crons, volumes, secrets."""
    parts = ["[environments.staging]\n[databases.db]\n"]
    for i in range(count):
        name = f"svc-{i:03d}"
        parts.append(
            f'[services.{name}]\nimage = "registry.example.com/gen/{name}{DIGEST}"\n'
            f'release_command = ["bin/migrate"]\n'
            f'[services.{name}.processes.web]\ntype = "http"\nport = 8080\nreplicas = 2\n'
            f'command = ["serve", "--port", "8080"]\nreadiness_path = "/ready"\n'
        )
        if i % 3 == 0:
            parts.append(
                f'[services.{name}.processes.worker]\ntype = "worker"\ncommand = ["work"]\n'
            )
        if i % 5 == 0:
            parts.append(
                f'[services.{name}.processes.hourly]\ntype = "cron"\nschedule = "0 * * * *"\n'
            )
        variables = [
            'LOG_LEVEL = "info"',
            f'NAME = "{name}"',
            'DATABASE_URL = "${{ db.DATABASE_URL }}"',
            'TOKEN = "Bearer ${{ secret.TOKEN }}"',
        ]
        if i:
            variables.append(
                f'UPSTREAM = "${{{{ svc-{i - 1:03d}.NAME }}}}-${{{{ host(svc-{i - 1:03d}) }}}}"'
            )
        parts.append(f"[services.{name}.variables]\n" + "\n".join(variables) + "\n")
        if i % 10 == 0:
            parts.append(
                f'[services.{name}.volumes.data]\nmount = "/data"\nsize = "1Gi"\n'
                "accept_downtime = true\n"
            )
    return "".join(parts)


def specs(text: str) -> list[ReleaseSpec]:
    project = validation.load(text)
    config = project.configs[0]
    return [releases.release_from_config("bench", config, s.name, 3) for s in config.services]


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure(label: str, services: list[ReleaseSpec], rounds: int) -> dict[str, float]:
    caps = capabilities.RECENT
    renderer = Renderer(caps)
    drafts: list[Draft] = [
        d for s in services for d in (*objects.release(s, caps), *objects.service(s))
    ]
    jobs = [(templating.template(d.template), d.context) for d in drafts]

    def floor() -> None:
        for template, context in jobs:
            yaml.load(template.render(context), Loader=Loader)

    def render() -> None:
        renderer.cache.clear()
        for spec in services:
            renderer.release(spec)
            renderer.service(spec)

    def cached() -> None:
        for spec in services:
            renderer.release(spec)
            renderer.service(spec)

    rendered = [m for s in services for m in (*renderer.release(s), *renderer.service(s))]
    schemas.clear_cache()
    first_validation = timed(lambda: schemas.validate(rendered, caps))

    def validate() -> None:
        schemas.validate(rendered, caps)

    samples: dict[str, list[float]] = {"floor": [], "render": [], "cached": [], "validate": []}
    for action in (floor, render, cached):  # warm every template and code path once
        action()
    for round_ in range(rounds):
        order = [("floor", floor), ("render", render)]
        for name, action in order if round_ % 2 == 0 else reversed(order):
            samples[name].append(timed(action))
        samples["cached"].append(timed(cached))
        samples["validate"].append(timed(validate))
    per_service = {k: statistics.median(v) / len(services) for k, v in samples.items()}
    objects_per_service = len(drafts) / len(services)
    print(f"\n{label}: {len(services)} services, {objects_per_service:.1f} objects per service")
    print(
        f"  floor (Jinja render + CSafeLoader parse)   {per_service['floor'] * 1e6:9.1f} us/service"
    )
    print(
        f"  render (empty cache)                      {per_service['render'] * 1e6:9.1f} us/service"
    )
    print(
        f"  render (content-hash cache warm)          {per_service['cached'] * 1e6:9.1f} us/service"
    )
    print(
        f"  schema validation (validators warm)       {per_service['validate'] * 1e6:9.1f} us/service"
    )
    print(
        f"  schema validation, first pass (loads the schemas once per process)  {first_validation * 1e3:.1f} ms"
    )
    return per_service


def verdict(ratio: float, target: float) -> str:
    return f"{ratio:.3f}x (target <= {target}x: {'ok' if ratio <= target else 'MISSED'})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    print(
        f"PyYAML loader: {Loader.__name__}; schemas: Kubernetes {schemas.schema_version(capabilities.RECENT)}"
    )
    missed = False
    for label, text in (
        ("shop", SHOP),
        (f"generated ({args.services} services)", generated(args.services)),
    ):
        result = measure(label, specs(text), args.rounds)
        render_ratio = result["render"] / result["floor"]
        cached_ratio = result["cached"] / result["floor"]
        print(f"  render / floor  {verdict(render_ratio, RENDER_TARGET)}")
        print(f"  cached / floor  {verdict(cached_ratio, CACHED_TARGET)}")
        print(
            f"  validate / floor {result['validate'] / result['floor']:.2f}x (separate step, no target)"
        )
        missed |= render_ratio > RENDER_TARGET or cached_ratio > CACHED_TARGET
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
