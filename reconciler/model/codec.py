"""Units to and from plain JSON-able dicts: how a release freezes its configuration."""

from __future__ import annotations

from typing import Any

from reconciler.model.engines import DatabaseEngine, PostgresRunner
from reconciler.model.specs import (
    DEFAULT_SHUTDOWN_GRACE_SECONDS,
    LEGACY_PLATFORM,
    Autoscale,
    DatabaseSpec,
    InstanceSize,
    ManifestsSpec,
    Placement,
    Platform,
    PodSecurity,
    ProcessSpec,
    ProcessType,
    RawDocument,
    ServiceSpec,
    Toleration,
    Unit,
    VolumeSpec,
)


def unit_to_dict(unit: Unit) -> dict[str, Any]:
    if isinstance(unit, DatabaseSpec):
        return {
            "kind": "database",
            "name": unit.name,
            "engine": unit.engine.value,
            "version": unit.version,
            "instance_size": unit.instance_size.value,
            "volume_size": unit.volume_size,
            "automatic_failover": unit.automatic_failover,
            "instances": unit.instances,
            "platform": _platform_to_dict(unit.platform),
        }
    if isinstance(unit, ManifestsSpec):
        return {
            "kind": "manifests",
            "name": unit.name,
            "documents": [
                {
                    "source": d.source,
                    "index": d.index,
                    "api_version": d.api_version,
                    "kind": d.kind,
                    "name": d.name,
                    "body": d.body,
                }
                for d in unit.documents
            ],
            "platform": _platform_to_dict(unit.platform),
        }
    return {
        "kind": "service",
        "name": unit.name,
        "image": unit.image,
        "release_command": list(unit.release_command) if unit.release_command else None,
        "release_command_timeout": unit.release_command_timeout,
        "auto_deploy": unit.auto_deploy,
        "accept_downtime": unit.accept_downtime,
        "depends_on": list(unit.depends_on),
        "variables": [[k, v] for k, v in unit.variables],
        "volumes": [
            {"name": v.name, "mount": v.mount, "size": v.size, "accept_downtime": v.accept_downtime}
            for v in unit.volumes
        ],
        "processes": [
            {
                "name": p.name,
                "type": p.type.value,
                "command": list(p.command) if p.command else None,
                "port": p.port,
                "readiness_path": p.readiness_path,
                "replicas": p.replicas,
                "instance_size": p.instance_size.value,
                "stabilization_seconds": p.stabilization_seconds,
                "primary": p.primary,
                "schedule": p.schedule,
                "cpu": p.cpu,
                "memory": p.memory,
                "domains": list(p.domains),
                "liveness_path": p.liveness_path,
                "autoscale": None
                if p.autoscale is None
                else [p.autoscale.minimum, p.autoscale.maximum, p.autoscale.cpu_percent],
                "shutdown_grace_seconds": p.shutdown_grace_seconds,
            }
            for p in unit.processes
        ],
        "kubernetes": _placement_to_dict(unit.kubernetes),
        "platform": _platform_to_dict(unit.platform),
    }


# Releases frozen before 1.2 have none of the keys below: each reads back as its default.


def _platform_to_dict(platform: Platform) -> dict[str, Any]:
    return {
        "pod_security": platform.pod_security.value,
        "image_pull_secrets": list(platform.image_pull_secrets),
        "gateway": platform.gateway,
        "ingress_class": platform.ingress_class,
        "tls_issuer": platform.tls_issuer,
        "postgres": platform.postgres.value,
    }


def _platform_from_dict(data: dict[str, Any] | None) -> Platform:
    """A release frozen before 1.2 has no platform: it renders as it did then (no pod
    hardening, no budget), so upgrading Nebula is no drift and no restart of what runs."""
    if not data:
        return LEGACY_PLATFORM
    return Platform(
        pod_security=PodSecurity(data["pod_security"]),
        image_pull_secrets=tuple(data["image_pull_secrets"]),
        gateway=data["gateway"],
        ingress_class=data["ingress_class"],
        tls_issuer=data["tls_issuer"],
        postgres=PostgresRunner(data.get("postgres", PostgresRunner.STATEFULSET)),
    )


def _placement_to_dict(placement: Placement) -> dict[str, Any]:
    return {
        "service_account": placement.service_account,
        "node_selector": [list(p) for p in placement.node_selector],
        "tolerations": [
            {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
            for t in placement.tolerations
        ],
        "annotations": [list(p) for p in placement.annotations],
        "labels": [list(p) for p in placement.labels],
    }


def _placement_from_dict(data: dict[str, Any] | None) -> Placement:
    if not data:
        return Placement()
    return Placement(
        service_account=data["service_account"],
        node_selector=tuple((k, v) for k, v in data["node_selector"]),
        tolerations=tuple(Toleration(**t) for t in data["tolerations"]),
        annotations=tuple((k, v) for k, v in data["annotations"]),
        labels=tuple((k, v) for k, v in data["labels"]),
    )


def unit_from_dict(data: dict[str, Any]) -> Unit:
    if data["kind"] == "manifests":
        return ManifestsSpec(
            tuple(RawDocument(**d) for d in data["documents"]),
            name=data["name"],
            platform=_platform_from_dict(data.get("platform")),
        )
    if data["kind"] == "database":
        return DatabaseSpec(
            name=data["name"],
            engine=DatabaseEngine(data["engine"]),
            version=data["version"],
            instance_size=InstanceSize(data["instance_size"]),
            volume_size=data["volume_size"],
            automatic_failover=data["automatic_failover"],
            platform=_platform_from_dict(data.get("platform")),
            instances=data.get("instances", 1),
        )
    return ServiceSpec(
        name=data["name"],
        image=data["image"],
        release_command=tuple(data["release_command"]) if data["release_command"] else None,
        release_command_timeout=data["release_command_timeout"],
        auto_deploy=data["auto_deploy"],
        accept_downtime=data["accept_downtime"],
        depends_on=tuple(data["depends_on"]),
        variables=tuple((k, v) for k, v in data["variables"]),
        volumes=tuple(VolumeSpec(**v) for v in data["volumes"]),
        processes=tuple(
            ProcessSpec(
                name=p["name"],
                type=ProcessType(p["type"]),
                command=tuple(p["command"]) if p["command"] else None,
                port=p["port"],
                readiness_path=p["readiness_path"],
                replicas=p["replicas"],
                instance_size=InstanceSize(p["instance_size"]),
                stabilization_seconds=p["stabilization_seconds"],
                primary=p["primary"],
                schedule=p["schedule"],
                cpu=p.get("cpu"),
                memory=p.get("memory"),
                domains=tuple(p.get("domains") or ()),
                liveness_path=p.get("liveness_path"),
                autoscale=Autoscale(*p["autoscale"]) if p.get("autoscale") else None,
                shutdown_grace_seconds=p.get(
                    "shutdown_grace_seconds", DEFAULT_SHUTDOWN_GRACE_SECONDS
                ),
            )
            for p in data["processes"]
        ),
        kubernetes=_placement_from_dict(data.get("kubernetes")),
        platform=_platform_from_dict(data.get("platform")),
    )
