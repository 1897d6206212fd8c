"""``nebula import compose FILE``: a Compose file turned into a nebula.toml, offline.

The parser is declared here, light; the conversion (PyYAML, the validator) loads when the
command runs (``composefiles``).
"""

from __future__ import annotations

import argparse

from reconciler.cli import common
from reconciler.lazy import Part

COMPOSE = Part("reconciler.cli.composefiles", "import_compose")


def register(subparsers: common.Subparsers) -> None:
    kinds = subparsers.add_parser(
        "import", help="write a nebula.toml from what a team has (a Compose file)"
    ).add_subparsers(dest="import_command", metavar="KIND", required=True)
    parser = kinds.add_parser(
        "compose",
        help="write a nebula.toml from a Compose file",
        description="Turn a Compose file into a nebula.toml: images become services (postgres "
        "and redis images become databases, and the connection strings that point at them "
        "references), ports and healthchecks processes and readiness, depends_on depends_on, "
        "environment values variables (secret-looking ones ${{ secret.NAME }}), named volumes "
        "volumes. What has no equivalent is one line each on stderr, FILE:LINE:COL: and what "
        "to do. The file is written only if it validates (exit 0); otherwise nothing is "
        "written (exit 1).",
    )
    parser.add_argument("file", metavar="FILE", help="the Compose file (docker-compose.yml)")
    parser.add_argument(
        "--out",
        metavar="PATH",
        default="nebula.toml",
        help="where to write it (default: nebula.toml; -: standard output); an existing file "
        "is never overwritten",
    )
    parser.add_argument(
        "--image",
        metavar="SERVICE=REF",
        action="append",
        type=_image,
        default=[],
        help="the image of a service that Compose builds (build: without image); repeatable",
    )
    parser.set_defaults(func=COMPOSE.calling())


def _image(text: str) -> tuple[str, str]:
    service, equals, ref = text.partition("=")
    if not equals or not service or not ref or any(c.isspace() for c in ref):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not SERVICE=REF (e.g. web=registry.example.com/shop/web:1.4)"
        )
    return service, ref
