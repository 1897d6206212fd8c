"""Readers for one service or database table (with one environment's override merged)."""

from __future__ import annotations

import re
from typing import Any

from reconciler.model import podsettings, references, schedules
from reconciler.model.merging import OVERRIDE_KEYS, merged
from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems, Severity, dotted
from reconciler.model.reading import (
    ENV_NAME,
    Locate,
    Reader,
    check_slug,
    not_a_table,
    type_name,
)
from reconciler.model.specs import (
    DEFAULT_PLATFORM,
    DEFAULT_RELEASE_COMMAND_TIMEOUT,
    DEFAULT_STABILIZATION_SECONDS,
    InstanceSize,
    Platform,
    ProcessSpec,
    ProcessType,
    ServiceSpec,
    VolumeSpec,
)

SERVICE_KEYS = (*OVERRIDE_KEYS, "environments")
PROCESS_KEYS = (
    "type",
    "command",
    "port",
    "readiness_path",
    "replicas",
    "instance_size",
    "stabilization_seconds",
    "primary",
    "schedule",
    *podsettings.PROCESS_POD_KEYS,
)
VOLUME_KEYS = ("mount", "size", "accept_downtime")
DEPLOY_KEYS = ("depends_on",)

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_NAME = rf"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE_DIGEST = re.compile(rf"^{_IMAGE_NAME}(?::{_TAG})?@sha256:[0-9a-f]{{64}}$")
IMAGE_TAG = re.compile(rf"^{_IMAGE_NAME}:{_TAG}$")


def read_service(
    problems: Problems,
    name: str,
    table: dict[str, Any],
    env: str,
    platform: Platform = DEFAULT_PLATFORM,
) -> tuple[ServiceSpec, Locate]:
    table_merged, locate = merged(problems, "services", name, table, env, OVERRIDE_KEYS)
    path: Path = ("services", name)
    reader = Reader(problems, table_merged, path, SERVICE_KEYS, locate=locate)
    image = reader.string("image", example='"registry.example.com/app@sha256:<digest>"')
    if image is None and not reader.has("image"):
        reader.missing("image", '"registry.example.com/app@sha256:<64 hex digits>"')
    elif image is not None:
        _check_image(problems, locate((*path, "image")), image)
    release_command = reader.strings("release_command", example='["bin/migrate"]')
    timeout = reader.integer(
        "release_command_timeout", DEFAULT_RELEASE_COMMAND_TIMEOUT, minimum=1, maximum=86400
    )
    processes = _read_processes(problems, reader)
    variables = _read_variables(problems, reader)
    accept_downtime = reader.boolean("accept_downtime", False)
    volumes = _read_volumes(problems, reader)
    depends_on: tuple[str, ...] = ()
    if (deploy := reader.table_of("deploy")) is not None:
        deploy_reader = Reader(problems, deploy, (*path, "deploy"), DEPLOY_KEYS, locate=locate)
        depends_on = deploy_reader.strings("depends_on", example='["db", "search"]') or ()
    spec = ServiceSpec(
        name=name,
        image=image or "",
        processes=processes,
        variables=tuple(variables.items()),
        volumes=volumes,
        release_command=release_command,
        release_command_timeout=timeout or DEFAULT_RELEASE_COMMAND_TIMEOUT,
        auto_deploy=reader.boolean("auto_deploy", True),
        depends_on=depends_on,
        accept_downtime=accept_downtime,
        kubernetes=podsettings.read_placement(reader),
        platform=platform,
    )
    return spec, locate


def _check_image(problems: Problems, path: Path, image: str) -> None:
    if IMAGE_DIGEST.match(image):
        return
    if IMAGE_TAG.match(image):
        problems.add(
            path,
            Code.IMAGE_TAG,
            f"image '{image}' is pinned by tag, not by digest",
            "a release is meant to be immutable: use name@sha256:<64 hex digits>",
            severity=Severity.WARNING,
        )
        return
    problems.add(
        path,
        Code.INVALID_IMAGE,
        f"image '{image}' is neither name@sha256:<64 hex digits> nor name:tag",
        'write e.g. "registry.example.com/shop/api@sha256:<64 hex digits>"',
    )


