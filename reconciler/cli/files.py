"""``nebula validate`` and ``nebula render``: offline work on a nebula.toml file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reconciler.cli import common, output
from reconciler.model import validation
from reconciler.model.problems import Severity
from reconciler.numbers import format_size


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


def fail(message: str, hint: str | None = None) -> int:
    output.error(message, hint)
    return output.EXIT_REFUSED


def validate(args: argparse.Namespace) -> int:
    text = read_source(args.path, args)
    project, problems = validation.check(text, args.path)
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
