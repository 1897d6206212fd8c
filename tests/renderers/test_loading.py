"""The manifests' YAML loader gives exactly what PyYAML's safe loader (over libyaml, as before
it) gives, errors included."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from renderers import capabilities
from renderers.loading import Loader
from tests.renderers import samples

_SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _safe(text: str) -> Any:
    return yaml.load(text, Loader=_SAFE)


def _ours(text: str) -> Any:
    return yaml.load(text, Loader=Loader)


def test_every_rendered_object_of_the_sample_project_loads_as_the_safe_loader_loads_it() -> None:
    for caps in (capabilities.RECENT, capabilities.KUBERNETES_1_20):
        rendered = samples.render_project(caps=caps)
        assert len(rendered) > 10
        for manifest in rendered:
            assert _ours(manifest.text) == _safe(manifest.text), manifest.ref


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: true\nc: null\nd: 1.5\ne: ~\nf: '007'\ng: 0o17\nh: 2020-01-02\ni: [1, 'x']\n",
        "base: &b {x: 1, y: [1, 2]}\nleft: *b\nright: *b\n",  # an anchor: one shared value
        "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",  # a merge key
        "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\nbin: !!binary aGVsbG8=\n",
        "k: !!str 12\nn: !!int '12'\nf: !!float '1'\n",
        "dup: 1\ndup: 2\n",
        "? [a, b]\n: 1\n",  # an unhashable key
        "x: !custom 1\n",  # a tag the safe loader does not know
        "= : 1\n",  # the value key
        "a: !!map foo\n",  # a scalar tagged as a collection
        "s: !!seq x\n",
        "p: !!pairs x\n",
        "!!set x\n",
        "",
        "- 1\n- [2, [3, {four: 4}]]\n",
    ],
)
def test_a_document_loads_as_the_safe_loader_loads_it_or_fails_as_it_fails(text: str) -> None:
    try:
        expected = _safe(text)
    except yaml.YAMLError as exc:
        with pytest.raises(type(exc)) as raised:
            _ours(text)
        assert str(raised.value) == str(exc)
        return
    assert _ours(text) == expected


def test_an_anchored_value_is_one_object_as_with_the_safe_loader() -> None:
    loaded = _ours("base: &b {x: 1}\nleft: *b\nright: *b\n")
    assert loaded["left"] is loaded["right"]
    assert _ours("d: 2020-01-02\n")["d"] == date(2020, 1, 2)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.dates(),
)


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=8) | st.integers(), inner, max_size=4
    )


_documents = st.recursive(_scalars, _nested, max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(_documents, st.booleans())
def test_any_dumped_document_loads_as_the_safe_loader_loads_it(document: Any, flow: bool) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow)
    assert _ours(text) == _safe(text)


def test_a_document_nested_deeper_than_the_recursion_limit_loads_as_with_the_safe_loader() -> None:
    """(Compared a level at a time: comparing them whole would recurse as deep.)"""
    sequences = "[" * 2000 + "]" * 2000
    mappings = "".join(f"{'  ' * n}k{n}:\n" for n in range(1200)) + "  " * 1200 + "v\n"
    for loaded in (_ours(sequences), _safe(sequences)):
        depth = 0
        while loaded:
            loaded, depth = loaded[0], depth + 1
        assert (loaded, depth) == ([], 1999)
    for loaded in (_ours(mappings), _safe(mappings)):
        for n in range(1200):
            loaded = loaded[f"k{n}"]
        assert loaded == "v"
