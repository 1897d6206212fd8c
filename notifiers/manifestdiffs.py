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
from reconciler.engine import releases
from reconciler.errors import NebulaError
from reconciler.model.specs import DatabaseSpec, ServiceSpec
from reconciler.store import schema
from renderers.manifests import Manifests
from renderers.releases import DatabaseUnit, ReleaseSpec, Scope
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS

# Its own renderer (cached by content): the engine's module imports too much of the engine.
_RENDERER = Renderer()

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
    renderer = _RENDERER
    spec = releases.spec_of(release)
    if isinstance(spec, DatabaseSpec):
        return renderer.database(DatabaseUnit(scope, spec), PLACEHOLDERS)
    assert isinstance(spec, ServiceSpec)
    config = release.config
    release_spec = ReleaseSpec(
        scope=scope,
        service=spec,
        number=release.number,
        variables=tuple(
            (k, releases.segments_from_json(v)) for k, v in config.get("variables", [])
        ),
        ports=tuple(sorted((k, v) for k, v in config.get("ports", {}).items())),
    )
    return renderer.release(release_spec) + renderer.service(release_spec)
