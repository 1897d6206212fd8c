"""Pod templates as the templates see them: plain, typed values, already decided.

Everything a template needs to *choose* (which probe, which env entries, the names) is decided
here, so ``_pod.j2`` only lays out structure. Commands are passed through
``quoting.kube_literal`` because Kubernetes expands ``$(NAME)`` in them.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model.specs import (
    DEFAULT_INSTANCE_SIZE,
    InstanceSize,
    ProcessSpec,
    ProcessType,
    ServiceSpec,
)
from renderers import naming, quoting
from renderers.naming import Labels
from renderers.variables import EnvEntry


@dataclass(frozen=True, slots=True)
class Port:
    name: str
    number: int


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str  # "http" | "tcp" | "exec"
    port: int = 0
    path: str = "/"
    command: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Mount:
    name: str
    path: str


@dataclass(frozen=True, slots=True)
class Claim:
    name: str  # the pod volume's name
    claim: str  # the PersistentVolumeClaim's


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...] | None
    cpu: str
    memory: str
    ports: tuple[Port, ...] = ()
    env_from: str | None = None  # a ConfigMap's name
    env: tuple[EnvEntry, ...] = ()
    probe: Probe | None = None
    mounts: tuple[Mount, ...] = ()


@dataclass(frozen=True, slots=True)
class Pod:
    labels: Labels
    containers: tuple[Container, ...]
    restart_policy: str | None = None  # None: the Deployment/StatefulSet default (Always)
    claims: tuple[Claim, ...] = ()


@dataclass(frozen=True, slots=True)
class Environment:
    """What every container of a release shares: its variables and its volumes."""

    env_from: str | None
    env: tuple[EnvEntry, ...]
    mounts: tuple[Mount, ...]
    claims: tuple[Claim, ...]


def port_name(process: ProcessSpec) -> str:
    return "http" if process.type is ProcessType.HTTP else "tcp"


def probe(process: ProcessSpec) -> Probe | None:
    """http: GET readiness_path on the port; a worker with a port: a TCP check; else none."""
    if process.port is None:
        return None
    if process.type is ProcessType.HTTP:
        return Probe("http", port=process.port, path=process.readiness_path)
    return Probe("tcp", port=process.port)


def volumes(service: ServiceSpec) -> tuple[tuple[Mount, ...], tuple[Claim, ...]]:
    mounts = tuple(Mount(v.name, v.mount) for v in service.volumes)
    claims = tuple(
        Claim(v.name, naming.volume_claim(service.name, v.name)) for v in service.volumes
    )
    return mounts, claims


def command(args: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return None if args is None else tuple(quoting.kube_literal(a) for a in args)


def process_pod(
    service: ServiceSpec, process: ProcessSpec, labels: Labels, shared: Environment
) -> Pod:
    restart = None if process.type.is_long_running else "Never"
    container = Container(
        name=process.name,
        image=service.image,
        command=command(process.command),
        cpu=process.instance_size.cpu,
        memory=process.instance_size.memory,
        ports=() if process.port is None else (Port(port_name(process), process.port),),
        env_from=shared.env_from,
        env=shared.env,
        probe=probe(process) if process.type.is_long_running else None,
        mounts=shared.mounts,
    )
    return Pod(naming.with_process(labels, process.name), (container,), restart, shared.claims)


def release_command_pod(service: ServiceSpec, labels: Labels, shared: Environment) -> Pod:
    """The release command runs with the new image and the release's own environment."""
    size = _size(service)
    container = Container(
        name="release",
        image=service.image,
        command=command(service.release_command),
        cpu=size.cpu,
        memory=size.memory,
        env_from=shared.env_from,
        env=shared.env,
        mounts=shared.mounts,
    )
    return Pod(
        naming.with_process(labels, naming.RELEASE_COMMAND), (container,), "Never", shared.claims
    )


def _size(service: ServiceSpec) -> InstanceSize:
    primary = service.primary_process
    return primary.instance_size if primary is not None else DEFAULT_INSTANCE_SIZE
