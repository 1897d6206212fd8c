"""Field paths as drift names them and ``nebula simulated edit`` takes them. Pure.

``spec.replicas``, ``data.LOG_LEVEL``, ``spec.template.spec.containers[name=web].image`` (a
list item by its key), ``spec.volumeClaimTemplates[0]`` (by position),
``metadata.labels["nebula.dev/release"]`` (a key that is no identifier; a shell takes the quotes
away, so ``metadata.labels[nebula.dev/release]`` is read the same).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

Segment = str | int | tuple[str, str]  # a key, a list index, a list item by (key, value)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def text(path: Sequence[Segment]) -> str:
    """The path as written: ``spec.template.spec.containers[name=web].image``."""
    out = ""
    for segment in path:
        if isinstance(segment, tuple):
            out += f"[{segment[0]}={segment[1]}]"
        elif isinstance(segment, int):
            out += f"[{segment}]"
        elif _IDENTIFIER.match(segment):
            out += f".{segment}" if out else segment
        else:
            out += f"[{json.dumps(segment)}]"
    return out


_TOKEN = re.compile(
    r'\.?(?P<key>[A-Za-z_][A-Za-z0-9_-]*)|\[(?P<index>[0-9]+)\]|\["(?P<quoted>(?:[^"\\]|\\.)*)"\]'
    r"|\[(?P<match>[A-Za-z][A-Za-z0-9]*)=(?P<value>[^\]]*)\]"
    r'|\[(?P<bare>[^\]="]+)\]'  # a key written without quotes: [example.com/owner]
)


def read(written: str) -> list[Segment]:
    """``spec.template.spec.containers[name=web].image`` as segments; ValueError if malformed."""
    segments: list[Segment] = []
    position = 0
    while position < len(written):
        match = _TOKEN.match(written, position)
        if match is None or (position == 0 and written.startswith(".")):
            raise ValueError(f"cannot read the path {written!r} at character {position + 1}")
        if match.group("key") is not None:
            segments.append(match.group("key"))
        elif match.group("index") is not None:
            segments.append(int(match.group("index")))
        elif match.group("quoted") is not None:
            segments.append(json.loads(f'"{match.group("quoted")}"'))
        elif match.group("bare") is not None:
            segments.append(match.group("bare"))
        else:
            segments.append((match.group("match"), match.group("value")))
        position = match.end()
    if not segments:
        raise ValueError("the path is empty")
    return segments


def put(obj: Mapping[str, Any], path: Sequence[Segment], value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at ``path`` (intermediate objects created as needed);
    KeyError when a list item named by the path does not exist."""
    root: dict[str, Any] = copy.deepcopy(dict(obj))
    node: Any = root
    for position, segment in enumerate(path):
        last = position == len(path) - 1
        if isinstance(segment, tuple):
            key, wanted = segment
            found = [i for i in node if isinstance(i, dict) and str(i.get(key)) == wanted]
            if not found:
                raise KeyError(text(path[: position + 1]))
            if last:
                node[node.index(found[0])] = value
            node = found[0]
        elif isinstance(segment, int):
            if not isinstance(node, list) or segment >= len(node):
                raise KeyError(text(path[: position + 1]))
            if last:
                node[segment] = value
            node = node[segment]
        else:
            if not isinstance(node, dict):
                raise KeyError(text(path[: position + 1]))
            if last:
                node[segment] = value
            else:
                node = node.setdefault(segment, {})
    return root
