"""The 1.2 keys of a process and ``[services.X.kubernetes]`` (nebula-toml.md "Version 1.2
additions"): resources, autoscaling, probes, grace, domains, and where pods run.

Each reader reports every problem at the key written and returns what is usable, so one typo
gives one error and the rest of the file is still checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError
from reconciler.model import platforms
from reconciler.model.problems import Code, dotted
from reconciler.model.reading import Reader, type_name
from reconciler.model.specs import (
    DEFAULT_SHUTDOWN_GRACE_SECONDS,
    Autoscale,
    Pairs,
    Placement,
    ProcessType,
    Toleration,
)

PROCESS_POD_KEYS = ("cpu", "memory", "autoscale", "liveness_path", "shutdown_grace", "domains")
KUBERNETES_KEYS = ("service_account", "node_selector", "tolerations", "annotations", "labels")
AUTOSCALE_KEYS = ("min", "max", "cpu_percent")
TOLERATION_KEYS = ("key", "operator", "value", "effect")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("Equal", "Exists")
RESERVED_PREFIXES = ("nebula.dev/", "app.kubernetes.io/")

CPU = re.compile(r"^([1-9][0-9]{0,5}m|[0-9]{1,3}(\.[0-9]{1,3})?)\Z")
MEMORY = re.compile(r"^[1-9][0-9]{0,6}(Ki|Mi|Gi|Ti|k|M|G|T)\Z")
GRACE = re.compile(r"^(?:[0-9]+[smh])+\Z")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}\Z")
LABEL_VALUE = re.compile(rf"^({_NAME})?\Z")
LONGEST_GRACE = 3600


@dataclass(frozen=True)
class ProcessPods:
    cpu: str | None = None
    memory: str | None = None
    autoscale: Autoscale | None = None
    liveness_path: str | None = None
    shutdown_grace_seconds: int = DEFAULT_SHUTDOWN_GRACE_SECONDS
    domains: tuple[str, ...] = ()


def read_process(reader: Reader, ptype: ProcessType | None) -> ProcessPods:
    """The process's 1.2 keys; ``reader`` reads the process table; ``ptype`` None: the type
    is invalid (its own error), so nothing that depends on it is checked."""
    if (reader.has("cpu") or reader.has("memory")) and reader.has("instance_size"):
        key = "cpu" if reader.has("cpu") else "memory"
        reader.error(
            key,
            Code.INVALID_VALUE,
            f"{key} is set together with instance_size",
            "keep instance_size, or cpu and memory instead of it",
        )
    cpu = _quantity(reader, "cpu", CPU, '"750m" (or "1.5": cores)')
    memory = _quantity(reader, "memory", MEMORY, '"1536Mi" (or "2Gi")')
    return ProcessPods(
        cpu=cpu,
        memory=memory,
        autoscale=_autoscale(reader, ptype),
        liveness_path=_http_path(reader, ptype, "liveness_path"),
        shutdown_grace_seconds=_grace(reader),
        domains=_domains(reader, ptype),
    )


def _quantity(reader: Reader, key: str, pattern: re.Pattern[str], example: str) -> str | None:
    value = reader.string(key, None, example=example)
    if value is not None and (not pattern.match(value) or not value.strip("0.m")):
        reader.error(
            key,
            Code.INVALID_VALUE,
            f"{dotted((*reader.path, key))} is '{value}', which is not a {key} quantity",
            f"write e.g. {key} = {example}",
        )
        return None
    return value


def _autoscale(reader: Reader, ptype: ProcessType | None) -> Autoscale | None:
    table = reader.table_of("autoscale")
    if table is None:
        return None
    if ptype is not None and not ptype.is_long_running:
        reader.error(
            "autoscale",
            Code.INVALID_VALUE,
            f"a {ptype} process cannot autoscale",
            "autoscale applies to http and worker processes: remove it",
        )
        return None
    if reader.has("replicas"):
        reader.error(
            "autoscale",
            Code.INVALID_VALUE,
            "autoscale is set together with replicas",
            "remove replicas: the autoscaler owns the count between min and max",
        )
    sub = Reader(
        reader.problems, table, (*reader.path, "autoscale"), AUTOSCALE_KEYS, locate=reader.locate
    )
    for key in ("min", "max"):
        if not sub.has(key):
            sub.missing(key, "2" if key == "min" else "10")
    low = sub.integer("min", None, minimum=1, maximum=1000)
    high = sub.integer("max", None, minimum=1, maximum=1000)
    cpu = sub.integer("cpu_percent", 80, minimum=1, maximum=100)
    if low is not None and high is not None and low > high:
        sub.error(
            "min",
            Code.INVALID_VALUE,
            f"{dotted(sub.path)}: min ({low}) is more than max ({high})",
            "make min at most max",
        )
        return None
    if low is None or high is None or cpu is None:
        return None
    return Autoscale(low, high, cpu)


def _http_path(reader: Reader, ptype: ProcessType | None, key: str) -> str | None:
    value = reader.string(key, None, example='"/livez"')
    if value is None:
        return None
    if ptype not in (None, ProcessType.HTTP):
        reader.error(
            key, Code.INVALID_VALUE, f"{key} applies to http processes only", f"remove {key}"
        )
        return None
    if not value.startswith("/"):
        reader.error(
            key,
            Code.INVALID_VALUE,
            f"{key} '{value}' must start with '/'",
            f'write e.g. {key} = "/livez"',
        )
        return None
    return value


def _grace(reader: Reader) -> int:
    value = reader.string("shutdown_grace", None, example='"30s"')
    if value is None:
        return DEFAULT_SHUTDOWN_GRACE_SECONDS
    seconds = -1
    if GRACE.match(value):
        try:
            seconds = int(parse_duration(value).total_seconds())
        except ConfigurationError:
            seconds = -1
    if not 0 <= seconds <= LONGEST_GRACE:
        reader.error(
            "shutdown_grace",
            Code.MALFORMED_DURATION,
            f"{dotted((*reader.path, 'shutdown_grace'))} is '{value[:40]}', which is not a "
            "duration of at most 1h",
            'write a whole number and a unit: "30s", "2m" or "1h"',
        )
        return DEFAULT_SHUTDOWN_GRACE_SECONDS
    return seconds


def _domains(reader: Reader, ptype: ProcessType | None) -> tuple[str, ...]:
    domains = reader.strings("domains", example='["shop.example.com"]')
    if domains is None:
        return ()
    if ptype not in (None, ProcessType.HTTP):
        reader.error(
            "domains",
            Code.INVALID_VALUE,
            f"domains apply to http processes only, not {ptype}",
            "route public traffic to an http process: remove domains here",
        )
        return ()
    return tuple(d for i, d in enumerate(domains) if platforms.check_domain(reader, i, d))


def read_placement(service: Reader) -> Placement:
    """``[services.X.kubernetes]`` (with the environment's override merged in)."""
    table = service.table_of("kubernetes")
    if table is None:
        return Placement()
    reader = Reader(
        service.problems,
        table,
        (*service.path, "kubernetes"),
        KUBERNETES_KEYS,
        locate=service.locate,
    )
    account = reader.string("service_account", None, example='"api"')
    if account is not None and not platforms.OBJECT_NAME.match(account):
        reader.error(
            "service_account",
            Code.INVALID_VALUE,
            f"service_account '{account}' is not a ServiceAccount name",
            "use lowercase letters, digits, '-' and '.', e.g. \"api\"",
        )
        account = None
    return Placement(
        service_account=account,
        node_selector=_pairs(reader, "node_selector", reserved=False, label_values=True),
        tolerations=_tolerations(reader),
        annotations=_pairs(reader, "annotations", reserved=True, label_values=False),
        labels=_pairs(reader, "labels", reserved=True, label_values=True),
    )


def _pairs(reader: Reader, key: str, *, reserved: bool, label_values: bool) -> Pairs:
    table = reader.table_of(key)
    if table is None:
        return ()
    out = []
    for name, value in table.items():
        where = (*reader.path, key, name)
        if not LABEL_KEY.match(name) or len(name) > 316:
            reader.problems.add(
                reader.locate(where),
                Code.INVALID_VALUE,
                f"'{name}' is not a valid key in {dotted((*reader.path, key))}",
                "write prefix/name or name: letters, digits, '-', '_' and '.'",
                key=True,
            )
            continue
        if reserved and name.startswith(RESERVED_PREFIXES):
            reader.problems.add(
                reader.locate(where),
                Code.INVALID_VALUE,
                f"'{name}' in {dotted((*reader.path, key))} uses a prefix Nebula reserves "
                f"({', '.join(RESERVED_PREFIXES)})",
                "use your own prefix, e.g. example.com/team",
                key=True,
            )
            continue
        if not isinstance(value, str):
            reader.problems.add(
                reader.locate(where),
                Code.WRONG_TYPE,
                f"{dotted(where)} must be a string, not {type_name(value)}",
                f'quote it: "{name}" = "{value}"',
            )
            continue
        if label_values and not LABEL_VALUE.match(value):
            reader.problems.add(
                reader.locate(where),
                Code.INVALID_VALUE,
                f"{dotted(where)} is '{value[:80]}', which is not a label value",
                "at most 63 letters, digits, '-', '_' and '.', starting and ending with a "
                "letter or digit",
            )
            continue
        out.append((name, value))
    return tuple(out)


def _tolerations(reader: Reader) -> tuple[Toleration, ...]:
    if not reader.has("tolerations"):
        return ()
    items = reader.table["tolerations"]
    example = '[{ key = "dedicated", operator = "Equal", value = "web", effect = "NoSchedule" }]'
    if not isinstance(items, list):
        reader.error(
            "tolerations",
            Code.WRONG_TYPE,
            f"{dotted((*reader.path, 'tolerations'))} must be an array of tables, not "
            f"{type_name(items)}",
            f"write it as tolerations = {example}",
        )
        return ()
    out = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            reader.error(
                "tolerations",
                Code.WRONG_TYPE,
                f"tolerations[{index}] must be a table, not {type_name(item)}",
                f"write it as tolerations = {example}",
                index=index,
            )
            continue
        if (found := _toleration(reader, index, item)) is not None:
            out.append(found)
    return tuple(out)


def _toleration(reader: Reader, index: int, item: dict[str, Any]) -> Toleration | None:
    sub = Reader(
        reader.problems,
        item,
        (*reader.path, "tolerations", index),
        TOLERATION_KEYS,
        locate=reader.locate,
    )
    operator = sub.choice("operator", OPERATORS, "Equal", Code.INVALID_VALUE)
    effect = sub.choice("effect", EFFECTS, None, Code.INVALID_VALUE)
    if sub.has("effect") and effect is None:
        return None
    key = sub.string("key", None, example='"dedicated"')
    value = sub.string("value", None, example='"web"')
    if operator == "Exists" and value is not None:
        sub.error(
            "value",
            Code.INVALID_VALUE,
            "a toleration with operator Exists takes no value",
            'remove value, or use operator = "Equal"',
        )
        return None
    return Toleration(key=key, operator=operator or "Equal", value=value, effect=effect)
