"""Drift: where a live object differs from the manifest Nebula applied. Pure: no cluster, no store.

Both runtimes hand their live objects to ``compare``, so the simulated cluster and Kubernetes
call the same things drift. The rule is the manifest's own fields: a field is drift when the
manifest Nebula applied sets it and the live object holds another value, or none; an object
that is gone is drift as a whole. Everything else in the live object is not Nebula's to judge:
status, fields the API server defaults, annotations and labels other managers add, entries
other managers add to a list Nebula keys by name (an env var, a container). So that the API
server's own spelling is no false drift:

- a zero value Nebula sets (``0``, ``""``, ``false``, ``{}``, ``[]``) equals a field the server
  left out (Go's ``omitempty``: ``minReadySeconds: 0`` is stored as nothing);
- resource quantities compare by amount (``0.5`` is ``500m``, ``1Gi`` is ``1024Mi``);
- lists of objects are matched by ``name`` (or ``containerPort``, ``port``, ``mountPath``,
  ``key``), as server-side apply merges them, else by position; lists of scalars whole.

Paths read like kubectl's (``reconciler.core.fieldpaths``): ``spec.replicas``,
``data.LOG_LEVEL``, ``spec.template.spec.containers[name=web].image``,
``metadata.labels["nebula.dev/release"]``; ``nebula simulated edit`` takes the same paths. A Secret's
values are never shown: its drift says which key differs, not what either side holds.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml

from reconciler.core import fieldpaths
from reconciler.core.fieldpaths import Segment

Manifest = Mapping[str, Any]

AUTOSCALED = "nebula.dev/autoscaled"  # the annotation of a Deployment an HPA scales
HIDDEN = "(hidden)"
HIDDEN_CHANGED = "(hidden, differs)"
SECRET_KINDS = ("Secret",)
SECRET_FIELDS = ("data", "stringData")
_NOT_COMPARED = ("apiVersion", "kind", "status")
_LIST_KEYS = ("name", "containerPort", "port", "mountPath", "key")
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)
_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


class _Missing:
    """A field the live object does not have (None is a value: JSON null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Drift:
    """One difference: ``object`` is ``Kind/name``; a missing object has no path."""

    object: str
    path: str = ""
    live: str | None = None
    desired: str | None = None
    missing: bool = False

    def to_json(self) -> dict[str, Any]:
        """The contract's shape: ``{"object", "path", "live", "desired"}`` or
        ``{"object", "missing": true}``."""
        if self.missing:
            return {"object": self.object, "missing": True}
        return {
            "object": self.object,
            "path": self.path,
            "live": self.live,
            "desired": self.desired,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Drift:
        if data.get("missing"):
            return cls(str(data["object"]), missing=True)
        return cls(str(data["object"]), str(data["path"]), data.get("live"), data.get("desired"))

    @property
    def hidden(self) -> bool:
        return self.live in (HIDDEN, HIDDEN_CHANGED) or self.desired in (HIDDEN, HIDDEN_CHANGED)


def reference(manifest: Manifest) -> str:
    """``Deployment/api-r3``: how an object is named in drift, events and diffs."""
    return f"{manifest.get('kind', '')}/{(manifest.get('metadata') or {}).get('name', '')}"


def gone(live: Manifest | None) -> bool:
    """Absent, or being deleted (it will be absent in a moment)."""
    return live is None or bool((live.get("metadata") or {}).get("deletionTimestamp"))


# -- comparing -----------------------------------------------------------------------------


def compare(desired: Manifest, live: Manifest | None) -> tuple[Drift, ...]:
    """Where ``live`` differs from ``desired`` in the fields ``desired`` sets."""
    ref = reference(desired)
    if gone(live):
        return (Drift(ref, missing=True),)
    assert live is not None
    secret = desired.get("kind") in SECRET_KINDS
    out: list[Drift] = []
    for key, value in desired.items():
        if key not in _NOT_COMPARED:
            _walk(value, live.get(key, MISSING), [key], out, ref, secret)
    if autoscaled(desired):
        out = [d for d in out if d.path != "spec.replicas"]
    return tuple(out)


def autoscaled(manifest: Manifest) -> bool:
    """A workload whose replica count an autoscaler owns: a different count is not drift."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    return annotations.get(AUTOSCALED) == "true"


def _walk(
    desired: Any, live: Any, path: list[Segment], out: list[Drift], ref: str, secret: bool
) -> None:
    if isinstance(desired, Mapping):
        if isinstance(live, Mapping):
            for key, value in desired.items():
                _walk(value, live.get(key, MISSING), [*path, key], out, ref, secret)
        elif not (live is MISSING and not desired):
            out.append(_drift(ref, path, live, desired, secret))
        return
    if isinstance(desired, list) and desired and all(isinstance(i, Mapping) for i in desired):
        if not isinstance(live, list):
            out.append(_drift(ref, path, live, desired, secret))
            return
        for segment, want, have in _pairs(desired, live):
            if have is MISSING:
                out.append(_drift(ref, [*path, segment], MISSING, want, secret))
            else:
                _walk(want, have, [*path, segment], out, ref, secret)
        return
    if not equal(desired, live, path):
        out.append(_drift(ref, path, live, desired, secret))


def _pairs(desired: list[Any], live: list[Any]) -> Iterator[tuple[Segment, Any, Any]]:
    """Each desired list item with the live item it is matched to (MISSING when none)."""
    key = next((k for k in _LIST_KEYS if all(k in item for item in desired)), None)
    if key is None:
        for index, want in enumerate(desired):
            yield index, want, live[index] if index < len(live) else MISSING
        return
    by_key = {str(i.get(key)): i for i in live if isinstance(i, Mapping) and key in i}
    for want in desired:
        value = str(want[key])
        yield (key, value), want, by_key.get(value, MISSING)


def equal(desired: Any, live: Any, path: Sequence[Segment] = ()) -> bool:
    """Is ``live`` what ``desired`` says, as the API server would store it?"""
    if live is MISSING:
        return _zero(desired)
    if isinstance(desired, bool) or isinstance(live, bool):
        return isinstance(desired, bool) and isinstance(live, bool) and desired is live
    if desired == live:
        return True
    if isinstance(desired, str) and isinstance(live, str) and _is_quantity_field(path):
        a, b = quantity(desired), quantity(live)
        return a is not None and a == b
    return False


def _zero(value: Any) -> bool:
    """What a server stores as nothing: null, false, 0, "", [] and {}."""
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == 0
    return isinstance(value, str | list | dict) and not value


def _is_quantity_field(path: Sequence[Segment]) -> bool:
    names = [s for s in path if isinstance(s, str)]
    return bool(names) and (
        names[-1] == "storage" or (len(names) > 1 and names[-2] in ("requests", "limits"))
    )


def quantity(text: str) -> Decimal | None:
    """A Kubernetes quantity as a number: ``500m`` -> 0.5, ``1Gi`` -> 1073741824."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        return None
    if exponent:
        value *= Decimal(10) ** int(exponent[1:])
    if suffix:
        value *= _SUFFIXES[suffix]
    return value.normalize()


def _drift(ref: str, path: list[Segment], live: Any, desired: Any, secret: bool) -> Drift:
    text = fieldpaths.text(path)
    if secret and path and path[0] in SECRET_FIELDS:
        return Drift(ref, text, HIDDEN_CHANGED if live is not MISSING else None, HIDDEN)
    return Drift(ref, text, shown(live), shown(desired))


def shown(value: Any) -> str | None:
    """A value as drift shows it: scalars as text (``5``, ``true``), objects as compact JSON."""
    if value is MISSING or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


# -- showing ---------------------------------------------------------------------------------


def live_view(desired: Manifest, live: Manifest | None) -> dict[str, Any] | None:
    """``live`` cut to the fields ``desired`` sets, spelled as ``desired`` where they are equal,
    so that a diff of the two shows only what drifted. Secret values are masked."""
    if gone(live):
        return None
    assert live is not None
    secret = desired.get("kind") in SECRET_KINDS
    out: dict[str, Any] = {}
    for key, value in desired.items():
        if key in _NOT_COMPARED:
            out[key] = value
            continue
        seen = _view(value, live.get(key, MISSING), [key], secret)
        if seen is not MISSING:
            out[key] = seen
    return out


def _view(desired: Any, live: Any, path: list[Segment], secret: bool) -> Any:
    if live is MISSING:
        return desired if equal(desired, live, path) else MISSING
    if secret and len(path) == 2 and path[0] in SECRET_FIELDS:
        return HIDDEN if equal(desired, live, path) else HIDDEN_CHANGED
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return live
        out = {}
        for key, value in desired.items():
            seen = _view(value, live.get(key, MISSING), [*path, key], secret)
            if seen is not MISSING:
                out[key] = seen
        return out
    if isinstance(desired, list) and desired and all(isinstance(i, Mapping) for i in desired):
        if not isinstance(live, list):
            return live
        items = []
        for segment, want, have in _pairs(desired, live):
            seen = _view(want, have, [*path, segment], secret)
            if seen is not MISSING:
                items.append(seen)
        return items
    return desired if equal(desired, live, path) else live


def masked(desired: Manifest) -> dict[str, Any]:
    """``desired`` as a diff may show it: a Secret's values hidden."""
    out = dict(desired)
    if desired.get("kind") in SECRET_KINDS:
        for name in SECRET_FIELDS:
            if isinstance(desired.get(name), Mapping):
                out[name] = dict.fromkeys(desired[name], HIDDEN)
    return out


def _yaml(document: Mapping[str, Any] | None) -> list[str]:
    if document is None:
        return []
    text = yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False, width=100)
    return text.splitlines(keepends=True)


def unified(desired: Manifest, live: Manifest | None, release: str) -> str:
    """The object as it runs against release ``release``'s manifest, as a unified diff
    (``--- live/Kind/name``, ``+++ r-3/Kind/name``); empty when they agree."""
    ref = reference(desired)
    before = _yaml(live_view(desired, live))
    after = _yaml(masked(desired))
    lines = difflib.unified_diff(before, after, fromfile=f"live/{ref}", tofile=f"{release}/{ref}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
