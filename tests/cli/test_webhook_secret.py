"""``nebula project set SLUG webhook_secret``: the secret from stdin or a prompt, not the
command line (which still works, with a warning); ``project list`` warns about projects that
take unsigned push notifications."""

from __future__ import annotations

import io

import pytest

from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

SECRET = "hook-secret-5e1b"
UNSIGNED_WARNING = (
    "warning: shop accepts push notifications from anyone: no webhook secret\n"
    "hint: nebula project set shop webhook_secret (reads it from stdin)\n"
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    return nebula


def _stored(nebula: Nebula) -> str | None:
    with nebula.ctx.db.transaction() as session:
        project = session.query(schema.Project).filter_by(slug="shop").one()
        secret = project.webhook_secret
    return nebula.ctx.vault.decrypt(secret) if secret is not None else None


def test_the_secret_is_read_from_stdin(shop: Nebula, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))

    result = shop.ok("project set shop webhook_secret")

    assert (result.out, result.err) == ("shop: webhook_secret = ***\n", "")
    assert _stored(shop) == SECRET


def test_on_a_terminal_it_is_asked_for_without_echo(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []
    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or SECRET)

    result = shop.ok("project set shop webhook_secret")

    assert prompts == ["Webhook secret for shop: "]
    assert result.out == "shop: webhook_secret = ***\n"
    assert _stored(shop) == SECRET


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("project set shop webhook_secret", "error: no webhook secret given"),
        ("secret set shop staging STRIPE_KEY", "error: no secret value given"),
    ],
)
def test_ctrl_d_at_the_prompt_is_one_error_line(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch, command: str, error: str
) -> None:
    def ended(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("getpass.getpass", ended)

    result = shop.cli(command)

    assert (result.code, result.err.splitlines()[0]) == (1, error)
    assert "Traceback" not in result.err
    assert _stored(shop) is None


def test_on_the_command_line_it_works_with_a_warning(shop: Nebula) -> None:
    result = shop.ok(f"project set shop webhook_secret {SECRET}")

    assert result.out == "shop: webhook_secret = ***\n"
    assert result.err == (
        "warning: a secret on the command line may be kept in your shell history\n"
        "hint: next time leave it out: nebula project set shop webhook_secret\n"
    )
    assert _stored(shop) == SECRET


def test_nothing_on_stdin_is_refused(shop: Nebula, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    result = shop.cli("project set shop webhook_secret")

    assert result.code == 1
    assert result.err == (
        "error: no webhook secret given\n"
        'hint: printf %s "$SECRET" | nebula project set shop webhook_secret '
        '(to remove it: nebula project set shop webhook_secret "")\n'
    )
    assert _stored(shop) is None


def test_an_empty_value_removes_the_secret(shop: Nebula) -> None:
    shop.ok(f"project set shop webhook_secret {SECRET}")

    result = shop.ok('project set shop webhook_secret ""')

    assert (result.out, result.err) == (
        "shop: webhook_secret = (none: unsigned notifications are accepted)\n",
        "",
    )
    assert _stored(shop) is None


def test_other_settings_still_need_a_value(shop: Nebula) -> None:
    result = shop.cli("project set shop interval")

    assert (result.code, result.err) == (
        1,
        "error: no value for interval\nhint: nebula project set shop interval VALUE\n",
    )


def test_project_list_warns_about_projects_without_a_secret(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    unsigned = shop.ok("project list")
    assert unsigned.err == UNSIGNED_WARNING
    assert shop.json("project list")["projects"][0]["webhook_signed"] is False

    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET))
    shop.ok("project set shop webhook_secret")
    signed = shop.ok("project list")

    assert signed.err == ""
    assert shop.json("project list")["projects"][0]["webhook_signed"] is True


def test_the_unsigned_webhook_limit_is_a_duration(shop: Nebula) -> None:
    assert shop.ok("project set shop webhook_limit 1m").out == "shop: webhook_limit = 1m\n"
    assert shop.json("project list")["projects"][0]["webhook_limit"] == 60
    shop.ok("project set shop webhook_limit off")
    assert shop.json("project list")["projects"][0]["webhook_limit"] is None
    refused = shop.cli("project set shop webhook_limit soon")
    assert refused.code == 1
    assert refused.err.startswith("error: webhook_limit: 'soon' is not a duration\n")
