"""``nebula render``: the manifests of the release a file would create (offline)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Filled in with the renderers (issue 2)."""
