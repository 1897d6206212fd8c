"""Environment settings (nebula-toml.md "Environment settings (version 1.1)"): protection, the
promotion gate and self-heal, read with their defaults; each bad value is reported where it
was written (the errors with a fixture each are in fixtures/invalid)."""

from __future__ import annotations

from reconciler.model.specs import EnvironmentSpec
from tests.model import samples

GATED = """
[environments.staging]

[environments.production]
protected = true
promote_from = "staging"
soak = "1h30m"
self_heal = true
""" + samples.service("api")


def test_the_settings_are_read_with_their_defaults() -> None:
    project = samples.valid(GATED)
    assert project.environments == (
        EnvironmentSpec("staging"),
        EnvironmentSpec("production", True, "staging", 5400, True),
    )


def test_a_gate_of_an_environment_that_promotes_from_a_gated_one_is_not_a_cycle() -> None:
    text = GATED.replace(
        "[environments.staging]\n",
        '[environments.dev]\n\n[environments.staging]\npromote_from = "dev"\n',
    )
    project = samples.valid(text)
    assert [e.promote_from for e in project.environments] == [None, "dev", "staging"]


def test_wrong_types_are_reported_at_their_key() -> None:
    text = GATED.replace('soak = "1h30m"', "soak = 30").replace(
        "self_heal = true", 'self_heal = "yes"'
    )
    assert samples.messages(text) == [
        "7:8: environments.production.soak must be a string, not an integer",
        "8:13: environments.production.self_heal must be true or false, not a string",
    ]


def test_a_bad_promote_from_with_a_soak_is_one_error_not_two() -> None:
    """The soak has a promote_from: the one problem is where it points."""
    unknown = GATED.replace('promote_from = "staging"', 'promote_from = "stagin"')
    itself = GATED.replace('promote_from = "staging"', 'promote_from = "production"')
    assert samples.messages(unknown) == [
        "6:16: promote_from names 'stagin', which is not an environment of this file"
    ]
    assert samples.messages(itself) == ["6:16: environment 'production' cannot promote from itself"]
