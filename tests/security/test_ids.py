"""Ids are ASCII digits, everywhere they are read: the command line, the API's paths and
bodies, release names. ``'²'.isdigit()`` is true and ``int('²')`` fails (it was a traceback or
a 500); ``int('\\u0661')`` is 1, which named another row. Each such id names nothing, says so in
one line, and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security.acting import Acting, build

OTHER_DIGITS = ["\u00b2", "\u0661", "\uff11", "1\u00b2"]  # superscript, Arabic-Indic, fullwidth


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("ids")
    for nebula in nebula_with(tmp):
        for built in build(nebula, GitRepo(tmp / "repo", bare=False)):
            nebula.ok("freeze add --days sun --from 00:00 --to 01:00 --tz UTC")  # freeze 1
            yield built


def _counts(acting: Acting) -> tuple[int, ...]:
    with acting.nebula.ctx.db.transaction() as session:
        return tuple(
            session.query(table).count()
            for table in (schema.Event, schema.Deployment, schema.Approval, schema.FreezeWindowRow)
        )


@pytest.mark.parametrize("digits", OTHER_DIGITS)
@pytest.mark.parametrize(
    ("command", "what"),
    [
        ("deployment show {}", "deployment"),
        ("changeset show {}", "change set"),
        ("approve {} --as olga", "approval"),
        ("reject {} --as olga", "approval"),
        ("cancel {} --as olga", "deployment"),
        ("freeze remove {}", "freeze window"),
    ],
)
def test_the_cli_refuses_ids_of_other_digits_in_one_line(
    acting: Acting, command: str, what: str, digits: str
) -> None:
    before = _counts(acting)
    result = acting.nebula.cli(*command.format(digits).split(" "))
    assert (result.code, result.out) == (1, "")
    assert result.err == f"error: No {what} {digits!r}: {what} ids are numbers\n"
    assert _counts(acting) == before


@pytest.mark.parametrize("digits", OTHER_DIGITS)
def test_a_release_name_of_other_digits_names_no_release(acting: Acting, digits: str) -> None:
    before = _counts(acting)
    result = acting.nebula.cli(
        "rollback", "shop", "api", "--env", "staging", "--to", f"r-{digits}", "--as", "bob"
    )
    assert (result.code, result.err) == (
        1,
        f"error: api in staging has no release r-{digits}\nhint: releases to roll back to: r-1\n",
    )
    answer = acting.post(
        "/api/v1/projects/shop/services/api/rollback",
        "bob",
        json={"environment": "staging", "to": f"r-{digits}"},
    )
    assert answer.status_code == 422, answer.text  # the API's body says what a name looks like
    assert answer.json()["error"] == "body.to: String should match pattern '^r-[0-9]{1,9}$'"
    assert _counts(acting) == before


@pytest.mark.parametrize("digits", OTHER_DIGITS)
@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("/api/v1/deployments/{}/cancel", "deployment"),
        ("/api/v1/approvals/{}/approve", "approval"),
        ("/api/v1/approvals/{}/reject", "approval"),
    ],
)
def test_the_api_answers_404_for_ids_of_other_digits(
    acting: Acting, path: str, what: str, digits: str
) -> None:
    before = _counts(acting)
    answer = acting.post(path.format(digits), "olga")
    assert answer.status_code == 404
    assert answer.json() == {
        "code": "not-found",
        "error": f"No {what} {digits!r}: {what} ids are numbers",
        "hint": None,
    }
    assert acting.http.get(f"/api/v1/{what.replace(' ', '')}s/{digits}").status_code == 404
    assert _counts(acting) == before
