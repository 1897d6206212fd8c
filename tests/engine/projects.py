"""nebula.toml texts the engine tests push: fixture projects edited by a few knobs, so each test
says only what it changes."""

from __future__ import annotations

import hashlib

from fixtures import loading
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
    """One environment (``staging``, or a protected ``production``) with one http service:
    fixtures/projects/single-api."""
    variables = f'LOG_LEVEL = "{level}"\n'
    if secret:
        variables += f'STRIPE_KEY = "${{{{ secret.{secret} }}}}"\n'
    edits = {API: api_image, 'LOG_LEVEL = "info"\n': variables}
    if protected:
        edits["[environments.staging]\n"] = "[environments.production]\nprotected = true\n"
    if release_command:
        edits["[services.api.processes.web]\n"] = (
            'release_command = ["bin/migrate"]\n[services.api.processes.web]\n'
        )
    text = loading.project("single-api", edits)
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
    nothing (``host(api)`` is only an address): fixtures/projects/staging-stack."""
    edits = {
        'version = "16"': f'version = "{db_version}"',
        'LOG_LEVEL = "info"\nDATABASE_URL': f'LOG_LEVEL = "{api_level}"\nDATABASE_URL',
        'LOG_LEVEL = "info"\nAPI_URL': f'LOG_LEVEL = "{worker_level}"\nAPI_URL',
    }
    if api_release_command:
        edits["[services.api.processes.web]\n"] = (
            'release_command = ["bin/migrate"]\n[services.api.processes.web]\n'
        )
    return loading.project("staging-stack", edits)


def promotable(*, staging_image: str = API) -> str:
    """staging and a protected production; staging may run another image (an override)."""
    return (
        loading.project("two-environments")
        + f'[services.api.environments.staging]\nimage = "{staging_image}"\n'
    )


def many(count: int) -> str:
    """``count`` copies of single-api's service (``api0``, ``api1``, ...), each its own image."""
    text = loading.project("single-api")
    head, service = text.split("[services.api]", 1)
    return head + "".join(
        f"[services.api{n}]"
        + service.replace("services.api.", f"services.api{n}.").replace(
            "a" * 64, hashlib.sha256(str(n).encode()).hexdigest()
        )
        for n in range(count)
    )
