"""Units to and from plain JSON-able dicts: how a release freezes its configuration."""

from __future__ import annotations

from typing import Any

from reconciler.model.specs import (
    DatabaseSpec,
    InstanceSize,
    ProcessSpec,
    ProcessType,
    ServiceSpec,
    Unit,
    VolumeSpec,
)


def unit_to_dict(unit: Unit) -> dict[str, Any]:
    if isinstance(unit, DatabaseSpec):
        return {
            "kind": "database",
            "name": unit.name,
            "engine": unit.engine,
            "version": unit.version,
            "instance_size": unit.instance_size.value,
            "volume_size": unit.volume_size,
            "automatic_failover": unit.automatic_failover,
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
            }
            for p in unit.processes
        ],
    }


def unit_from_dict(data: dict[str, Any]) -> Unit:
    if data["kind"] == "database":
        return DatabaseSpec(
            name=data["name"],
            engine=data["engine"],
            version=data["version"],
            instance_size=InstanceSize(data["instance_size"]),
            volume_size=data["volume_size"],
            automatic_failover=data["automatic_failover"],
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
            )
            for p in data["processes"]
        ),
    )
