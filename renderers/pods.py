"""Pod templates as the templates see them: plain, typed values, already decided.

Everything a template needs to *choose* (which probe, which env entries, the names) is decided
here, so ``_pod.j2`` only lays out structure. Commands are passed through
``quoting.kube_literal`` because Kubernetes expands ``$(NAME)`` in them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reconciler.model.specs import (
    DEFAULT_SHUTDOWN_GRACE_SECONDS,
    Pairs,
    Platform,
    PodSecurity,
    ProcessSpec,
    ProcessType,
    ServiceSpec,
    Toleration,
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
    liveness: Probe | None = None  # with a startupProbe on ``probe`` (behaviour.md "Pods")
    drop_all: bool = False  # capabilities drop ALL (the restricted profile)


@dataclass(frozen=True, slots=True)
class Settings:
    """What every pod of a unit shares beyond its containers (behaviour.md "Pods (1.2)"):
    who it runs as, where it is scheduled, what it pulls with. The defaults are what every
    pod gets: no service-account token, seccomp RuntimeDefault, no privilege escalation."""

    hardened: bool = True  # False: a release frozen before 1.2, rendered as it was then
    restricted: bool = False  # runAsNonRoot and capabilities drop ALL
    run_as: int | None = None  # a database image's non-root user (and its group, fsGroup)
    service_account: str | None = None
    annotations: Pairs = ()
    labels: Pairs = ()
    node_selector: Pairs = ()
    tolerations: tuple[Toleration, ...] = ()
    image_pull_secrets: tuple[str, ...] = ()
    grace_seconds: int = DEFAULT_SHUTDOWN_GRACE_SECONDS


@dataclass(frozen=True, slots=True)
class Pod:
    labels: Labels
    containers: tuple[Container, ...]
    restart_policy: str | None = None  # None: the Deployment/StatefulSet default (Always)
    claims: tuple[Claim, ...] = ()
    settings: Settings = Settings()

    @property
    def all_labels(self) -> Labels:
        """The pod template's labels: Nebula's (which selectors use) and then the service's."""
        return (*self.labels, *self.settings.labels)


def settings(service: ServiceSpec) -> Settings:
    placement = service.kubernetes
    return Settings(
        hardened=service.platform.hardened,
        restricted=service.platform.pod_security is PodSecurity.RESTRICTED,
        service_account=placement.service_account,
        annotations=placement.annotations,
        labels=placement.labels,
        node_selector=placement.node_selector,
        tolerations=placement.tolerations,
        image_pull_secrets=service.platform.image_pull_secrets,
    )


def database_settings(platform: Platform, user: int) -> Settings:
    """A database runs as its image's own non-root user where the profile asks for it."""
    restricted = platform.pod_security is PodSecurity.RESTRICTED
    return Settings(
        hardened=platform.hardened,
        restricted=restricted,
        run_as=user if restricted else None,
        image_pull_secrets=platform.image_pull_secrets,
    )


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


def liveness(process: ProcessSpec) -> Probe | None:
    if process.liveness_path is None or process.port is None:
        return None
    return Probe("http", port=process.port, path=process.liveness_path)


def process_pod(
    service: ServiceSpec, process: ProcessSpec, labels: Labels, shared: Environment
) -> Pod:
    restart = None if process.type.is_long_running else "Never"
    common = settings(service)
    container = Container(
        name=process.name,
        image=service.image,
        command=command(process.command),
        cpu=process.cpu_request,
        memory=process.memory_request,
        ports=() if process.port is None else (Port(port_name(process), process.port),),
        env_from=shared.env_from,
        env=shared.env,
        probe=probe(process) if process.type.is_long_running else None,
        mounts=shared.mounts,
        liveness=liveness(process),
        drop_all=common.restricted,
    )
    common = replace(common, grace_seconds=process.shutdown_grace_seconds)
    return Pod(
        naming.with_process(labels, process.name), (container,), restart, shared.claims, common
    )


def release_command_pod(service: ServiceSpec, labels: Labels, shared: Environment) -> Pod:
    """The release command runs with the new image and the release's own environment, and
    the primary process's resources."""
    primary = service.primary_process or ProcessSpec("release", ProcessType.JOB)
    common = settings(service)
    container = Container(
        name="release",
        image=service.image,
        command=command(service.release_command),
        cpu=primary.cpu_request,
        memory=primary.memory_request,
        env_from=shared.env_from,
        env=shared.env,
        mounts=shared.mounts,
        drop_all=common.restricted,
    )
    return Pod(
        naming.with_process(labels, naming.RELEASE_COMMAND),
        (container,),
        "Never",
        shared.claims,
        common,
    )