def _read_processes(problems: Problems, service: Reader) -> tuple[ProcessSpec, ...]:
    table = service.table_of("processes")
    if table is None:
        return ()
    out: list[ProcessSpec] = []
    explicit_primary: str | None = None
    for name, raw in table.items():
        path: Path = (*service.path, "processes", name)
        if not check_slug(problems, path, name, "process", locate=service.locate):
            continue
        if not isinstance(raw, dict):
            not_a_table(problems, path, raw, locate=service.locate)
            continue
        reader = Reader(problems, raw, path, PROCESS_KEYS, locate=service.locate)
        kind = reader.choice("type", [t.value for t in ProcessType], None, Code.INVALID_VALUE)
        if kind is None and not reader.has("type"):
            reader.missing("type", '"http"  # or worker, cron, job')
        # Without a valid type, nothing that depends on it is checked: the type's own error is
        # the one to fix (a typo in ``type`` would otherwise bring "applies to http only" too).
        ptype = ProcessType(kind) if kind else None
        port = reader.integer("port", None, minimum=1, maximum=65535)
        if ptype is ProcessType.HTTP and port is None and not reader.meant("port"):
            problems.add(
                service.locate(path),
                Code.MISSING_PORT,
                f"http process '{name}' of service '{service.path[-1]}' has no port",
                "add port = 8080 (the port the process listens on)",
                key=True,
            )
        if port is not None and ptype is not None and not ptype.is_long_running:
            reader.error(
                "port", Code.INVALID_VALUE, f"a {ptype} process takes no port", "remove port"
            )
        readiness = reader.string("readiness_path", "/", example='"/healthz"') or "/"
        if reader.has("readiness_path") and ptype not in (None, ProcessType.HTTP):
            reader.error(
                "readiness_path",
                Code.INVALID_VALUE,
                "readiness_path applies to http processes only",
                "remove readiness_path",
            )
        elif not readiness.startswith("/"):
            reader.error(
                "readiness_path",
                Code.INVALID_VALUE,
                f"readiness_path '{readiness}' must start with '/'",
                'write e.g. readiness_path = "/healthz"',
            )
        schedule = reader.string("schedule", None, example='"0 3 * * *"')
        if ptype is ProcessType.CRON:
            _check_schedule(problems, reader, name, schedule)
        elif reader.has("schedule") and ptype is not None:
            reader.error(
                "schedule",
                Code.INVALID_VALUE,
                f"schedule applies to cron processes only, not {ptype}",
                'remove schedule, or set type = "cron"',
            )
        primary = reader.boolean("primary", False)
        if primary and ptype is not None and not ptype.is_long_running:
            reader.error(
                "primary",
                Code.INVALID_VALUE,
                f"a {ptype} process cannot be primary",
                "mark an http or worker process as primary",
            )
            primary = False
        if primary and explicit_primary is not None:
            reader.error(
                "primary",
                Code.MULTIPLE_PRIMARY,
                f"more than one primary process in service '{service.path[-1]}': "
                f"'{explicit_primary}' and '{name}'",
                "keep primary = true on one process only",
            )
            primary = False
        elif primary:
            explicit_primary = name
        size = reader.choice(
            "instance_size",
            [s.value for s in InstanceSize],
            InstanceSize.SMALL,
            Code.UNKNOWN_INSTANCE_SIZE,
        )
        pods = podsettings.read_process(reader, ptype)
        out.append(
            ProcessSpec(
                name=name,
                type=ptype or ProcessType.WORKER,  # (an invalid file: never used)
                command=reader.strings("command", example='["gunicorn", "app:app"]'),
                port=port,
                readiness_path=readiness,
                replicas=reader.integer("replicas", 1, minimum=0, maximum=1000) or 0
                if reader.has("replicas")
                else 1,
                instance_size=InstanceSize(size or InstanceSize.SMALL),
                stabilization_seconds=reader.integer(
                    "stabilization_seconds", DEFAULT_STABILIZATION_SECONDS, minimum=0, maximum=3600
                )
                or 0,
                primary=primary,
                schedule=schedule,
                cpu=pods.cpu,
                memory=pods.memory,
                domains=pods.domains,
                liveness_path=pods.liveness_path,
                autoscale=pods.autoscale,
                shutdown_grace_seconds=pods.shutdown_grace_seconds,
            )
        )
    if explicit_primary is None:
        default = next((p for p in out if p.type is ProcessType.HTTP), None) or next(
            (p for p in out if p.type.is_long_running), None
        )
        if default is not None:
            out = [ProcessSpec(**{**p.__dict__, "primary": p is default}) for p in out]
    return tuple(out)


