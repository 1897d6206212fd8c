"""The nebula.toml the end-to-end scenarios push, built from a few knobs so each test says only
what it changes.

Every process is ``nano`` and stabilizes for 1 s, so a rollout on the test control plane takes
seconds. No release command: the test kubelet scripts pods by image, and a release's Job runs
the release's own image, so a Job pod and the Deployment's pods could not behave differently
here (the runtime's contract suite covers the Job with a stand-in image).
"""

from __future__ import annotations

import hashlib


def image(name: str, tag: str) -> str:
    """A digest-pinned image of repository ``name``, one digest per ``tag``."""
    digest = hashlib.sha256(f"{name}:{tag}".encode()).hexdigest()
    return f"registry.example.com/e2e/{name}@sha256:{digest}"


WEB = image("web", "1")
WEB_2 = image("web", "2")
WORKER = image("worker", "1")
DATABASE_IMAGE = "postgres:16"  # what the renderer runs for `version = "16"`


def project(
    *,
    web: str = WEB,
    worker: str | None = WORKER,
    database: bool = True,
    environments: tuple[str, ...] = ("staging", "production"),
    protected: tuple[str, ...] = ("production",),
    replicas: int = 1,
) -> str:
    """An http service ``web`` (reading the database when there is one), a worker without a
    port that only knows web's address, and a Postgres database."""
    text = ""
    for env in environments:
        text += f"[environments.{env}]\n"
        if env in protected:
            text += "protected = true\n"
    if database:
        text += '\n[databases.db]\nversion = "16"\nvolume_size = "1Gi"\n'
    text += f'''
[services.web]
image = "{web}"
[services.web.processes.web]
type = "http"
port = 8080
readiness_path = "/healthz"
instance_size = "nano"
stabilization_seconds = 1
replicas = {replicas}
[services.web.variables]
LOG_LEVEL = "info"
'''
    if database:
        text += 'DATABASE_URL = "${{ db.DATABASE_URL }}"\n'
    if worker is not None:
        text += f'''
[services.worker]
image = "{worker}"
[services.worker.processes.jobs]
type = "worker"
instance_size = "nano"
stabilization_seconds = 1
[services.worker.variables]
SITE_URL = "http://${{{{ host(web) }}}}"
'''
    return text


def web_only(web: str = WEB, replicas: int = 1) -> str:
    """Just the http service, in staging: for scenarios about one deployment at a time."""
    return project(
        web=web, worker=None, database=False, environments=("staging",), replicas=replicas
    )
