"""What a request would do to the cluster: rendered objects created, configured and deleted.

Computed the way ``kubectl diff`` would see it, from the manifests of the release being
requested against those of the release it replaces, both rendered from their frozen inputs
by the same renderer the engine uses. Secret values play no part: Secret objects render with
placeholders, so a summary can never carry a secret, and a changed secret value does not
show as "configured" (it is not in the request either).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from notifiers.facts import ManifestDiff
from reconciler.errors import NebulaError
from reconciler.model.frozen import FrozenRelease
from reconciler.model.specs import DatabaseSpec
from reconciler.store import schema
from renderers import rendering
from renderers.manifests import Manifests
from renderers.releases import DatabaseUnit, Scope, release_spec
from renderers.secrets import PLACEHOLDERS

Pair = tuple[schema.Release | None, schema.Release | None]  # (requested, replaced)


def summarize(scope: Scope, pairs: Iterable[Pair]) -> ManifestDiff:
    created: list[str] = []
    configured: list[str] = []
    deleted: list[str] = []
    unchanged = 0
    try:
        for new, old in pairs:
            after = _by_ref(scope, new)
            before = _by_ref(scope, old)
            created += [ref for ref in after if ref not in before]
            deleted += [ref for ref in before if ref not in after]
            for ref in after.keys() & before.keys():
                if after[ref] != before[ref]:
                    configured.append(ref)
                else:
                    unchanged += 1
    except (NebulaError, KeyError, ValueError, TypeError) as exc:
        return ManifestDiff(unavailable=f"the manifests could not be rendered: {exc}")
    return ManifestDiff(
        created=tuple(created),
        configured=tuple(sorted(configured)),
        deleted=tuple(deleted),
        unchanged=unchanged,
    )


def _by_ref(scope: Scope, release: schema.Release | None) -> dict[str, Any]:
    if release is None:
        return {}
    return {m.ref: dict(m.body) for m in render(scope, release)}


def render(scope: Scope, release: schema.Release) -> Manifests:
    """A stored release's own objects and its service's shared ones, without secret values."""
    renderer = rendering.renderer()
    frozen = FrozenRelease.from_storage(release.config)
    if isinstance(frozen.unit, DatabaseSpec):
        return renderer.database(DatabaseUnit(scope, frozen.unit), PLACEHOLDERS)
    spec = release_spec(scope, release.number, frozen)
    return renderer.release(spec) + renderer.service(spec)
