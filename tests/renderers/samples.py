"""Small nebula.toml texts and helpers the renderer tests share."""

from __future__ import annotations

from typing import Any

from reconciler.model import validation
from reconciler.model.specs import EnvironmentConfig
from renderers import capabilities, releases
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest, Manifests
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS

API_IMAGE = "registry.example.com/shop/api@sha256:" + "a" * 64
SEARCH_IMAGE = "registry.example.com/shop/search@sha256:" + "b" * 64

SHOP = f"""
[project]
name = "Shop"

[environments.staging]
[environments.production]
protected = true

[databases.db]
version = "16"
instance_size = "medium"
volume_size = "20Gi"

[services.search]
image = "{SEARCH_IMAGE}"

[services.search.processes.web]
type = "http"
port = 9200

[services.search.variables]
API_KEY = "${{{{ secret.SEARCH_KEY }}}}"
REGION = "eu"

[services.api]
image = "{API_IMAGE}"
release_command = ["bin/migrate", "--yes"]
release_command_timeout = 300

[services.api.processes.web]
type = "http"
command = ["gunicorn", "app:app"]
port = 8080
readiness_path = "/healthz"
replicas = 2
instance_size = "large"
stabilization_seconds = 15

[services.api.processes.worker]
type = "worker"
command = ["celery", "worker"]
port = 9000
instance_size = "nano"

[services.api.processes.nightly]
type = "cron"
schedule = "0 3 * * *"
command = ["bin/report"]

[services.api.processes.backfill]
type = "job"
command = ["bin/backfill"]

[services.api.variables]
LOG_LEVEL = "info"
DATABASE_URL = "${{{{ db.DATABASE_URL }}}}"
SEARCH_KEY = "${{{{ search.API_KEY }}}}"
SEARCH_URL = "http://${{{{ host(search) }}}}/v1"
DB_HOST = "${{{{ db.PGHOST }}}}:${{{{ db.PGPORT }}}}/${{{{ db.PGDATABASE }}}}"

[services.api.volumes.data]
mount = "/data"
size = "5Gi"
accept_downtime = true

[services.api.environments.production]
variables = {{ LOG_LEVEL = "warn" }}
processes.web.replicas = 4
"""

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
