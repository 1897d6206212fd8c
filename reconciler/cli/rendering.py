"""``nebula render``: the manifests of the release a file would create (offline).

Offline means no server: secrets and database passwords render as marked placeholders, and the
release number is 1 unless ``--release`` says otherwise. The output is validated against the
Kubernetes schemas of the chosen version before anything is printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconciler.cli import files, output
from reconciler.cli.files import slugify
from reconciler.model import validation
from reconciler.model.problems import Severity
from renderers import capabilities, manifests, naming, raw, schemas
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS


def render(args: argparse.Namespace) -> int:
    text = files.read_source(args.path, args)
    project, problems = validation.check(text, args.path)
    if project is not None:
        slug = args.project or slugify(project.name or Path(args.path).resolve().parent.name)
        project, problems = files.check(text, args.path, lambda env: naming.namespace(slug, env))
    for problem in problems:
        sys.stderr.write(f"{problem}\n")
    if project is None:
        errors = sum(1 for p in problems if p.severity is Severity.ERROR)
        sys.stderr.write(f"{args.path}: {errors} error{'s' if errors != 1 else ''}\n")
        return output.EXIT_REFUSED
    config = project.environment(args.env)
    if config is None:
        declared = ", ".join(project.environment_names) or "none"
        return files.fail(f"{args.path} has no environment '{args.env}' (declared: {declared})")
    units = None
    if args.service is not None:
        if config.unit(args.service) is None:
            known = ", ".join(config.unit_names) or "none"
            return files.fail(
                f"{args.path} has no service or database '{args.service}' (known: {known})"
            )
        units = [args.service]
    slug = args.project or slugify(project.name or Path(args.path).resolve().parent.name)
    caps = capabilities.preset(args.kube_version)
    rendered = Renderer(caps).project(
        slug,
        config,
        secrets=PLACEHOLDERS,
        passwords=PLACEHOLDERS,
        units=units,
        number=args.release,
    )
    # Raw manifests are checked by the cluster that applies them (they may be of any CRD).
    schemas.validate([m for m in rendered if not raw.is_raw(m)], caps)
    if args.out is None:
        sys.stdout.write(manifests.to_yaml(rendered))
        return output.EXIT_OK
    return _write(Path(args.out), rendered)


def _write(directory: Path, rendered: manifests.Manifests) -> int:
    """One file per object, numbered in apply order so ``kubectl apply -f DIR`` keeps it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for index, manifest in enumerate(rendered, start=1):
            name = f"{index:03d}-{manifest.kind.lower()}-{manifest.name}.yaml"
            (directory / name).write_text(manifest.text, encoding="utf-8")
    except OSError as exc:
        return files.fail(f"cannot write to {directory}: {exc.strerror or exc.__class__.__name__}")
    print(f"wrote {len(rendered)} objects to {directory}")
    return output.EXIT_OK
