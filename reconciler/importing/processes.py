"""A Compose service's one process: its type, command, port and readiness.

- ``ports`` / ``expose`` give the port (the container's side: Nebula publishes nothing on a
  host); a service with one is an ``http`` process, except images known to speak another
  protocol (MySQL, MongoDB ...), which become a ``worker`` checked by a TCP connect;
- a ``healthcheck`` that GETs a local URL makes an ``http`` process with that
  ``readiness_path`` (and port); any other check has no equivalent and is reported;
- a service others wait for with ``service_completed_successfully`` runs once: a ``job``;
- everything else is a ``worker``.
``entrypoint`` and ``command`` together give ``command`` (Nebula's replaces the image's
entrypoint as well: Compose's ``command`` alone only replaced its arguments).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from reconciler.importing import interpolation, resources
from reconciler.importing.notes import Notes
from reconciler.importing.yamltree import At, Mapping, Node, Scalar, Sequence, strings_of, text_of
from reconciler.model.specs import ProcessType

TCP_IMAGES = frozenset(
    {"mysql", "mariadb", "mongo", "mongodb", "memcached", "rabbitmq", "nats", "mosquitto",
     "eclipse-mosquitto", "zookeeper", "kafka", "cassandra", "postgis"}
)  # fmt: skip
_LOCAL = r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])"
_HEALTH_URL = re.compile(
    rf"(?:(?P<scheme>https?)://(?P<host>[A-Za-z0-9_.\[\]:-]+?)|(?P<local>{_LOCAL})(?=[:/]))"
    r"(?::(?P<port>[0-9]+))?(?P<path>/[^\s'\"|;&)]*)?(?=[\s'\"|;&)]|$)"
)
HEALTH_TIMING = ("interval", "timeout", "retries", "start_period", "start_interval")
PROCESS_NAMES = {ProcessType.HTTP: "web", ProcessType.WORKER: "worker", ProcessType.JOB: "job"}


@dataclass(frozen=True)
class Port:
    number: int
    at: At
    published: bool


@dataclass(frozen=True)
class Process:
    name: str
    table: dict[str, Any]

    @property
    def port(self) -> int | None:
        port = self.table.get("port")
        return port if isinstance(port, int) else None


def read(
    service: Mapping, where: str, notes: Notes, *, image: str, hosts: frozenset[str], once: bool
) -> Process:
    """``image``: its repository's last part (``mysql``); ``hosts``: the names it answers to."""
    table: dict[str, Any] = {}
    ports = read_ports(service, where, notes)
    health = _health(service, where, notes, hosts)
    if once:
        kind = ProcessType.JOB
    elif health is not None or (ports and image not in TCP_IMAGES):
        kind = ProcessType.HTTP
    else:
        kind = ProcessType.WORKER
    table["type"] = str(kind)
    if (command := _command(service, where, notes)) is not None:
        table["command"] = command
    port = health[0] if health is not None and health[0] is not None else None
    if ports and kind is not ProcessType.JOB:
        if port is not None and port != ports[0].number:
            notes.note(ports[0].at, f"{where}.healthcheck checks port {port}, not {ports[0].number}",
                       f"readiness is checked on port {port}; check that the process listens "
                       "there")  # fmt: skip
        port = port or ports[0].number
        for extra in ports[1:]:
            if extra.number != port:
                notes.note(extra.at, f"{where}: port {extra.number} is not carried over (a "
                           "process has one port)", "run a second service for it, or drop "
                           "it")  # fmt: skip
    elif ports:
        notes.note(ports[0].at, f"{where}: a job takes no port", "remove the port")
    if kind is ProcessType.HTTP and port is None:
        port = 80  # a healthcheck URL with no port: HTTP's own
    if port is not None and kind is not ProcessType.JOB:
        table["port"] = port
    if health is not None and health[1] not in (None, "/"):
        table["readiness_path"] = health[1]
    published = [p for p in ports if p.published]
    if published and kind is not ProcessType.JOB:
        notes.note(published[0].at, f"{where}.ports publishes port {published[0].number} on the "
                   "host", "Nebula publishes nothing: other services reach it in the environment;"
                   " for public traffic give the process domains (with a gateway or "
                   "ingress_class)")  # fmt: skip
    resources.read(service, where, notes, table)
    return Process(PROCESS_NAMES[kind], table)


