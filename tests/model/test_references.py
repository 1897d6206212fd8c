"""``${{ ... }}`` references: parsing, escaping, and which of them order deploys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.model import graph, references
from reconciler.model.references import Literal, Reference, RefKind
from reconciler.model.specs import DatabaseSpec, EnvironmentConfig, EnvironmentSpec, ServiceSpec


@pytest.mark.parametrize(
    ("value", "segments"),
    [
        ("", ()),
        ("plain", (Literal("plain"),)),
        ("${{ db.DATABASE_URL }}", (Reference(RefKind.VARIABLE, "db", "DATABASE_URL"),)),
        ("${{search.API_KEY}}", (Reference(RefKind.VARIABLE, "search", "API_KEY"),)),
        ("${{   web-api._private  }}", (Reference(RefKind.VARIABLE, "web-api", "_private"),)),
        ("${{ host(payments) }}", (Reference(RefKind.HOST, "payments"),)),
        ("${{ host( payments ) }}", (Reference(RefKind.HOST, "payments"),)),
        ("${{ secret.STRIPE_KEY }}", (Reference(RefKind.SECRET, "STRIPE_KEY"),)),
        (
            "http://${{ host(api) }}/v1?key=${{ secret.K }}",
            (
                Literal("http://"),
                Reference(RefKind.HOST, "api"),
                Literal("/v1?key="),
                Reference(RefKind.SECRET, "K"),
            ),
        ),
        ("$${{ db.DATABASE_URL }}", (Literal("${{ db.DATABASE_URL }}"),)),
        ("a $${{ not.ME }} b", (Literal("a ${{ not.ME }} b"),)),
        (
            "$${{ x }}${{ db.PGHOST }}",
            (Literal("${{ x }}"), Reference(RefKind.VARIABLE, "db", "PGHOST")),
        ),
        ("$$${{ db.PGHOST }}", (Literal("$${{ db.PGHOST }}"),)),
        ("cost: $5 {{ x }} }}", (Literal("cost: $5 {{ x }} }}"),)),
        ("${{ a.B }}}", (Reference(RefKind.VARIABLE, "a", "B"), Literal("}"))),
    ],
)
def test_parse(value: str, segments: tuple[references.Segment, ...]) -> None:
    assert references.parse(value) == segments


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${{ }}", "unknown reference '${{  }}'"),
        ("${{ api }}", "unknown reference '${{ api }}'"),
        ("${{ Api.KEY }}", "unknown reference '${{ Api.KEY }}'"),
        ("${{ api.KEY.more }}", "unknown reference '${{ api.KEY.more }}'"),
        ("${{ api.1KEY }}", "unknown reference '${{ api.1KEY }}'"),
        ("${{ host(API) }}", "unknown reference '${{ host(API) }}'"),
        ("${{ host(api }}", "unknown reference '${{ host(api }}'"),
        ("${{ secret.my-key }}", "unknown reference '${{ secret.my-key }}'"),
        ("${{ env.HOME }} and ${{ lower }}", "unknown reference '${{ lower }}'"),
        ("x ${{ api.KEY", "unterminated reference '${{ api.KEY'"),
    ],
)
def test_invalid_reference(value: str, message: str) -> None:
    with pytest.raises(references.ReferenceSyntaxError) as raised:
        references.parse(value)
    assert raised.value.message == message
    assert value[raised.value.offset :].startswith("${{")
    assert raised.value.hint


@given(st.lists(st.sampled_from(["$", "{", "}", "a", " ", ".", "${{", "$${{", "}}"])).map("".join))
def test_escape_reads_back_as_the_literal(text: str) -> None:
    parsed = references.parse(references.escape(text))
    assert parsed == ((Literal(text),) if text else ())


@pytest.mark.parametrize(
    "ref",
    [
        Reference(RefKind.VARIABLE, "db", "DATABASE_URL"),
        Reference(RefKind.HOST, "api"),
        Reference(RefKind.SECRET, "STRIPE_KEY"),
    ],
)
def test_a_reference_prints_as_it_is_written(ref: Reference) -> None:
    assert references.parse(str(ref)) == (ref,)
    assert references.is_exactly(references.parse(str(ref))) == ref
    assert references.is_exactly(references.parse(f"x{ref}")) is None


# -- edges -----------------------------------------------------------------------------------------


def _config(*services: ServiceSpec) -> EnvironmentConfig:
    return EnvironmentConfig(EnvironmentSpec("staging"), services, (DatabaseSpec("db"),))


def test_edges_come_from_depends_on_and_variable_references_only() -> None:
    api = ServiceSpec(
        "api",
        "img",
        variables=(
            ("DATABASE_URL", "${{ db.DATABASE_URL }}"),
            ("SEARCH_KEY", "key=${{ search.API_KEY }}"),
            ("PAYMENTS", "http://${{ host(payments) }}"),
            ("STRIPE", "${{ secret.STRIPE_KEY }}"),
            ("LITERAL", "$${{ mail.URL }}"),
        ),
        depends_on=("mail",),
    )
    config = _config(
        api,
        ServiceSpec("search", "img", variables=(("API_KEY", "k"),)),
        ServiceSpec("payments", "img"),
        ServiceSpec("mail", "img", variables=(("URL", "u"),)),
    )
    assert sorted((e.source, e.target, e.via, e.detail) for e in graph.edges(config)) == [
        ("api", "db", graph.Via.REFERENCE, "DATABASE_URL"),
        ("api", "mail", graph.Via.DEPENDS_ON, "mail"),
        ("api", "search", graph.Via.REFERENCE, "SEARCH_KEY"),
    ]
    assert graph.dependencies(config, "api") == ("db", "mail", "search")
    assert graph.dependencies(config, "payments") == ()


def test_dependencies_are_listed_once() -> None:
    api = ServiceSpec(
        "api",
        "img",
        variables=(("A", "${{ db.PGHOST }}"), ("B", "${{ db.PGPORT }}")),
        depends_on=("db",),
    )
    config = _config(api)
    assert len(graph.edges(config)) == 3
    assert graph.dependencies(config, "api") == ("db",)


def test_host_reference_does_not_order_deploys() -> None:
    a = ServiceSpec("a", "img", variables=(("B", "${{ host(b) }}"),))
    b = ServiceSpec("b", "img", variables=(("A", "${{ host(a) }}"),))
    config = _config(a, b)
    assert graph.edges(config) == []
    assert graph.apply_order(config) == ["db", "a", "b"]
