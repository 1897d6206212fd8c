"""``nebula validate``, ``nebula render`` and ``nebula init``: work on a nebula.toml file, with
no server and no store. Their parsers are declared here, light; the parser, the validator, the
renderer and the templates load when the command runs (``files``, ``rendering``, ``starters``).
"""

from __future__ import annotations

import argparse
import re

from reconciler import numbers
from reconciler.cli import common
from reconciler.lazy import Part
from renderers import capabilities

VALIDATE = Part("reconciler.cli.files", "validate")
RENDER = Part("reconciler.cli.rendering", "render")
INIT = Part("reconciler.cli.starters", "init")
_SLUG = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def register(subparsers: common.Subparsers) -> None:
    parser = subparsers.add_parser("validate", help="validate a nebula.toml")
    parser.add_argument("path", help="the nebula.toml file")
    parser.add_argument("--json", action="store_true", help="print the problems as JSON")
    parser.set_defaults(func=VALIDATE.calling())

    parser = subparsers.add_parser(
        "render",
        help="print the Kubernetes manifests a nebula.toml would create",
        description="Render the release(s) a nebula.toml would create in one environment, "
        "offline: secrets and database passwords appear as placeholders.",
    )
    parser.add_argument("path", help="the nebula.toml file")
    parser.add_argument("--env", required=True, help="the environment to render")
    parser.add_argument("--service", help="only this service or database")
    parser.add_argument(
        "--release", type=_release_number, default=1, metavar="N", help="release number (default 1)"
    )
    parser.add_argument(
        "--project",
        type=_slug,
        metavar="SLUG",
        help="project slug (default: from [project] name, else the file's directory)",
    )
    parser.add_argument("--out", metavar="DIR", help="write one file per object into DIR")
    parser.add_argument(
        "--kube-version",
        choices=sorted(capabilities.PRESETS),
        default=capabilities.LATEST,
        help="the cluster's Kubernetes version (default: latest)",
    )
    parser.set_defaults(func=RENDER.calling())

    parser = subparsers.add_parser(
        "init",
        help="write a commented starter nebula.toml",
        description="Write a starter nebula.toml into DIR (default: here), from a template whose "
        "comments explain the format. An existing nebula.toml is never overwritten.",
    )
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help="default: here")
    parser.add_argument(
        "--template", metavar="NAME", help="which starter (default: web; see --list)"
    )
    parser.add_argument("--list", action="store_true", help="list the templates")
    common.add_json(parser)
    parser.set_defaults(func=INIT.calling())


def _release_number(text: str) -> int:
    number = numbers.whole(text)
    if number is None or number < 1:
        raise argparse.ArgumentTypeError(f"release number must be a positive integer, not {text!r}")
    return number


def _slug(text: str) -> str:
    if not _SLUG.match(text) or text.endswith("-"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a slug (lowercase letters, digits and '-', starting with a letter)"
        )
    return text
