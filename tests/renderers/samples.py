"""The nebula.toml texts (fixtures/projects/every-process and a worker-only one) and helpers the
renderer tests share."""

from __future__ import annotations

from typing import Any

from fixtures import loading
from reconciler.model import validation
from reconciler.model.specs import EnvironmentConfig
from renderers import capabilities, releases
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest, Manifests
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS

API_IMAGE = "registry.example.com/shop/api@sha256:" + "a" * 64
SEARCH_IMAGE = "registry.example.com/shop/search@sha256:" + "b" * 64

SHOP = loading.project("every-process")

WORKER_ONLY = f"""
[environments.staging]

[services.jobs]
image = "{API_IMAGE}"

[services.jobs.processes.run]
type = "worker"
command = ["bin/run"]

[services.jobs.processes.hourly]
type = "cron"
schedule = "0 * * * *"
"""


def config(text: str = SHOP, env: str = "staging") -> EnvironmentConfig:
    found = validation.load(text).environment(env)
    assert found is not None
    return found


def release(
    text: str = SHOP, service: str = "api", env: str = "staging", number: int = 1
) -> releases.ReleaseSpec:
    return releases.release_from_config("shop", config(text, env), service, number)


def render_project(
    text: str = SHOP,
    env: str = "staging",
    caps: Capabilities = capabilities.RECENT,
    units: list[str] | None = None,
) -> Manifests:
    return Renderer(caps).project(
        "shop", config(text, env), secrets=PLACEHOLDERS, passwords=PLACEHOLDERS, units=units
    )


def find(manifests: Manifests, kind: str, name: str) -> Manifest:
    matches = [m for m in manifests if m.kind == kind and m.name == name]
    assert len(matches) == 1, f"{kind}/{name} in {[m.ref for m in manifests]}"
    return matches[0]


def container(manifest: Manifest) -> dict[str, Any]:
    """The one container of a Deployment, StatefulSet, Job or CronJob."""
    spec = manifest.body["spec"]
    if manifest.kind == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    containers = spec["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


def env_of(manifest: Manifest) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = container(manifest).get("env", [])
    return result
