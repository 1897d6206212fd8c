"""One mistake, one error: a misspelt key is reported as the typo it is, never also as the
required key it was meant to be, nor by the checks that depend on that key's value."""

from __future__ import annotations

import pytest

from fixtures import loading
from reconciler.model.problems import Code
from tests.model import samples

EVERY_PROCESS = loading.project("every-process")


def test_a_misspelt_type_in_every_process_gives_one_error_each() -> None:
    text = EVERY_PROCESS.replace("\ntype = ", "\ntyp = ")
    found = samples.problems(text)
    assert [samples.shown(p) for p in found] == [
        "18:1: unknown key 'typ' in [services.search.processes.web]",
        "31:1: unknown key 'typ' in [services.api.processes.web]",
        "40:1: unknown key 'typ' in [services.api.processes.worker]",
        "46:1: unknown key 'typ' in [services.api.processes.nightly]",
        "51:1: unknown key 'typ' in [services.api.processes.backfill]",
    ]
    assert {p.code for p in found} == {Code.UNKNOWN_KEY}
    assert all(p.hint.startswith("did you mean 'type'? allowed here: type, ") for p in found)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # A missing type is one error too: not also "readiness_path applies to http only".
        (
            {'type = "http"\ncommand': "command"},
            "30:25: [services.api.processes.web] is missing the required key 'type'",
        ),
        # An invalid type: its own error, not also what a worker may not have.
        (
            {'type = "http"\ncommand': 'type = "htp"\ncommand'},
            "31:8: services.api.processes.web"
            ".type is 'htp', which is not one of: http, worker, cron, job",
        ),
        (
            {'type = "cron"': 'typ = "cron"'},
            "46:1: unknown key 'typ' in [services.api.processes.nightly]",
        ),
        (
            {"port = 8080": "prot = 8080"},
            "33:1: unknown key 'prot' in [services.api.processes.web]",
        ),
        (
            {'schedule = "0 3': 'schedul = "0 3'},
            "47:1: unknown key 'schedul' in [services.api.processes.nightly]",
        ),
        (
            {'image = "registry.example.com/shop/api': 'imag = "registry.example.com/shop/api'},
            "26:1: unknown key 'imag' in [services.api]",
        ),
    ],
)
def test_one_typo_is_one_error(edit: dict[str, str], expected: str) -> None:
    text = EVERY_PROCESS
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new, 1)
    assert samples.messages(text) == [expected]


def test_an_unknown_key_beside_the_key_it_resembles_is_still_reported_with_the_missing_one() -> (
    None
):
    """``typ`` next to a present ``type`` is a stray key; a required key that is absent with no
    near miss is still missing."""
    text = EVERY_PROCESS.replace('type = "job"', 'typ = "job"\ntype = "job"')
    assert samples.messages(text) == [
        "51:1: unknown key 'typ' in [services.api.processes.backfill]"
    ]
    text = EVERY_PROCESS.replace('type = "job"', 'colour = "job"')
    assert samples.messages(text) == [
        "50:25: [services.api.processes.backfill] is missing the required key 'type'",
        "51:1: unknown key 'colour' in [services.api.processes.backfill]",
    ]
