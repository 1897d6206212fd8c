"""Registering a project refuses what git or the repository would refuse later: a branch name
git does not allow (``git check-ref-format --branch``, no leading ``-``), a path that is not a
file inside the repository. Each refusal is one line naming the value, and a hint."""

from __future__ import annotations

import pytest

from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

BRANCH_HINT = "hint: give a branch name as git allows it, e.g. main or release/2.0\n"
PATH_HINT = (
    "hint: give a path relative to the repository's root, e.g. nebula.toml or deploy/nebula.toml\n"
)


@pytest.mark.parametrize(
    ("branch", "why"),
    [
        ("../../x", "it holds '..'"),
        ("*", "it holds '*'"),
        ("--upload-pack=touch /tmp/pwned", "it starts with '-'"),
        ("-x", "it starts with '-'"),
        ("main branch", "it holds ' '"),
        ("feature/", "it starts or ends with '/', or has an empty part between two '/'"),
        ("a//b", "it starts or ends with '/', or has an empty part between two '/'"),
        ("v1.", "it ends with '.'"),
        ("x.lock", "its part 'x.lock' ends with '.lock'"),
        ("team/.hidden", "its part '.hidden' starts with '.'"),
        ("a@{1}", "it holds '@{'"),
        ("@", "'@' is not a branch name git allows"),
        ("HEAD", "'HEAD' is not a branch name git allows"),
        ("what?", "it holds '?'"),
        ("a:b", "it holds ':'"),
        ("a\\b", "it holds '\\\\'"),
        ("main\n", "it holds a control character"),
        ("", "it is empty"),
    ],
)
def test_a_branch_git_would_refuse_is_refused_at_registration(
    nebula: Nebula, branch: str, why: str
) -> None:
    result = nebula.cli("project", "add", "shop", "--repo", "/srv/shop", f"--branch={branch}")
    assert (result.code, result.out) == (1, "")
    assert result.err == f"error: {branch!r} cannot be the tracked branch: {why}\n{BRANCH_HINT}"
    assert nebula.json("project list")["projects"] == []


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../../etc/passwd", "it leaves the repository ('..')"),
        ("deploy/../../x.toml", "it leaves the repository ('..')"),
        ("/etc/passwd", "it is absolute (it must be relative to the repository's root)"),
        ("deploy\\nebula.toml", "it holds '\\\\' (paths in git are written with '/')"),
        ("deploy/", "it names a directory, not a file"),
        (".git/config", "it points into .git"),
        ("nebula.toml\n", "it holds a control character"),
        ("  ", "it is empty"),
    ],
)
def test_a_path_outside_the_repository_is_refused_at_registration(
    nebula: Nebula, path: str, why: str
) -> None:
    result = nebula.cli("project", "add", "shop", "--repo", "/srv/shop", "--path", path)
    assert (result.code, result.out) == (1, "")
    assert result.err == f"error: {path!r} cannot be the path of nebula.toml: {why}\n{PATH_HINT}"


@pytest.mark.parametrize(
    ("branch", "path", "stored_path"),
    [
        ("main", "nebula.toml", "nebula.toml"),
        ("release/2.0", "deploy/nebula.toml", "deploy/nebula.toml"),
        ("feature/JIRA-12_x", "./deploy//prod.toml", "deploy/prod.toml"),
        ("v1.2.3", "a b/nebula.toml", "a b/nebula.toml"),
    ],
)
def test_names_git_allows_are_taken(
    nebula: Nebula, branch: str, path: str, stored_path: str
) -> None:
    argv = ["project", "add", "shop", "--repo", "/srv/shop", "--branch", branch, "--path", path]
    nebula.ok(*argv, "--no-check")
    (project,) = nebula.json("project list")["projects"]
    assert (project["branch"], project["path"]) == (branch, stored_path)


def test_project_set_checks_the_branch_and_the_path_the_same_way(nebula: Nebula) -> None:
    nebula.ok("project add shop --repo /srv/shop --no-check")
    refused = nebula.cli("project", "set", "shop", "branch", "--", "--upload-pack=x")
    assert refused.err == (
        "error: '--upload-pack=x' cannot be the tracked branch: it starts with '-'\n" + BRANCH_HINT
    )
    refused = nebula.cli("project", "set", "shop", "path", "/etc/passwd")
    assert refused.err.startswith("error: '/etc/passwd' cannot be the path of nebula.toml")
    (project,) = nebula.json("project list")["projects"]
    assert (project["branch"], project["path"]) == ("main", "nebula.toml")


def test_a_slug_with_a_newline_is_refused_on_one_line(nebula: Nebula) -> None:
    result = nebula.cli("project", "add", "shop\n", "--repo", "/srv/shop")
    assert result.code == 1
    assert result.err.splitlines()[0] == "error: 'shop\\n' is not a valid project slug"
    assert len(result.err.splitlines()) == 2  # the error and its hint


@pytest.mark.parametrize(
    ("repo", "said"),
    [
        ("--upload-pack=touch /tmp/pwned", "a repository URL cannot start with '-'"),
        ("ext::sh -c touch% /tmp/pwned", "names a git remote helper ('ext::')"),
        ("fd::17", "names a git remote helper ('fd::')"),
        ("/dev/zero", "/dev/zero is not a directory"),
        ("ssh://-oProxyCommand=touch%20x/repo", "has a part that starts with '-'"),
        ("git@-oProxyCommand=x:repo", "has a part that starts with '-'"),
        ("ftp://example.com/x.git", "uses the unsupported scheme 'ftp'"),
    ],
)
def test_a_repository_url_git_would_misread_is_refused_at_registration(
    nebula: Nebula, repo: str, said: str
) -> None:
    refused = nebula.cli("project", "add", "shop", "--repo", repo)
    assert refused.code == 1
    first, hint = refused.err.splitlines()
    assert first.startswith("error: ") and said in first
    assert hint == (
        "hint: use an absolute path, file://, git://, http(s):// or ssh:// (or user@host:path), "
        "with no part that starts with '-'"
    )
    assert nebula.json("project list")["projects"] == []
    nebula.ok("project add shop --repo /srv/shop --no-check")
    again = nebula.cli("project", "set", "shop", "repo", repo)
    assert again.code == 1 and said in again.err


def test_a_relative_path_is_the_directory_here_in_local_mode(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repo ./shop`` names the directory the command runs in (a server refuses one: its
    working directory is nobody's business, tests/cli/test_remote.py)."""
    git_repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    monkeypatch.chdir(git_repo.path.parent)
    relative = f"./{git_repo.path.name}"
    said = nebula.ok(f"project add shop --repo {relative}").out
    assert said.startswith(f"project shop watches {git_repo.path.resolve()} (main")
    nebula.ok(f"project set shop repo {git_repo.path.name}")
    (project,) = nebula.json("project list")["projects"]
    assert project["repo"] == str(git_repo.path.resolve())


@pytest.mark.parametrize(
    "repo",
    ["https://git.example.com/-org/shop.git", "git@[::1]:shop.git", "git@github.com:org/shop.git",
     "ssh://git@git.example.com:2222/org/shop.git"],
)  # fmt: skip
def test_what_git_reads_as_no_option_is_registered(nebula: Nebula, repo: str) -> None:
    """Only ssh hands a URL's parts to a command line: an https path may start with '-', and
    an IPv6 host is no remote helper."""
    assert nebula.cli("project", "add", "shop", "--repo", repo, "--no-check").code == 0
