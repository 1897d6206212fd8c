"""``${{ svc.KEY }}`` resolved into the segments a release freezes."""

from __future__ import annotations

import pytest

from reconciler.errors import ConfigurationError
from reconciler.model.references import Literal, Reference, RefKind
from reconciler.model.resolving import merge_literals, resolve_variables
from reconciler.model.specs import EnvironmentConfig, EnvironmentSpec, ServiceSpec
from tests.renderers import samples

IMAGE = samples.API_IMAGE

CHAIN = f"""
[environments.staging]
[databases.db]

[services.a]
image = "{IMAGE}"
[services.a.variables]
URL = "postgres://${{{{ db.PGHOST }}}}/x"
TOKEN = "${{{{ secret.TOKEN }}}}"
NAME = "alpha"

[services.b]
image = "{IMAGE}"
[services.b.variables]
FROM_A = "b-${{{{ a.NAME }}}}-${{{{ a.URL }}}}"
ADDR = "${{{{ host(a) }}}}"

[services.c]
image = "{IMAGE}"
[services.c.variables]
FROM_B = "<${{{{ b.FROM_A }}}}|${{{{ b.ADDR }}}}|${{{{ a.TOKEN }}}}>"
ESCAPED = "$${{{{ b.FROM_A }}}}"
PLAIN = "plain"
"""


def test_a_chain_of_service_references_resolves_to_the_remaining_segments() -> None:
    config = samples.config(CHAIN)
    service = config.service("c")
    assert service is not None

    resolved = dict(resolve_variables(config, service))

    assert resolved["FROM_B"] == (
        Literal("<b-alpha-postgres://"),
        Reference(RefKind.VARIABLE, "db", "PGHOST"),
        Literal("/x|"),
        Reference(RefKind.HOST, "a"),
        Literal("|"),
        Reference(RefKind.SECRET, "TOKEN"),
        Literal(">"),
    )
    assert resolved["ESCAPED"] == (Literal("${{ b.FROM_A }}"),)
    assert resolved["PLAIN"] == (Literal("plain"),)


def test_variables_keep_file_order() -> None:
    config = samples.config(CHAIN)
    service = config.service("c")
    assert service is not None

    assert [k for k, _ in resolve_variables(config, service)] == ["FROM_B", "ESCAPED", "PLAIN"]


def test_database_host_and_secret_references_are_left_for_the_cluster() -> None:
    config = samples.config(CHAIN)
    service = config.service("a")
    assert service is not None

    assert dict(resolve_variables(config, service)) == {
        "URL": (Literal("postgres://"), Reference(RefKind.VARIABLE, "db", "PGHOST"), Literal("/x")),
        "TOKEN": (Reference(RefKind.SECRET, "TOKEN"),),
        "NAME": (Literal("alpha"),),
    }


def test_an_empty_value_resolves_to_no_segments() -> None:
    config = EnvironmentConfig(
        EnvironmentSpec("staging"),
        (
            ServiceSpec("a", IMAGE, variables=(("E", ""),)),
            ServiceSpec("b", IMAGE, variables=(("F", "${{ a.E }}x"),)),
        ),
    )
    b = config.service("b")
    assert b is not None

    assert resolve_variables(config, b) == (("F", (Literal("x"),)),)


def test_a_cycle_that_escaped_validation_is_a_configuration_error_naming_it() -> None:
    config = EnvironmentConfig(
        EnvironmentSpec("staging"),
        (
            ServiceSpec("a", IMAGE, variables=(("X", "${{ b.Y }}"),)),
            ServiceSpec("b", IMAGE, variables=(("Y", "${{ a.X }}"),)),
        ),
    )
    a = config.service("a")
    assert a is not None

    with pytest.raises(ConfigurationError, match=r"variable reference cycle: a\.X -> b\.Y -> a\.X"):
        resolve_variables(config, a)


def test_a_missing_variable_is_a_configuration_error() -> None:
    config = EnvironmentConfig(
        EnvironmentSpec("staging"),
        (ServiceSpec("a", IMAGE, variables=(("X", "${{ b.NOPE }}"),)), ServiceSpec("b", IMAGE)),
    )
    a = config.service("a")
    assert a is not None

    with pytest.raises(
        ConfigurationError, match=r"\$\{\{ b\.NOPE \}\} names a variable that does not exist"
    ):
        resolve_variables(config, a)


def test_merge_literals_joins_neighbours_and_drops_empty_text() -> None:
    ref = Reference(RefKind.SECRET, "S")

    assert merge_literals(
        [Literal("a"), Literal(""), Literal("b"), ref, Literal("c"), Literal("d")]
    ) == (
        Literal("ab"),
        ref,
        Literal("cd"),
    )
