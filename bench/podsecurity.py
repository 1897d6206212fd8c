"""What checkov says of the rendered sample projects, before and after pod hardening, in one run.

    python bench/podsecurity.py [--strict] [--json] [--out DIR] [--venv DIR]

Every sample project (fixtures/projects/*, reconciler/samples/webapp) is rendered for each of
its environments as ``nebula render`` does offline (placeholders for secrets and passwords),
one YAML file per object, in two variants:

- baseline: the nebula.toml as it is;
- restricted: the same text with ``pod_security = "restricted"`` added to every
  ``[environments.X]`` table (a tomlkit edit). A build whose validation refuses the key says
  so, and the baseline is reported alone.

checkov 3 (``checkov --framework kubernetes``) scans each variant's directory, and the failed
checks are counted per check id. checkov is no dependency of the project: the first run creates
a venv of its own, ``$XDG_CACHE_HOME/nebula-bench/checkov`` (``~/.cache/...``; ``--venv`` to
choose), and pip-installs ``checkov>=3,<4`` there (a few minutes); later runs reuse it.

Targets, with restricted: no failed check among CKV_K8S_20, 23, 28, 29, 30, 31, 37 and 38;
CKV_K8S_38 (service account tokens mounted) may fail only for objects whose pod names a
service account (``serviceAccountName``); its failures are listed by resource.
``--strict`` exits 1 on a miss, ``--json`` prints the figures as JSON too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tomlkit
from tomlkit.items import InlineTable, Table

from fixtures import loading
from reconciler.model import validation
from reconciler.model.problems import Severity
from renderers import capabilities
from renderers.manifests import Manifest
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS

REQUIREMENT = "checkov>=3,<4"
TARGETS = tuple(f"CKV_K8S_{n}" for n in (20, 23, 28, 29, 30, 31, 37, 38))
TOKENS = "CKV_K8S_38"  # may fail where the pod names a service account
SAMPLES = Path(loading.ROOT).parent / "reconciler" / "samples" / "webapp" / "nebula.toml"
UNSUPPORTED = "restricted: pod_security not supported by this build"


def default_venv() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "nebula-bench" / "checkov"


def checkov(venv: Path) -> Path:
    """The venv's checkov binary, installed on first use (a marker file says it completed)."""
    binary, marker = venv / "bin" / "checkov", venv / "nebula-bench-installed"
    if binary.exists() and marker.exists() and marker.read_text() == REQUIREMENT:
        return binary
    print(f"installing {REQUIREMENT} into {venv} (once; a few minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "-U", "pip"], check=True)
    subprocess.run([*pip, "install", REQUIREMENT], check=True)
    marker.write_text(REQUIREMENT)
    return binary


def samples() -> dict[str, str]:
    """Project slug -> nebula.toml text; samples/webapp is a link to fixtures' webapp, read once."""
    out: dict[str, str] = {}
    seen: set[Path] = set()
    for path in [*sorted(loading.PROJECTS.glob("*/nebula.toml")), SAMPLES]:
        if path.exists() and path.resolve() not in seen:
            seen.add(path.resolve())
            out[path.parent.name] = path.read_text(encoding="utf-8")
    return out


def restricted(text: str) -> str:
    document = tomlkit.parse(text)
    for table in document.get("environments", {}).values():
        if isinstance(table, Table | InlineTable):
            table["pod_security"] = "restricted"
    return tomlkit.dumps(document)


def render(projects: Mapping[str, str], directory: Path) -> tuple[list[Manifest], list[str]]:
    """Render every environment of each project into ``directory``: objects and refusals."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.yaml"):  # an earlier run's, with --out
        stale.unlink()
    rendered: list[Manifest] = []
    refused: list[str] = []
    for slug, text in projects.items():
        project, problems = validation.check(text, f"{slug}/nebula.toml")
        if project is None:
            refused += [str(p) for p in problems if p.severity is Severity.ERROR]
            continue
        renderer = Renderer(capabilities.RECENT)
        for config in project.configs:
            objects = renderer.project(slug, config, secrets=PLACEHOLDERS, passwords=PLACEHOLDERS)
            for index, m in enumerate(objects, start=1):
                name = f"{slug}-{config.name}-{index:03d}-{m.kind.lower()}-{m.name}.yaml"
                (directory / name).write_text(m.text, encoding="utf-8")
            rendered += objects
    return rendered, refused


def scan(binary: Path, directory: Path) -> list[dict[str, Any]]:
    """checkov's failed checks for the YAML files in ``directory``."""
    command = [str(binary), "--framework", "kubernetes", "-d", str(directory), "-o", "json"]
    command += ["--quiet", "--compact", "--skip-download", "--soft-fail"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"checkov exited {done.returncode}:\n{done.stderr[-2000:]}")
    reports = json.loads(done.stdout or "[]")
    failed: list[dict[str, Any]] = []
    for report in reports if isinstance(reports, list) else [reports]:
        if report.get("check_type") == "kubernetes":
            failed += report["results"]["failed_checks"]
    return failed


def service_accounts(rendered: list[Manifest]) -> set[str]:
    """checkov's resource ids (Kind.namespace.name) of objects whose pod names a service account."""
    out: set[str] = set()
    for m in rendered:
        spec = m.body.get("spec") or {}
        spec = (spec.get("jobTemplate") or {}).get("spec", spec)
        pod = (spec.get("template") or {}).get("spec", spec) if m.kind != "Pod" else spec
        if isinstance(pod, dict) and pod.get("serviceAccountName") not in (None, "default"):
            out.add(f"{m.kind}.{m.namespace or 'default'}.{m.name}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--out", type=Path, help="write the rendered YAML here (kept)")
    parser.add_argument("--venv", type=Path, default=default_venv(), help="checkov's venv")
    args = parser.parse_args()
    binary = checkov(args.venv)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    print(f"checkov {version.stdout.strip()} ({binary})")
    projects = samples()
    variants = {"baseline": projects, "restricted": {k: restricted(v) for k, v in projects.items()}}
    failed: dict[str, list[dict[str, Any]]] = {}
    objects: dict[str, int] = {}
    accounts: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="nebula-podsecurity-") as temporary:
        root = args.out or Path(temporary)
        for variant, texts in variants.items():
            rendered, refused = render(texts, root / variant)
            if refused:
                unsupported = any("unknown key 'pod_security'" in r for r in refused)
                print(UNSUPPORTED if unsupported else f"{variant}: refused by validation:")
                print("\n".join(f"  {line}" for r in refused[:3] for line in r.splitlines()))
                if variant == "baseline":
                    return 1
                continue
            objects[variant] = len(rendered)
            failed[variant] = scan(binary, root / variant)
            if variant == "restricted":
                accounts = service_accounts(rendered)
    counts = {v: Counter(f["check_id"] for f in fails) for v, fails in failed.items()}
    names = {f["check_id"]: f["check_name"] for fails in failed.values() for f in fails}
    ids = sorted(names, key=lambda i: (i.rstrip("0123456789"), len(i), i))
    print(
        f"\n{len(projects)} projects; rendered objects: "
        + ", ".join(f"{v} {n}" for v, n in objects.items())
    )
    print(f"\n{'check':<12} {'name':<70} {'baseline':>8} {'restricted':>10}")
    for check in ids:
        after = str(counts["restricted"][check]) if "restricted" in counts else "-"
        print(f"{check:<12} {names[check][:70]:<70} {counts['baseline'][check]:>8} {after:>10}")
    totals = {v: sum(c.values()) for v, c in counts.items()}
    after = str(totals["restricted"]) if "restricted" in totals else "-"
    print(f"{'total':<12} {'':<70} {totals['baseline']:>8} {after:>10}")

    missed: dict[str, list[str]] = {}
    print()
    for check in TARGETS:
        if "restricted" not in failed:
            missed[check] = ["restricted variant not rendered"]
            print(f"{check}: target missed (restricted variant not rendered)")
            continue
        resources = sorted(f["resource"] for f in failed["restricted"] if f["check_id"] == check)
        bad = [r for r in resources if check != TOKENS or r not in accounts]
        if bad:
            missed[check] = bad
        verdict = "target missed" if bad else "target met"
        print(
            f"{check} {names.get(check, '')}: {len(resources)} failed with restricted "
            f"(baseline {counts['baseline'][check]}): {verdict}"
        )
        if check == TOKENS:
            for resource in resources:
                allowed = " (names a service account: allowed)" if resource in accounts else ""
                print(f"  {resource}{allowed}")
    print("all targets met" if not missed else f"targets missed: {', '.join(missed)}")
    if args.json:
        figures = {
            "checkov": version.stdout.strip(),
            "projects": sorted(projects),
            "objects": objects,
            "restricted_supported": "restricted" in failed,
            "failed": {v: dict(sorted(c.items())) for v, c in counts.items()},
            "names": names,
            "totals": totals,
            "missed": missed,
        }
        print(json.dumps(figures, indent=2, sort_keys=True))
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
