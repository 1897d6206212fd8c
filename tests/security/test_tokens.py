"""API tokens: shown once, stored only as a hash, compared in constant time, and refused the
same way whatever is wrong with them (so a refusal tells nothing about which tokens exist)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from reconciler.admin import tokens
from reconciler.errors import UnauthorizedError
from reconciler.store import schema
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, nebula_with
from tests.security.acting import Acting, build


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("tokens")
    for nebula in nebula_with(tmp):
        yield from build(nebula, GitRepo(tmp / "repo", bare=False))


def _rows(nebula: Nebula) -> list[dict[str, Any]]:
    with nebula.ctx.db.engine.connect() as connection:
        result = connection.execute(text("SELECT * FROM api_tokens"))
        return [dict(r) for r in result.mappings()]


def _authenticate(nebula: Nebula, token: str | None) -> str:
    with nebula.ctx.db.transaction() as session:
        return people.bearer(session, nebula.clock, token)


def _tampered(token: str) -> str:
    """The same prefix, the last character of the secret part changed."""
    return token[:-1] + ("A" if token[-1] != "A" else "B")


def test_the_store_keeps_a_hash_of_each_token_never_the_token(acting: Acting) -> None:
    rows = _rows(acting.nebula)
    assert len(rows) == len(acting.tokens)
    for token in acting.tokens.values():
        secret_part = token.split("_", 2)[2]
        (row,) = [r for r in rows if token.startswith(f"nbl_{r['prefix']}_")]
        assert row["digest"] == hashlib.sha256(token.encode()).hexdigest()
        for value in row.values():
            assert token not in str(value) and secret_part not in str(value)


def test_a_token_is_shown_once_and_never_again(acting: Acting) -> None:
    created = acting.nebula.ok("token create --as bob")
    token = created.out.strip()
    assert token.startswith("nbl_")
    assert created.err.endswith(" for bob is shown once; store it now.\n")
    assert _authenticate(acting.nebula, token) == "bob"
    for command in ("member list", "member list --json"):
        assert token.split("_", 2)[2] not in acting.nebula.ok(command).out


def test_the_right_token_names_its_member(acting: Acting) -> None:
    for name, token in acting.tokens.items():
        assert _authenticate(acting.nebula, token) == name
        assert _authenticate(acting.nebula, f"  {token}\n") == name


@pytest.mark.parametrize(
    "kind",
    ["tampered secret", "secret of another token", "unknown prefix", "malformed", "empty"],
)
def test_a_wrong_token_is_refused_as_any_other(acting: Acting, kind: str) -> None:
    alice, bob = acting.tokens["alice"], acting.tokens["bob"]
    wrong = {
        "tampered secret": _tampered(alice),
        "secret of another token": alice[:13] + bob[13:],
        "unknown prefix": "nbl_00000000_" + alice[13:],
        "malformed": "Bearer " + alice,
        "empty": "",
    }[kind]
    with pytest.raises(UnauthorizedError) as refused:
        _authenticate(acting.nebula, wrong)
    expected = "Missing bearer token" if kind == "empty" else "Invalid bearer token"
    assert refused.value.message == expected


def test_over_http_a_refusal_is_the_same_whatever_is_wrong(acting: Acting) -> None:
    """No oracle: a valid prefix with a wrong secret answers exactly as an unknown prefix."""
    alice = acting.tokens["alice"]
    path = "/api/v1/deployments/1/cancel"
    answers = {
        (r.status_code, r.text, r.headers.get("www-authenticate"))
        for r in (
            acting.http.post(path, headers={"Authorization": f"Bearer {token}"})
            for token in (_tampered(alice), "nbl_00000000_" + alice[13:], "nbl_x", "garbage")
        )
    }
    assert answers == {
        (401, '{"error":"Invalid bearer token","hint":null,"code":"unauthorized"}', "Bearer")
    }


def test_every_comparison_goes_through_compare_digest(
    acting: Acting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One constant-time comparison per check, whether or not the prefix exists (so timing
    does not tell which prefixes do), and never ``==`` on a digest."""
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    alice = acting.tokens["alice"]
    for token in (alice, _tampered(alice), "nbl_00000000_" + alice[13:], "nonsense"):
        calls.clear()
        with contextlib.suppress(UnauthorizedError):
            _authenticate(acting.nebula, token)
        assert len(calls) == 1, token
        assert all(len(a) == len(b) == 64 for a, b in calls), "digests, not tokens, are compared"
    source = inspect.getsource(tokens.verify)
    assert "compare_digest" in source
    assert ".digest ==" not in source and "== row.digest" not in source


def test_a_refused_token_is_not_marked_used(acting: Acting) -> None:
    alice = acting.tokens["alice"]
    with acting.nebula.ctx.db.transaction() as session:
        session.query(schema.ApiToken).update({schema.ApiToken.last_used_at: None})
    refused = acting.http.get("/api/v1/whoami", headers=acting.headers(_tampered(alice)))
    assert refused.status_code == 401
    assert all(r["last_used_at"] is None for r in _rows(acting.nebula))
    assert acting.http.get("/api/v1/whoami", headers=acting.headers("alice")).status_code == 200
    assert sum(r["last_used_at"] is not None for r in _rows(acting.nebula)) == 1
