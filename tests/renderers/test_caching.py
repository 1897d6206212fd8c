"""Unchanged input is served from the cache; any change renders again."""

from __future__ import annotations

import dataclasses

from renderers import capabilities, releases
from renderers.caching import ContentCache
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS, SecretValues
from tests.renderers import samples


def test_the_same_content_rebuilt_as_a_new_object_is_a_hit() -> None:
    renderer = Renderer()
    first = renderer.release(samples.release())

    again = renderer.release(
        samples.release()
    )  # parsed and built from scratch: equal, not identical

    assert again is first
    assert (renderer.cache.hits, renderer.cache.misses) == (1, 1)


def test_a_changed_image_variable_or_number_is_a_miss() -> None:
    renderer = Renderer()
    spec = samples.release()
    renderer.release(spec)

    changed = [
        dataclasses.replace(
            spec, service=dataclasses.replace(spec.service, image=samples.SEARCH_IMAGE)
        ),
        dataclasses.replace(spec, variables=spec.variables[1:]),
        dataclasses.replace(spec, number=2),
        dataclasses.replace(spec, scope=releases.Scope("shop", "production")),
    ]
    for other in changed:
        assert renderer.release(other) != renderer.release(spec)

    assert renderer.cache.misses == 1 + len(changed)


def test_capabilities_are_part_of_the_key() -> None:
    spec = samples.release()
    recent = Renderer(capabilities.RECENT).release(spec)
    old = Renderer(capabilities.KUBERNETES_1_20).release(spec)

    assert [m.api_version for m in recent if m.kind == "CronJob"] == ["batch/v1"]
    assert [m.api_version for m in old if m.kind == "CronJob"] == ["batch/v1beta1"]


def test_secret_values_are_part_of_the_key() -> None:
    renderer = Renderer()
    unit = releases.environment_from_config("shop", samples.config())

    one = renderer.environment(unit, SecretValues.of({"SEARCH_KEY": "one"}))
    two = renderer.environment(unit, SecretValues.of({"SEARCH_KEY": "two"}))
    placeholders = renderer.environment(unit, PLACEHOLDERS)

    assert len({one[1].text, two[1].text, placeholders[1].text}) == 3


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache: ContentCache[int] = ContentCache(size=2)
    cache.get("a", lambda: 1)
    cache.get("b", lambda: 2)
    cache.get("a", lambda: 0)  # a is now the most recent
    cache.get("c", lambda: 3)  # evicts b

    assert cache.get("a", lambda: -1) == 1
    assert cache.get("b", lambda: -2) == -2
    assert len(cache) == 2
