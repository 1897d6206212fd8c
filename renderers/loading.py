"""PyYAML's safe loader, with a quicker way from the parsed nodes to Python values.

Rendering a release parses each object's YAML back (``manifests``), and that parse was most
of what rendering costs: libyaml builds the nodes in C, then PyYAML's constructor turns
them into values in Python, through a generator per mapping and per sequence (so that it can
build recursive documents lazily). Our templates' documents are plain mappings, sequences
and scalars; for those ``Loader`` walks the nodes once, directly, and builds the same values
(each scalar through the safe constructor of its resolved tag, an anchor's node once): about
40% less time a document.

Anything else (a merge key, an explicitly tagged mapping or sequence such as ``!!set``, a
scalar tagged as a collection, a tag the safe loader does not know, nesting deeper than
Python's recursion limit) sends the whole document through PyYAML's own constructor, so the
values, and the errors, are the safe loader's.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:
    _Base: type[Any] = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Base = yaml.SafeLoader

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
# The scalar tags built here, each by its safe constructor (which returns the value; those
# of the collection tags are generators, and refuse a scalar: PyYAML's constructor says so).
_SCALARS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")
)


class _NotPlain(Exception):
    """The document holds a node ``_plain`` leaves to PyYAML's constructor."""


class Loader(_Base):  # type: ignore[misc]
    """A safe loader: ``yaml.load(text, Loader=Loader)``."""

    def construct_document(self, node: Node) -> Any:
        try:
            return self._plain(node, {})
        except (_NotPlain, RecursionError):  # (PyYAML's builds a deep document without recursing)
            return super().construct_document(node)

    def _plain(self, node: Node, built: dict[int, Any]) -> Any:
        if node.__class__ is ScalarNode:
            if node.tag == _STR:
                return node.value
            if node.tag not in _SCALARS:
                raise _NotPlain
            return self.yaml_constructors[node.tag](self, node)
        if id(node) in built:  # an alias: the anchored node's value, as PyYAML shares it
            return built[id(node)]
        if node.__class__ is SequenceNode and node.tag == _SEQ:
            items: list[Any] = []
            built[id(node)] = items
            items.extend(self._plain(item, built) for item in node.value)
            return items
        if node.__class__ is MappingNode and node.tag == _MAP:
            mapping: dict[Any, Any] = {}
            built[id(node)] = mapping
            for key_node, value_node in node.value:
                if key_node.tag in (_MERGE, _VALUE):
                    raise _NotPlain
                key = self._plain(key_node, built)
                value = self._plain(value_node, built)
                try:
                    mapping[key] = value
                except TypeError:  # an unhashable key: the safe loader's error names it
                    raise _NotPlain from None
            return mapping
        raise _NotPlain
