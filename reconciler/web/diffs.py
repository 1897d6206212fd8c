"""The rendered-manifest diff of a change set or an approval, for the status page: the same
objects ``notifiers.manifestdiffs`` summarizes for Slack (created, configured, deleted, by
``Kind/name``), each with its unified diff of the rendered YAML, as ``kubectl diff`` shows it.

Secrets render with placeholders (never their values), so no diff can hold one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from notifiers import manifestdiffs
from notifiers.facts import ManifestDiff
from reconciler.errors import NebulaError
from reconciler.store import schema
from renderers.releases import Scope

MAX_LINES = 400  # per object: a page stays readable; the rest is said to be cut


@dataclass(frozen=True)
class ObjectDiff:
    ref: str  # Kind/name
    change: str  # created, configured, deleted
    lines: list[tuple[str, str]]  # (css class: add, del, hunk, ctx; the line)
    cut: int = 0  # lines left out past MAX_LINES


@dataclass(frozen=True)
class ManifestView:
    summary: ManifestDiff
    objects: list[ObjectDiff] = field(default_factory=list)


def _yaml(body: dict[str, Any] | None) -> list[str]:
    if body is None:
        return []
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False).splitlines()


def _classify(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+") and not line.startswith("+++"):
        return "add"
    if line.startswith("-") and not line.startswith("---"):
        return "del"
    return "ctx"


def _object(ref: str, change: str, before: Any, after: Any) -> ObjectDiff:
    text = list(
        difflib.unified_diff(
            _yaml(before), _yaml(after), f"before/{ref}", f"after/{ref}", lineterm="", n=3
        )
    )
    shown = [(_classify(line), line) for line in text[:MAX_LINES]]
    return ObjectDiff(ref, change, shown, max(0, len(text) - MAX_LINES))


def _rendered(scope: Scope, release: schema.Release | None) -> dict[str, Any]:
    if release is None:
        return {}
    return {m.ref: dict(m.body) for m in manifestdiffs.render(scope, release)}


def of_deployments(
    project: str, environment: str, deployments: Iterable[schema.Deployment]
) -> ManifestView:
    """The diff of what ``deployments`` do: each release against the one it replaces."""
    scope = Scope(project, environment)
    pairs = [(d.release, d.previous_release) for d in deployments]
    summary = manifestdiffs.summarize(scope, pairs)
    if summary.unavailable:
        return ManifestView(summary)
    objects: list[ObjectDiff] = []
    try:
        for new, old in pairs:
            after, before = _rendered(scope, new), _rendered(scope, old)
            for ref in after:
                if ref not in before:
                    objects.append(_object(ref, "created", None, after[ref]))
                elif after[ref] != before[ref]:
                    objects.append(_object(ref, "configured", before[ref], after[ref]))
            objects += [_object(r, "deleted", before[r], None) for r in before if r not in after]
    except (NebulaError, KeyError, ValueError, TypeError) as exc:
        return ManifestView(ManifestDiff(unavailable=f"the manifests could not be rendered: {exc}"))
    return ManifestView(summary, objects)