def read_ports(service: Mapping, where: str, notes: Notes) -> list[Port]:
    """The container ports of ``ports`` then ``expose``, in order, once each."""
    out: list[Port] = []
    for key in ("ports", "expose"):
        node = service.value(key)
        if node is None:
            continue
        if not isinstance(node, Sequence):
            notes.note(node.at, f"{where}.{key} is not a list", "write it as a list")
            continue
        for item in node:
            port = _port(item, key == "ports", f"{where}.{key}", notes)
            if port is not None and all(p.number != port.number for p in out):
                out.append(port)
    return out


def _port(node: Node, published: bool, where: str, notes: Notes) -> Port | None:
    if isinstance(node, Mapping):
        target = text_of(node.value("target"))
        protocol = text_of(node.value("protocol")) or "tcp"
        published = node.get("published") is not None
        text = f"{target}/{protocol}" if target else ""
    else:
        text = interpolation.expand(text_of(node) or "").text
        published = published and ":" in text.rsplit("/", 1)[0]
    container, _, protocol = text.partition("/")
    container = container.rsplit(":", 1)[-1]
    first, dash, _ = container.partition("-")
    if protocol not in ("", "tcp") or not first.isdigit() or not 0 < int(first) < 65536:
        notes.note(node.at, f"{where}: '{text}' is not carried over (Nebula routes one TCP "
                   "port per process)", "remove it, or run what needs it elsewhere")  # fmt: skip
        return None
    if dash:
        notes.note(node.at, f"{where}: the port range '{container}' is not carried over",
                   f"only its first port, {first}, is used")  # fmt: skip
    return Port(int(first), node.at, published)


def _health(
    service: Mapping, where: str, notes: Notes, hosts: frozenset[str]
) -> tuple[int | None, str | None] | None:
    """The port and path a healthcheck GETs, if it GETs one."""
    node = service.value("healthcheck")
    if not isinstance(node, Mapping):
        return None
    where = f"{where}.healthcheck"
    found = None
    for entry in node:
        if entry.key in HEALTH_TIMING:
            notes.note(entry.key_at, f"{where}.{entry.key} is not carried over",
                       "Nebula's readiness check keeps its own timing; stabilization_seconds "
                       "says how long replicas must stay ready")  # fmt: skip
        elif entry.key == "disable" or entry.key.startswith("x-"):
            continue
        elif entry.key == "test":
            words = strings_of(entry.value)
            text = " ".join(words) if words is not None else text_of(entry.value) or ""
            if text.strip() in ("NONE", ""):
                continue
            found = _health_url(text, hosts)
            if found is None:
                notes.note(entry.value.at, f"{where}.test runs a command, which has no equivalent",
                           "Nebula checks an http process with a GET of readiness_path and a "
                           "worker's port with a TCP connect")  # fmt: skip
        else:
            notes.note(entry.key_at, f"{where}.{entry.key} is not a healthcheck key", "remove it")
    return found


def _health_url(text: str, hosts: frozenset[str]) -> tuple[int | None, str | None] | None:
    for match in _HEALTH_URL.finditer(text):
        host = match.group("host") or match.group("local") or ""
        local = re.fullmatch(_LOCAL, host) is not None or host in hosts
        if not local:
            continue
        port = match.group("port")
        path = match.group("path") or "/"
        if port is None and match.group("scheme") == "https":
            return 443, path
        return (int(port) if port else None), path
    return None


def _command(service: Mapping, where: str, notes: Notes) -> list[str] | None:
    parts: list[str] = []
    for key in ("entrypoint", "command"):
        node = service.value(key)
        if node is None or (isinstance(node, Scalar) and node.null):
            continue
        words = strings_of(node)
        if words is None and (text := text_of(node)) is not None:
            try:
                words = shlex.split(text)
            except ValueError:
                words = None
        if words is None:
            notes.note(node.at, f"{where}.{key} is neither a string nor a list of strings",
                       "write it as a list")  # fmt: skip
            continue
        expanded = [interpolation.expand(w) for w in words]
        unknown = sorted({n for e in expanded for n in e.unknown})
        if unknown:
            names = ", ".join(f"${{{n}}}" for n in unknown)
            notes.note(node.at, f"{where}.{key} uses {names}, which Compose fills in from the "
                       "shell", "write the value in the command")  # fmt: skip
        parts += [e.text for e in expanded]
        if key == "command" and service.get("entrypoint") is None:
            notes.note(node.at, f"{where}.command also replaces the image's ENTRYPOINT in "
                       "Nebula (Compose replaced its CMD only)", "if the image has an ENTRYPOINT, write it "
                       "first in command")  # fmt: skip
        elif key == "entrypoint" and service.get("command") is None:
            notes.note(node.at, f"{where}.entrypoint: the image's CMD is not run after it in "
                       "Nebula", "write its arguments after it in command")  # fmt: skip
    return parts or None
