"""``nebula validate`` and ``nebula render``: offline work on a nebula.toml file."""

from __future__ import annotations

import argparse
import os
import re
import sys
import unicodedata
from pathlib import Path

from reconciler.cli import common, output
from reconciler.model import rawmanifests, validation
from reconciler.model.problems import Problem, Severity
from reconciler.model.specs import ProjectFile
from reconciler.numbers import format_size
from renderers import naming


def read_source(path: str, args: argparse.Namespace) -> str:
    """A nebula.toml's text; a missing, unreadable or oversized file (over
    ``NEBULA_MAX_CONFIG_SIZE``: no more than that is ever read) is one error line and exit 1."""
    limit = common.load_settings(args).max_config_size
    try:
        with Path(path).open("rb") as file:
            data = file.read(limit + 1)
            size = max(os.fstat(file.fileno()).st_size, len(data))
    except FileNotFoundError:
        raise SystemExit(fail(f"{path}: no such file")) from None
    except OSError as exc:
        raise SystemExit(fail(f"{path}: cannot read it ({exc.__class__.__name__})")) from None
    if len(data) > limit:
        raise SystemExit(
            fail(
                f"{path}: {format_size(size)} ({size} bytes) is more than "
                f"NEBULA_MAX_CONFIG_SIZE allows ({format_size(limit)})",
                "keep large values out of nebula.toml, or raise NEBULA_MAX_CONFIG_SIZE",
            )
        )
    text = validation.decode(data)
    if text is None:
        raise SystemExit(fail(f"{path}: cannot read it (it is not UTF-8 text)"))
    return text


def check(
    text: str, path: str, namespace: validation.Namespace | None = None
) -> tuple[ProjectFile | None, list[Problem]]:
    """The file checked as a poll would check it: with the raw manifest files it names, read
    from this checkout (paths are the repository's: from the nearest folder holding .git
    above the file, else the file's own folder)."""
    project, problems = validation.check(text, path)
    if project is None or not validation.manifest_paths(project):
        return project, problems
    root = _repository_root(Path(path).resolve().parent)
    found: dict[str, str] = {}
    for wanted in validation.manifest_paths(project):
        found.update(_local_files(root, wanted))
    return validation.check(text, path, files=found, namespace=namespace)


def _repository_root(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _local_files(root: Path, wanted: str) -> dict[str, str]:
    """What a raw manifests path names under ``root``: the file, or the YAML files under the
    folder (links and unreadable files are left out: the poll reads none either)."""
    target = root / wanted
    inside = root.resolve()
    if not target.resolve().is_relative_to(inside):
        return {}  # through a link out of the repository: the poll reads none either
    if target.is_file() and not target.is_symlink():
        candidates = [target]
    elif target.is_dir():
        candidates = sorted(
            p
            for p in target.rglob("*")
            if p.is_file()
            and not p.is_symlink()
            and p.suffix in rawmanifests.SUFFIXES
            and p.resolve().is_relative_to(inside)
        )
    else:
        return {}
    out = {}
    for file in candidates:
        try:
            text = validation.decode(file.read_bytes())
        except OSError:
            continue
        if text is not None:
            out[file.relative_to(root).as_posix()] = text
    return out


def slugify(text: str) -> str:
    """``"My Shop!"`` -> ``my-shop``: a project slug from a display or directory name."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if not slug or not slug[0].isalpha():
        slug = f"p-{slug}".rstrip("-")
    return slug[:40].rstrip("-")


def fail(message: str, hint: str | None = None) -> int:
    output.error(message, hint)
    return output.EXIT_REFUSED


def validate(args: argparse.Namespace) -> int:
    text = read_source(args.path, args)
    project, problems = validation.check(text, args.path)
    if project is not None:
        slug = slugify(project.name or Path(args.path).resolve().parent.name)
        project, problems = check(text, args.path, lambda env: naming.namespace(slug, env))
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if args.json:
        output.print_json(
            {
                "path": args.path,
                "valid": project is not None,
                "problems": [p.as_json() for p in problems],
            }
        )
    else:
        for problem in problems:
            sys.stderr.write(f"{problem}\n")
        if project is not None:
            envs = ", ".join(project.environment_names) or "none"
            units = project.configs[0].unit_names if project.configs else ()
            print(f"{args.path}: valid ({len(units)} units; environments: {envs})")
        else:
            sys.stderr.write(f"{args.path}: {len(errors)} error{'s' if len(errors) != 1 else ''}\n")
    return output.EXIT_OK if project is not None else output.EXIT_REFUSED
