"""nebula.toml texts the engine tests push, built from a few knobs so each test says only
what it changes."""

from __future__ import annotations

import hashlib

from reconciler.core.states import Blocker
from tests.plugins.nebula import image

API = image("api")


def broken(blocker: Blocker) -> str:
    """An api image the simulated cluster fails with ``blocker`` (see ``FAULTS_TOML``)."""
    return image("api", "sha256:" + hashlib.sha256(blocker.value.encode()).hexdigest())


FAULTS = (
    Blocker.IMAGE_PULL,
    Blocker.CAPACITY,
    Blocker.READINESS,
    Blocker.RELEASE_COMMAND,
    Blocker.ROUTE_ACTIVATION,
)
# A database version whose image (``postgres:<version>``) cannot be pulled.
BROKEN_DB_VERSION = "17"
FAULTS_TOML = "".join(f'[images."{broken(b)}"]\nfail = "{b.value}"\n\n' for b in FAULTS) + (
    f'[images."postgres:{BROKEN_DB_VERSION}"]\nfail = "image-pull"\n'
)


def app(
    *,
    api_image: str = API,
    level: str = "info",
    release_command: bool = False,
    volume: bool = False,
    secret: str | None = None,
    protected: bool = False,
) -> str:
    """One environment (``staging``, or a protected ``production``) with one http service."""
    env = (
        "[environments.production]\nprotected = true\n" if protected else "[environments.staging]\n"
    )
    text = f'{env}\n[services.api]\nimage = "{api_image}"\n'
    if release_command:
        text += 'release_command = ["bin/migrate"]\n'
    text += (
        '[services.api.processes.web]\ntype = "http"\nport = 8080\nreadiness_path = "/healthz"\n'
    )
    text += f'[services.api.variables]\nLOG_LEVEL = "{level}"\n'
    if secret:
        text += f'STRIPE_KEY = "${{{{ secret.{secret} }}}}"\n'
    if volume:
        text += (
            '[services.api.volumes.data]\nmount = "/data"\nsize = "5Gi"\naccept_downtime = true\n'
        )
    return text


def stack(
    *,
    db_version: str = "16",
    api_level: str = "info",
    worker_level: str = "info",
    api_release_command: bool = False,
) -> str:
    """A database, an api that reads it (so waits for it), and a worker that depends on
    nothing (``host(api)`` is only an address)."""
    text = f'''
[environments.staging]

[databases.db]
version = "{db_version}"

[services.api]
image = "{API}"
'''
    if api_release_command:
        text += 'release_command = ["bin/migrate"]\n'
    return (
        text
        + f'''[services.api.processes.web]
type = "http"
port = 8080
[services.api.variables]
LOG_LEVEL = "{api_level}"
DATABASE_URL = "${{{{ db.DATABASE_URL }}}}"

[services.worker]
image = "{image("worker")}"
[services.worker.processes.main]
type = "worker"
[services.worker.variables]
LOG_LEVEL = "{worker_level}"
API_URL = "http://${{{{ host(api) }}}}"
'''
    )


def promotable(*, staging_image: str = API) -> str:
    """staging and a protected production; staging may run another image (an override)."""
    return f'''
[environments.staging]
[environments.production]
protected = true

[services.api]
image = "{API}"
[services.api.processes.web]
type = "http"
port = 8080
[services.api.environments.staging]
image = "{staging_image}"
'''
