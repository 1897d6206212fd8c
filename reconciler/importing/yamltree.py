"""YAML text -> a small tree of nodes that remember where they were written.

PyYAML's composer (already a dependency, and C-accelerated where libyaml is present) gives
every node its start mark, so each Compose key can be reported as ``FILE:LINE:COL``; its
constructor, which would turn the nodes into plain dicts, is not used: that would lose the
positions, and YAML 1.1's typing (``yes`` as a boolean, ``010`` as octal) is not how Compose
reads values. Here a scalar keeps its text as written; callers decide what it means.

Merge keys (``<<: *defaults``, the way Compose files share settings through ``x-`` blocks)
are applied as Compose applies them: keys written in the mapping win over merged ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MOST_NODES = 200_000  # aliases can multiply a small file ("billion laughs"): stop well before
_NULL = "tag:yaml.org,2002:null"
_MERGE = "<<"


@dataclass(frozen=True)
class At:
    """A 1-based line and column."""

    line: int
    col: int


@dataclass(frozen=True)
class Scalar:
    text: str
    at: At
    null: bool = False  # written as nothing, ``~`` or ``null``

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Entry:
    key: str
    key_at: At
    value: Node


@dataclass(frozen=True)
class Mapping:
    entries: tuple[Entry, ...]
    at: At

    def get(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)

    def value(self, key: str) -> Node | None:
        entry = self.get(key)
        return entry.value if entry is not None else None

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)


@dataclass(frozen=True)
class Sequence:
    items: tuple[Node, ...]
    at: At

    def __iter__(self) -> Iterator[Node]:
        return iter(self.items)


Node = Scalar | Mapping | Sequence


class YamlError(ValueError):
    """The text is not YAML this reader takes; ``at`` is where, when known."""

    def __init__(self, message: str, at: At) -> None:
        super().__init__(message)
        self.message = message
        self.at = at


def parse(text: str) -> Node | None:
    """The document's root node (None for an empty document); raises ``YamlError``."""
    try:
        root = yaml.compose(text, Loader=_Loader)  # a safe loader, composing only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = At(mark.line + 1, mark.column + 1) if mark is not None else At(1, 1)
        raise YamlError(f"invalid YAML: {exc.problem or exc.context}", at) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", At(1, 1)) from None
    if root is None:
        return None
    return _Converter().node(root)


def _at(node: yaml.Node) -> At:
    return At(node.start_mark.line + 1, node.start_mark.column + 1)


class _Converter:
    def __init__(self) -> None:
        self.count = 0

    def node(self, node: yaml.Node, depth: int = 0) -> Node:
        self.count += 1
        if self.count > MOST_NODES or depth > 100:
            raise YamlError("too many nodes: aliases expand this file past what a Compose "
                            "file holds", _at(node))  # fmt: skip
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, depth)
        if isinstance(node, yaml.SequenceNode):
            return Sequence(tuple(self.node(n, depth + 1) for n in node.value), _at(node))
        return Scalar(str(node.value), _at(node), null=node.tag == _NULL)

    def _mapping(self, node: yaml.MappingNode, depth: int) -> Mapping:
        written: list[Entry] = []
        merged: list[Entry] = []
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError("a key must be a plain value, not a list or mapping",
                                _at(key_node))  # fmt: skip
            key = str(key_node.value)
            if key == _MERGE and key_node.tag != "tag:yaml.org,2002:str":
                merged += self._merged(value_node, depth)
                continue
            if any(e.key == key for e in written):
                raise YamlError(f"key '{key}' is written twice in this mapping", _at(key_node))
            written.append(Entry(key, _at(key_node), self.node(value_node, depth + 1)))
        keys = {e.key for e in written}
        extra: list[Entry] = []
        for entry in merged:  # the first merged mapping that has a key gives it
            if entry.key not in keys:
                keys.add(entry.key)
                extra.append(entry)
        return Mapping((*written, *extra), _at(node))

    def _merged(self, node: yaml.Node, depth: int) -> list[Entry]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: list[Entry] = []
        for source in sources:
            converted = self.node(source, depth + 1)
            if not isinstance(converted, Mapping):
                raise YamlError("'<<' merges mappings only", _at(source))
            out += converted.entries
        return out


def text_of(node: Node | None) -> str | None:
    """A scalar's text; None for a missing, null, list or mapping node."""
    if isinstance(node, Scalar) and not node.null:
        return node.text
    return None


def strings_of(node: Node | None) -> list[str] | None:
    """A list of scalars as texts; None when ``node`` is not such a list."""
    if not isinstance(node, Sequence):
        return None
    texts = [text_of(item) for item in node]
    return None if any(t is None for t in texts) else [t for t in texts if t is not None]
