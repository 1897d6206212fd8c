"""Releases for the runtime tests: a small nebula.toml rendered by the real renderers into the
``ReleaseObjects`` the engine hands a runtime."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from reconciler.model import validation
from reconciler.runtimes.cluster import ProbeKind, ReleaseObjects
from renderers import naming, releases
from renderers.capabilities import RECENT, Capabilities
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS


def image(name: str, tag: str) -> str:
    """A digest-pinned image reference of repository ``name``, unique per ``tag``."""
    digest = hashlib.sha256(f"{name}:{tag}".encode()).hexdigest()
    return f"registry.example.com/nebula-tests/{name}@sha256:{digest}"


@dataclass(frozen=True)
class Service:
    """What the tests vary in the one service they deploy."""

    image: str
    kind: str = "http"  # the primary process's type: http, worker (with a port), cron-only
    replicas: int = 2
    release_command: bool = True
    release_command_timeout: int = 60
    cron: bool = False
    # Not 0: Kubernetes 1.20 stores a Deployment's `minReadySeconds: 0` as absent, so an apply
    # that says 0 is never a no-op there (see test_a_second_apply_of_the_same_release...).
    stabilization_seconds: int = 1
    routing: str = ""  # an environment line: gateway = "ns/name" or ingress_class = "..."
    domains: tuple[str, ...] = ()  # of the web process
    autoscale: str = ""  # the web process's, e.g. "{ min = 2, max = 4 }" (then no replicas)

    def toml(self, unit: str) -> str:
        lines = [
            "[project]",
            'name = "Runtime tests"',
            "",
            "[environments.staging]",
            self.routing,
            "",
            f"[services.{unit}]",
            f'image = "{self.image}"',
        ]
        if self.release_command:
            lines += [
                'release_command = ["bin/migrate", "--yes"]',
                f"release_command_timeout = {self.release_command_timeout}",
            ]
        if self.kind != "cron-only":
            lines += [
                "",
                f"[services.{unit}.processes.web]",
                f'type = "{self.kind}"',
                'command = ["bin/serve"]',
                "port = 8080",
                f"autoscale = {self.autoscale}"
                if self.autoscale
                else f"replicas = {self.replicas}",
                'instance_size = "nano"',
                f"stabilization_seconds = {self.stabilization_seconds}",
            ]
            if self.kind == "http":
                lines.append('readiness_path = "/healthz"')
            if self.domains:
                lines.append(f"domains = {list(self.domains)!r}".replace("'", '"'))
        if self.cron or self.kind == "cron-only":
            lines += [
                "",
                f"[services.{unit}.processes.nightly]",
                'type = "cron"',
                'schedule = "0 3 * * *"',
                'command = ["bin/report"]',
            ]
        lines += ["", f"[services.{unit}.variables]", 'LOG_LEVEL = "info"']
        return "\n".join(lines) + "\n"


def body(manifest: Any) -> dict[str, Any]:
    return dict(manifest.body)


def release_objects(
    project: str,
    number: int,
    service: Service,
    *,
    unit: str = "api",
    capabilities: Capabilities = RECENT,
) -> ReleaseObjects:
    """Release ``r-<number>`` of ``unit`` in namespace ``<project>-staging``."""
    config = validation.load(service.toml(unit)).environment("staging")
    assert config is not None
    spec = releases.release_from_config(project, config, unit, number)
    renderer = Renderer(capabilities)
    environment = renderer.environment(
        releases.environment_from_config(project, config), PLACEHOLDERS
    )
    per_service = renderer.service(spec)
    rendered = renderer.release(spec)
    job_name = naming.release_job(unit, number)
    release_job = next((m for m in rendered if m.kind == "Job" and m.name == job_name), None)
    stable = next((m for m in per_service if m.kind == "Service"), None)
    primary = spec.service.primary_process
    probe = ProbeKind.NONE
    if primary is not None and primary.port is not None:
        probe = ProbeKind.HTTP if primary.type.value == "http" else ProbeKind.TCP
    return ReleaseObjects(
        project=project,
        environment="staging",
        namespace=spec.scope.namespace,
        unit=unit,
        release=naming.release_label(number),
        image=service.image,
        shared=tuple(
            body(m) for m in (*environment, *(m for m in per_service if m.kind != "Service"))
        ),
        release_job=body(release_job) if release_job is not None else None,
        workload=tuple(body(m) for m in rendered if m is not release_job),
        stable_service=body(stable) if stable is not None else None,
        primary=naming.deployment(unit, number, primary.name, True) if primary else None,
        replicas=primary.least_replicas if primary else 0,
        own_service=naming.release_service(unit, number) if primary and primary.port else None,
        port=primary.port if primary else None,
        readiness_path=primary.readiness_path if primary else "/",
        probe=probe,
        release_command_timeout=spec.service.release_command_timeout,
    )


def cloudnative_objects(project: str, instances: int = 2) -> ReleaseObjects:
    """Release r-1 of postgres database ``db`` as a CloudNativePG Cluster of ``instances``."""
    text = (
        '[environments.staging]\npostgres = "cloudnative-pg"\n'
        f'[databases.db]\nvolume_size = "1Gi"\ninstances = {instances}\n'
    )
    config = validation.load(text).environment("staging")
    assert config is not None
    unit = releases.database_from_config(project, config, "db")
    renderer = Renderer()
    environment = renderer.environment(
        releases.environment_from_config(project, config), PLACEHOLDERS
    )
    return ReleaseObjects(
        project=project,
        environment="staging",
        namespace=unit.scope.namespace,
        unit="db",
        release="r-1",
        image="postgres:16",
        is_database=True,
        shared=tuple(body(m) for m in environment),
        workload=tuple(body(m) for m in renderer.database(unit, PLACEHOLDERS)),
        primary="db",
        primary_kind="Cluster",
        replicas=instances,
    )
