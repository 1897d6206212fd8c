"""Label selectors as the API server reads them (``a=b,c!=d,e,!f,g in (h,i),j notin (k)``),
matched against an object's labels, so the watch cache answers a list by selector with the
objects the API server would have listed.

Pure functions; a selector this does not understand is a ``ValueError``, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALS = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


def _split(selector: str) -> list[str]:
    """Commas separate requirements, except inside a set's parentheses."""
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Requirement:
    found = _SET.match(text)
    if found is not None:
        key, operator, listed = found.groups()
        values = frozenset(v.strip() for v in listed.split(",") if v.strip())
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    found = _EQUALS.match(text)
    if found is not None:
        key, operator, value = found.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    found = _EXISTS.match(text)
    if found is not None:
        negated, key = found.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ValueError(f"not a label selector requirement: {text!r}")


@lru_cache(maxsize=512)
def parse(selector: str) -> tuple[Requirement, ...]:
    """The requirements of ``selector``; "" selects everything."""
    return tuple(_requirement(part) for part in _split(selector))


def matches(selector: str, obj: Mapping[str, Any]) -> bool:
    """Does ``obj`` (an API object) carry labels ``selector`` selects?"""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(requirement(labels) for requirement in parse(selector))


def of_labels(labels: Mapping[str, str]) -> str:
    """``a=b,c=d``: the selector of a workload's ``matchLabels``, keys in order."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
