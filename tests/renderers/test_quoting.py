"""Scalars that read back exactly, and a template environment that outputs nothing else."""

from __future__ import annotations

import jinja2
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from renderers import quoting, templating
from renderers.manifests import Loader

TRICKY = [
    "",
    "plain",
    'say "hi"',
    "back\\slash",
    "line\nbreak\r\n",
    "tab\there",
    "nul\x00and\x07bell\x1b",
    "del\x7f and c1 \x85\x9f",
    "\u2028\u2029",
    "é 日本 שלום",
    "emoji 😀 and \U0001d518",
    "\ufeffbom",
    "\ufffe\uffff",
    "yes",
    "null",
    "0x1",
]


@pytest.mark.parametrize("value", TRICKY)
def test_a_quoted_value_reads_back_exactly(value: str) -> None:
    scalar = quoting.quote(value)

    assert "\n" not in scalar and "\r" not in scalar
    assert scalar.isascii()
    assert yaml.load(f"key: {scalar}\n", Loader=Loader) == {"key": value}
    assert yaml.load(f"key: {scalar}\n", Loader=yaml.SafeLoader) == {"key": value}


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])))
def test_any_text_reads_back_exactly(value: str) -> None:
    assert yaml.load(f"- {quoting.quote(value)}\n", Loader=Loader) == [value]


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        quoting.quote("\ud800")


@pytest.mark.parametrize("value", [1, 1.5, True, None, b"x", ["a"]])
def test_only_text_is_quoted(value: object) -> None:
    with pytest.raises(TypeError):
        quoting.quote(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [True, "1", 1.0, None])
def test_only_integers_are_numbers(value: object) -> None:
    with pytest.raises(TypeError):
        quoting.number(value)  # type: ignore[arg-type]


def test_numbers_render_as_yaml_integers() -> None:
    assert quoting.number(8080) == "8080"


def _render(source: str, **values: object) -> str:
    return templating.environment().from_string(source).render(**values)


def test_a_quoted_value_is_output() -> None:
    assert _render("a: {{ v|q }}", v="x: y") == 'a: "x: y"'


@pytest.mark.parametrize(
    "source",
    [
        "a: {{ v }}",
        "a: {{ 'literal' }}",
        "a: {{ n }}",
        "a: {{ v|q ~ '' }}",
        "{% set x %}{{ v|q }}{% endset %}a: {{ x }}",
    ],
)
def test_a_value_that_did_not_pass_through_a_quoting_filter_is_refused(source: str) -> None:
    with pytest.raises(templating.UnquotedValueError):
        _render(source, v="x", n=1)


@pytest.mark.parametrize(
    "name", ["safe", "string", "tojson", "replace", "join", "format", "upper", "default"]
)
def test_filters_that_could_produce_unquoted_text_do_not_exist(name: str) -> None:
    with pytest.raises(jinja2.TemplateAssertionError, match="No filter named"):
        _render(f"a: {{{{ v|{name} }}}}", v="x")


def test_an_undefined_name_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(jinja2.UndefinedError):
        _render("a: {{ missing|q }}")


def test_templates_are_compiled_once() -> None:
    assert templating.template("deployment.j2") is templating.template("deployment.j2")
