"""``positions.scan`` finds every key of a TOML document on the line where it is written.

Documents are generated as Python structures and written by tomlkit in the styles people
use: [table] headers, super tables, inline tables, dotted keys, arrays (one line or many),
arrays of tables, basic/literal/multi-line strings, comments and blank lines.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.model import positions

# -- a generated document: plain data with a style chosen for each node ------------------------

BARE_KEYS = st.text(
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"),
    min_size=1,
    max_size=10,
)
ANY_KEYS = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
KEYS = st.one_of(BARE_KEYS, BARE_KEYS, ANY_KEYS)
COMMENTS = st.none() | st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=12)

STRINGS = st.tuples(
    st.just("string"),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
    st.sampled_from(["basic", "literal", "multiline", "multiline-literal"]),
)
SCALARS = st.one_of(
    st.tuples(st.just("value"), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    st.tuples(st.just("value"), st.booleans()),
    st.tuples(st.just("value"), st.floats(allow_nan=False, allow_infinity=True)),
    st.tuples(st.just("value"), st.dates(min_value=date(1000, 1, 1))),
    STRINGS,
)


def _inline(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values that can sit inside an inline table or an array."""
    return st.one_of(
        st.tuples(st.just("array"), st.lists(children, max_size=4), st.booleans()),
        st.tuples(st.just("inline"), st.dictionaries(KEYS, children, max_size=3)),
    )


INLINE = st.recursive(SCALARS, _inline, max_leaves=6)


def _tables(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    members = st.dictionaries(KEYS, children, max_size=4)
    return st.one_of(
        st.tuples(st.just("table"), members, COMMENTS),
        st.tuples(st.just("dotted"), st.dictionaries(KEYS, INLINE, min_size=1, max_size=3)),
        st.tuples(st.just("aot"), st.lists(members, min_size=1, max_size=3)),
    )


NODES = st.recursive(INLINE, _tables, max_leaves=8)
DOCUMENTS = st.tuples(st.dictionaries(KEYS, NODES, max_size=5), st.lists(COMMENTS, max_size=4))


def _string(text: str, style: str) -> tomlkit.items.String:
    literal = style.endswith("literal")
    multiline = style.startswith("multiline")
    try:
        return tomlkit.string(text, literal=literal, multiline=multiline)
    except tomlkit.exceptions.InvalidStringError:  # e.g. a quote inside a literal string
        return tomlkit.string(text)


def _item(node: Any) -> Any:
    kind = node[0]
    if kind == "value":
        return tomlkit.item(node[1])
    if kind == "string":
        return _string(node[1], node[2])
    if kind == "array":
        array = tomlkit.array()
        for child in node[1]:
            array.append(_item(child))
        return array.multiline(node[2])
    if kind == "inline":
        inline = tomlkit.inline_table()
        for key, child in node[1].items():
            inline.append(key, _item(child))
        return inline
    if kind == "table":
        table = tomlkit.table()
        _fill(table, node[1])
        if node[2] is not None:
            table.comment(node[2])
        return table
    aot = tomlkit.aot()
    for members in node[1]:
        table = tomlkit.table()
        _fill(table, members)
        aot.append(table)
    return aot


def _fill(
    container: Any, members: dict[str, Any], comments: list[str | None] | None = None
) -> None:
    """Key/values first, then tables, as TOML requires; comments between the key/values."""
    notes = list(comments or [])
    order = sorted(members.items(), key=lambda kv: kv[1][0] in ("table", "aot"))
    for key, node in order:
        if node[0] == "dotted":
            for child_key, child in node[1].items():
                container.add(tomlkit.key([key, child_key]), _item(child))
            continue
        if notes and (note := notes.pop()) is not None and node[0] not in ("table", "aot"):
            container.add(tomlkit.comment(note))
        container.add(key, _item(node))


def _dump(document: tuple[dict[str, Any], list[str | None]]) -> str:
    doc = tomlkit.document()
    _fill(doc, *document)
    return tomlkit.dumps(doc)


# -- the property ----------------------------------------------------------------------------------


def key_paths(data: Any, prefix: positions.Path = ()) -> list[positions.Path]:
    out: list[positions.Path] = []
    if isinstance(data, dict):
        for key, value in data.items():
            out.append((*prefix, key))
            out += key_paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            out += key_paths(item, (*prefix, index))
    return out


def leaf_paths(data: Any, prefix: positions.Path = ()) -> list[positions.Path]:
    """Paths of every scalar, including array elements."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in leaf_paths(v, (*prefix, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in leaf_paths(v, (*prefix, i))]
    return [prefix]


def key_written_at(text: str, start: int) -> str:
    """The key that starts at ``text[start]``, decoded by tomlkit rather than by the scanner."""
    if text[start] == "'":
        return text[start + 1 : text.index("'", start + 1)]
    if text[start] == '"':
        end = start + 1
        while text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        value = tomlkit.parse(f"k = {text[start : end + 1]}")["k"]
        return str(value)
    end = start
    while end < len(text) and ((text[end].isalnum() and text[end].isascii()) or text[end] in "_-"):
        end += 1
    return text[start:end]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_every_key_is_found_where_it_is_written(document: tuple[dict[str, Any], list[Any]]) -> None:
    text = _dump(document)
    data = tomlkit.parse(text).unwrap()
    found = positions.scan(text)
    lines = text.split("\n")
    offsets = [0]
    for written in lines:
        offsets.append(offsets[-1] + len(written) + 1)
    for path in key_paths(data):
        if isinstance(path[-1], int):
            continue
        assert path in found.keys, f"{path} not found in:\n{text}"
        line, col = found.keys[path]
        assert key_written_at(text, offsets[line - 1] + col - 1) == path[-1], (path, text)
    for path in leaf_paths(data):
        assert path in found.values, f"no value position for {path} in:\n{text}"
        line, col = found.values[path]
        assert 1 <= line <= len(lines) and 1 <= col <= len(lines[line - 1])


def test_positions_of_a_hand_written_file() -> None:
    text = (
        '[services."api"]  # the api\n'
        'image = "x"\n'
        "processes.web = { type = 'http', port = 8080 }\n"
        "\n"
        "[[services.api.jobs]]\n"
        "schedule = '''0 3\n"
        "* * *'''\n"
        "[[services.api.jobs]]\n"
        "depends_on = [\n"
        '  "db",  # first\n'
        '  "search",\n'
        "]\n"
    )
    found = positions.scan(text)
    assert found.keys[("services", "api")] == (1, 11)
    assert found.values[("services", "api", "image")] == (2, 9)
    assert found.keys[("services", "api", "processes", "web", "port")] == (3, 34)
    assert found.keys[("services", "api", "jobs", 1)] == (8, 16)
    assert found.values[("services", "api", "jobs", 0, "schedule")] == (6, 12)
    assert found.values[("services", "api", "jobs", 1, "depends_on", 1)] == (11, 3)
    # Missing paths fall back to the nearest enclosing key, then the file start.
    assert found.key(("services", "api", "variables", "X")) == (1, 11)
    assert found.value(("nothing",)) == (1, 1)
