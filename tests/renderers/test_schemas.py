"""Schema validation: which version, and a failure that names the object."""

from __future__ import annotations

import pytest

from reconciler.errors import ManifestError
from renderers import capabilities, manifests, schemas
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest
from tests.renderers import samples
from tests.renderers.samples import find


def _with_body(manifest: Manifest, body: dict[str, object]) -> Manifest:
    return Manifest(
        manifest.api_version, manifest.kind, manifest.name, manifest.namespace, manifest.text, body
    )


def test_the_installed_package_carries_a_window_of_versions() -> None:
    versions = schemas.carried_versions()

    assert versions == tuple(sorted(versions, key=lambda v: tuple(int(p) for p in v.split("."))))
    assert schemas.schema_version(capabilities.RECENT) == versions[-1]
    assert schemas.schema_version(capabilities.KUBERNETES_1_20) == versions[0]


def test_a_version_inside_the_window_uses_its_own_schemas() -> None:
    versions = schemas.carried_versions()
    caps = Capabilities(versions[1], capabilities.RECENT.api_versions)

    assert schemas.schema_version(caps) == versions[1]


def test_an_unknown_field_fails_naming_the_object_and_the_place() -> None:
    deployment = find(samples.render_project(), "Deployment", "api-r1")
    body = dict(deployment.body)
    body["spec"] = {**body["spec"], "replicaz": 2}

    with pytest.raises(ManifestError) as caught:
        schemas.validate([_with_body(deployment, body)], capabilities.RECENT)

    assert caught.value.code == "invalid-manifest"
    assert caught.value.message.startswith("Deployment/api-r1 does not match the Kubernetes ")
    assert "replicaz" in caught.value.message


def test_a_wrong_type_fails_naming_the_field() -> None:
    claim = find(samples.render_project(), "PersistentVolumeClaim", "api-data")
    body = {**claim.body, "spec": {**claim.body["spec"], "accessModes": "ReadWriteOnce"}}

    with pytest.raises(
        ManifestError, match=r"PersistentVolumeClaim/api-data .* at spec\.accessModes"
    ):
        schemas.validate([_with_body(claim, body)], capabilities.RECENT)


def test_an_api_version_the_schemas_do_not_know_is_an_error() -> None:
    namespace = samples.render_project()[0]
    odd = Manifest(
        "v9",
        "Namespace",
        namespace.name,
        None,
        namespace.text,
        {**namespace.body, "apiVersion": "v9"},
    )

    with pytest.raises(ManifestError, match=r"Namespace/shop-staging: no schema for v9 Namespace"):
        schemas.validate([odd], capabilities.RECENT)


def test_a_template_that_renders_a_different_object_is_caught_at_parse_time() -> None:
    draft = manifests.Draft(
        "Namespace", "expected", "namespace.j2", {"name": "other", "namespace": None, "labels": ()}
    )

    with pytest.raises(ManifestError, match="Namespace/expected rendered as a different object"):
        manifests.render(draft)


def test_a_template_given_an_unquoted_value_fails_naming_the_object() -> None:
    draft = manifests.Draft(
        "Namespace", "x", "namespace.j2", {"name": "x", "namespace": None, "labels": (("k", 1),)}
    )

    with pytest.raises(ManifestError, match=r"rendering Namespace/x failed: TypeError"):
        manifests.render(draft)
