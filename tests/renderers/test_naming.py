"""Names that fit Kubernetes' limits, the same on every render."""

from __future__ import annotations

import re

from renderers import naming
from renderers.capabilities import RECENT
from renderers.manifests import Manifest
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS
from tests.renderers import samples

LONG = "a" * 40  # the longest slug nebula.toml allows
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def test_short_names_are_kept() -> None:
    assert naming.deployment("api", 3, "web", primary=True) == "api-r3"
    assert naming.deployment("api", 3, "worker", primary=False) == "api-r3-worker"
    assert naming.cronjob("api", 3, "nightly") == "api-r3-nightly"
    assert naming.namespace("shop", "production") == "shop-production"


def test_long_names_are_shortened_deterministically_with_a_hash() -> None:
    full = f"{LONG}-r12-{'b' * 40}"

    name = naming.deployment(LONG, 12, "b" * 40, primary=False)

    assert len(name) == 63
    assert name == naming.deployment(LONG, 12, "b" * 40, primary=False)
    assert name.startswith(full[:50])
    assert DNS_LABEL.match(name)
    assert name != naming.deployment(LONG, 12, "c" * 40, primary=False)


def test_cronjob_names_leave_room_for_their_jobs() -> None:
    name = naming.cronjob(LONG, 1, "b" * 40)

    assert len(name) == 52
    assert DNS_LABEL.match(name)


def test_a_shortened_prefix_never_ends_in_a_dash() -> None:
    name = naming.fit("a" * 53 + "-" + "b" * 20)

    assert "--" not in name
    assert DNS_LABEL.match(name)


def test_every_object_of_a_project_with_the_longest_slugs_fits() -> None:
    text = samples.SHOP.replace("services.api", f"services.{LONG}").replace(
        "processes.nightly", f"processes.{'n' * 40}"
    )

    rendered: tuple[Manifest, ...] = Renderer(RECENT).project(
        "p" * 40, samples.config(text), secrets=PLACEHOLDERS, passwords=PLACEHOLDERS, number=123456
    )

    for manifest in rendered:
        limit = 52 if manifest.kind == "CronJob" else 63
        assert len(manifest.name) <= limit, manifest.ref
        assert DNS_LABEL.match(manifest.name), manifest.ref
    assert rendered[0].name == naming.fit(f"{'p' * 40}-staging")
    assert {m.namespace for m in rendered[1:]} == {rendered[0].name}
