"""What Kubernetes does to ``command`` and ``env[].value``: ``$(NAME)`` expansion.

A line-by-line port of ``third_party/forked/golang/expansion/expand.go`` in kubernetes/kubernetes,
so the tests can check that a rendered value *runs* as the user wrote it, not only that it
parses.
"""

from __future__ import annotations

from collections.abc import Mapping


def expand(text: str, env: Mapping[str, str]) -> str:
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_name(text[cursor + 1 :])
            out.append(env.get(read, f"$({read})") if is_var else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _read_name(text: str) -> tuple[str, bool, int]:
    if text[0] == "$":
        return "$", False, 1  # an escaped operator
    if text[0] == "(":
        end = text.find(")", 1)
        if end >= 0:
            return text[1:end], True, end + 1
        return "$(", False, 1  # an incomplete reference stays as written
    return "$" + text[0], False, 1


def container_env(
    env: list[dict[str, object]], secrets: Mapping[tuple[str, str], str]
) -> dict[str, str]:
    """The environment a container sees: entries in order, each expanded against earlier ones."""
    seen: dict[str, str] = {}
    for entry in env:
        name = str(entry["name"])
        if "valueFrom" in entry:
            ref = entry["valueFrom"]["secretKeyRef"]  # type: ignore[index]
            seen[name] = secrets[(ref["name"], ref["key"])]
        else:
            seen[name] = expand(str(entry["value"]), seen)
    return seen
