"""``nebula validate`` and ``nebula render``: offline work on a nebula.toml file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconciler.cli import output
from reconciler.model import validation
from reconciler.model.problems import Severity


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("validate", help="validate a nebula.toml")
    parser.add_argument("path", help="the nebula.toml file")
    parser.add_argument("--json", action="store_true", help="print the problems as JSON")
    parser.set_defaults(func=validate)


def read_source(path: str) -> str:
    """A nebula.toml's text; a missing or unreadable file is one error line and exit 1."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SystemExit(fail(f"{path}: no such file")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(fail(f"{path}: cannot read it ({exc.__class__.__name__})")) from None


def fail(message: str) -> int:
    output.error(message)
    return output.EXIT_REFUSED


def validate(args: argparse.Namespace) -> int:
    text = read_source(args.path)
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
