"""Safer administration (issue 29): ``project add`` asks the repository for its branches before
registering it (``--no-check`` skips that), and ``project remove`` asks for the slug to be typed
on a terminal, refuses without ``--yes`` elsewhere. Through both doors of the command line:
the check runs where the project is registered (the server, remotely).

Real repositories made with pygit2; olga is an owner."""

from __future__ import annotations

import io

import pytest

from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo, GitRepoFactory
from tests.plugins.nebula import Nebula

SKIP = "or register it anyway with --no-check"
UNREACHABLE_HINT = (
    f"hint: check the URL (and its host's credentials in NEBULA_GIT_CREDENTIALS), {SKIP}\n"
)


class Terminal(io.StringIO):
    """Standard input as a person at a terminal: what they will type."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def org(door: Door) -> Door:
    with door.nebula.ctx.db.transaction() as session:
        people.member(session, door.nebula.clock, "olga", "owner")
    return door


def _slugs(nebula: Nebula) -> list[str]:
    return [p["slug"] for p in nebula.json("project list")["projects"]]


def test_a_repository_that_is_not_there_is_not_registered(org: Door, git_repo: GitRepo) -> None:
    missing = git_repo.path.parent / "nowhere"
    refused = org.act("olga", f"project add shop --repo {missing}")
    assert (refused.code, refused.out, refused.err) == (
        1,
        "",
        f"error: Could not list the branches of {missing}: no repository at that path.\n"
        + UNREACHABLE_HINT,
    )
    assert _slugs(org.nebula) == []


def test_a_branch_the_repository_does_not_have_is_not_registered(
    org: Door, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    refused = org.act("olga", f"project add shop --repo {git_repo.url} --branch mian")
    assert (refused.code, refused.err) == (
        1,
        f"error: {git_repo.url} has no branch 'mian'\n"
        f"hint: did you mean 'main'? its branches: main (or push mian first, {SKIP})\n",
    )
    assert _slugs(org.nebula) == []


def test_an_empty_repository_has_no_branch_to_watch(org: Door, git_repo: GitRepo) -> None:
    refused = org.act("olga", f"project add shop --repo {git_repo.url}")
    assert (refused.code, refused.err) == (
        1,
        f"error: {git_repo.url} has no branch 'main'\n"
        f"hint: it has no branch yet (or push main first, {SKIP})\n",
    )


def test_no_check_registers_it_all_the_same(org: Door, git_repo: GitRepo) -> None:
    added = org.act("olga", f"project add shop --repo {git_repo.url} --branch next --no-check")
    assert (added.code, added.out) == (
        0,
        f"project shop watches {git_repo.url} (next, nebula.toml)\n",
    )
    assert _slugs(org.nebula) == ["shop"]


def test_what_is_refused_anyway_is_said_before_the_repository_is_asked(
    org: Door, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    assert org.act("olga", f"project add shop --repo {git_repo.url}").code == 0
    calls = org.nebula.ctx.git.remote_calls if org.nebula.ctx.git else None
    again = org.act("olga", f"project add shop --repo {git_repo.url}")
    assert (again.code, again.err) == (1, "error: A project named 'shop' already exists\n")
    assert (org.nebula.ctx.git.remote_calls if org.nebula.ctx.git else None) == calls


def test_missing_credentials_are_said_at_registration(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    served = git_repos.served("shop")
    served.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    refused = nebula.cli(f"project add shop --repo {served.http_url}")
    assert refused.code == 1
    assert refused.err == (
        f"error: {served.http_url} asks for credentials and none are configured for "
        f"{served.http_url.split('/')[2]}; add host=token to NEBULA_GIT_CREDENTIALS.\n"
        + UNREACHABLE_HINT
    )
    assert nebula.json("project list")["projects"] == []


# -- removing ---------------------------------------------------------------------------


@pytest.fixture
def shop(org: Door, git_repo: GitRepo) -> Door:
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    org.nebula.ok(f"project add shop --repo {git_repo.url}")
    org.nebula.settle()
    return org


def test_remove_without_a_terminal_wants_yes(shop: Door, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("shop\n"))  # a pipe, even one saying the slug
    refused = shop.act("olga", "project remove shop")
    assert (refused.code, refused.out, refused.err) == (
        2,
        "",
        "error: not removing shop without confirmation: it tears down every environment of the "
        "project, and there is no terminal to confirm on\n"
        "hint: in a script: nebula project remove shop --yes\n",
    )
    assert _slugs(shop.nebula) == ["shop"]
    removed = shop.act("olga", "project remove shop --yes")
    assert (removed.code, removed.out) == (0, "project shop torn down and removed\n")
    assert _slugs(shop.nebula) == []


def test_remove_on_a_terminal_asks_for_the_slug(
    shop: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal("sho\n"))
    refused = shop.act("olga", "project remove shop")
    assert (refused.code, refused.out, refused.err) == (
        1,
        "",
        "This tears down every environment of shop and forgets the project.\n"
        "Type shop to confirm: error: project shop not removed: 'sho' is not shop\n",
    )
    assert _slugs(shop.nebula) == ["shop"]
    monkeypatch.setattr("sys.stdin", Terminal(""))  # Ctrl-D
    refused = shop.act("olga", "project remove shop")
    assert refused.err.endswith("error: project shop not removed: nothing was typed\n")
    assert _slugs(shop.nebula) == ["shop"]
    monkeypatch.setattr("sys.stdin", Terminal("shop\n"))
    removed = shop.act("olga", "project remove shop")
    assert (removed.code, removed.out) == (0, "project shop torn down and removed\n")
    assert _slugs(shop.nebula) == []


def test_an_unknown_project_is_said_before_anything_is_asked(
    shop: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal("shopp\n"))
    refused = shop.act("olga", "project remove shopp")
    assert (refused.code, refused.err) == (
        1,
        "error: No project named 'shopp'\nhint: did you mean 'shop'? projects: shop\n",
    )
