"""Volumes: a named Compose volume mounted by a service becomes that service's volume (with
``accept_downtime``, which a volume needs); host bind mounts, anonymous volumes and tmpfs have
no equivalent and are reported. A volume belongs to one service in Nebula, so a named volume
two services mount is carried over for the first only.
"""

from __future__ import annotations

from typing import Any

from reconciler.importing import interpolation
from reconciler.importing.notes import Notes
from reconciler.importing.yamltree import Mapping, Node, Sequence, text_of

SIZE = "1Gi"  # Compose gives no size: a small one, reported
TOP_REPORTED = {
    "driver": "the cluster's default storage class provides the volume",
    "driver_opts": "the cluster's default storage class provides the volume",
    "labels": "remove them",
    "name": "Nebula names the volume after its service and key",
}


def declared(node: Node | None, notes: Notes, slug: Any) -> dict[str, str]:
    """The top-level ``volumes``: name -> its slug; what they say beyond a name is reported."""
    out: dict[str, str] = {}
    for entry in node if isinstance(node, Mapping) else ():
        out[entry.key] = slug(entry.key)
        for option in entry.value if isinstance(entry.value, Mapping) else ():
            if option.key == "external":
                notes.note(option.key_at, f"volumes.{entry.key} is external: its data is not "
                           "carried over", "the volume starts empty; copy the data in after the "
                           "first deploy")  # fmt: skip
            elif not option.key.startswith("x-"):
                todo = TOP_REPORTED.get(option.key, "remove it")
                notes.note(option.key_at, f"volumes.{entry.key}.{option.key} is not carried over",
                           todo)  # fmt: skip
    return out


def entry(node: Node) -> tuple[str, str | None, str | None, bool]:
    """A service's volume entry: its kind (volume, bind, tmpfs ...), source, target and
    whether it is read-only."""
    if isinstance(node, Mapping):
        kind = text_of(node.value("type")) or "volume"
        read_only = text_of(node.value("read_only")) in ("true", "True", "yes")
        return kind, text_of(node.value("source")), text_of(node.value("target")), read_only
    text = interpolation.expand(text_of(node) or "").text
    parts = text.split(":")
    if len(parts) == 1:
        return "volume", None, parts[0], False
    source, target = parts[0], parts[1]
    mode = parts[2] if len(parts) > 2 else ""
    kind = "bind" if source.startswith((".", "/", "~", "$")) else "volume"
    return kind, source, target, "ro" in mode.split(",")


def service_volumes(
    node: Node | None,
    where: str,
    notes: Notes,
    named: dict[str, str],
    taken: dict[str, str],
    service: str,
) -> dict[str, dict[str, Any]]:
    """``taken``: named volume -> the service that has it (filled in as services are read)."""
    out: dict[str, dict[str, Any]] = {}
    for item in node if isinstance(node, Sequence) else ():
        kind, source, target, read_only = entry(item)
        shown = f"'{source}:{target}'" if source else f"'{target}'"
        if kind == "bind":
            notes.note(item.at, f"{where}.volumes: the host path {shown} is not carried over",
                       "bake the files into the image, or use a named volume")  # fmt: skip
        elif kind != "volume" or source is None:
            what = f"the {kind} mount" if kind != "volume" else "the anonymous volume"
            notes.note(item.at, f"{where}.volumes: {what} {shown} is not carried over",
                       "the container's own filesystem serves it; name a volume to keep data")  # fmt: skip
        elif not (target or "").startswith("/"):
            notes.note(item.at, f"{where}.volumes: {shown} mounts at no absolute path",
                       "write the path in the container, e.g. data:/data")  # fmt: skip
        elif taken.setdefault(source, service) != service:
            notes.note(item.at, f"{where}.volumes: '{source}' is {taken[source]}'s already (a "
                       "volume belongs to one service)", "share the data through a database or "
                       "another service instead")  # fmt: skip
        else:
            name = named.get(source) or source
            out[name] = {"mount": target, "size": SIZE, "accept_downtime": True}
            notes.note(item.at, f"{where}.volumes: '{source}' becomes a {SIZE} volume, and a "
                       f"release of {service} stops the running one first (accept_downtime)",
                       "set the size it needs")  # fmt: skip
            if read_only:
                notes.note(item.at, f"{where}.volumes: '{source}' is mounted read-write (Nebula "
                           "has no read-only volume)", "nothing to do, unless it matters")  # fmt: skip
    return out