def _check_schedule(problems: Problems, reader: Reader, name: str, schedule: str | None) -> None:
    hint = schedules.HINT
    if schedule is None:
        if not reader.meant("schedule"):
            problems.add(
                reader.locate(reader.path),
                Code.INVALID_SCHEDULE,
                f"cron process '{name}' has no schedule",
                f'add schedule = "0 3 * * *" ({hint})',
                key=True,
            )
        return
    if (reason := schedules.problem(schedule)) is not None:
        reader.error(
            "schedule",
            Code.INVALID_SCHEDULE,
            f"'{schedule}' is not a valid cron schedule: {reason}",
            hint,
        )


def _read_variables(problems: Problems, service: Reader) -> dict[str, str]:
    table = service.table_of("variables")
    if table is None:
        return {}
    out: dict[str, str] = {}
    for key, value in table.items():
        path: Path = (*service.path, "variables", key)
        if not ENV_NAME.match(key):
            problems.add(
                service.locate(path),
                Code.INVALID_VALUE,
                f"'{key}' is not a valid variable name",
                "use letters, digits and '_', not starting with a digit",
                key=True,
            )
            continue
        if not isinstance(value, str):
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            problems.add(
                service.locate(path),
                Code.WRONG_TYPE,
                f"{dotted(path)} must be a string, not {type_name(value)}",
                f'quote it: {key} = "{shown}"',
            )
            continue
        try:
            references.parse(value)
        except references.ReferenceSyntaxError as exc:
            problems.add(
                service.locate(path),
                Code.INVALID_REFERENCE,
                f"{exc.message} in {dotted(path)}",
                exc.hint,
            )
            continue
        out[key] = value
    return out


def _read_volumes(problems: Problems, service: Reader) -> tuple[VolumeSpec, ...]:
    table = service.table_of("volumes")
    if table is None:
        return ()
    out = []
    for name, raw in table.items():
        path: Path = (*service.path, "volumes", name)
        if not check_slug(problems, path, name, "volume", locate=service.locate):
            continue
        if not isinstance(raw, dict):
            not_a_table(problems, path, raw, locate=service.locate)
            continue
        reader = Reader(problems, raw, path, VOLUME_KEYS, locate=service.locate)
        mount = reader.string("mount", None, example='"/data"')
        if mount is None and not reader.has("mount"):
            reader.missing("mount", '"/data"')
        elif mount is not None and not mount.startswith("/"):
            reader.error(
                "mount",
                Code.INVALID_VALUE,
                f"mount '{mount}' is not an absolute path",
                'e.g. mount = "/data"',
            )
        size = reader.size("size", None)
        if size is None and not reader.has("size"):
            reader.missing("size", '"5Gi"')
        out.append(
            VolumeSpec(name, mount or "/", size or "1Gi", reader.boolean("accept_downtime", False))
        )
    return tuple(out)
