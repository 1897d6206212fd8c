"""From git to change sets: polls against real repositories (local, file:// and git daemon)."""

from __future__ import annotations

import pytest

from tests.gitops.shop import BASE, shop, with_log_level
from tests.plugins.git import GitRepo, GitRepoFactory
from tests.plugins.nebula import Nebula


def add(nebula: Nebula, repo_url: str, slug: str = "shop") -> None:
    """Registered unchecked: what a poll meets is the point (tests/cli/test_safer_admin.py)."""
    nebula.ok(f"project add {slug} --repo {repo_url} --no-check")


def add_shop(nebula: Nebula, git_repo: GitRepo) -> None:
    """The shop's first version pushed and the project registered (not polled yet)."""
    git_repo.commit({"nebula.toml": BASE})
    add(nebula, git_repo.url)


def test_first_poll_stages_every_unit_as_a_first_deploy(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    sha = git_repo.commit({"nebula.toml": BASE}, "First version")
    add(nebula, git_repo.url)
    nebula.reconcile()
    changesets = nebula.changesets()
    assert [(c["environment"], c["state"]) for c in changesets] == [
        ("staging", "applied"),
        ("production", "pending-approval"),
    ]
    staging = changesets[0]
    assert staging["commit"] == sha
    assert staging["owner"] == "shop"
    assert staging["message"] == "First version"
    assert staging["author"] == "Ada Lovelace <ada@example.com>"
    assert [(line["service"], line["field"], line["before"]) for line in staging["lines"]] == [
        ("db", "first_deploy", None),
        ("api", "first_deploy", None),
        ("worker", "first_deploy", None),
    ]
    assert staging["lines"][1]["after"].startswith("registry.example.com/shop/api@sha256:")


def test_a_variable_change_stages_exactly_one_line(nebula: Nebula, git_repo: GitRepo) -> None:
    add_shop(nebula, git_repo)
    nebula.settle()
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "More logs")
    nebula.reconcile()
    latest = [c for c in nebula.changesets() if c["environment"] == "staging"][-1]
    assert latest["message"] == "More logs"
    assert latest["lines"] == [
        {
            "service": "api",
            "kind": "variable-set",
            "field": "variables.LOG_LEVEL",
            "before": "info",
            "after": "debug",
            "via": None,
            "drifted": False,
        }
    ]


def test_an_unchanged_head_is_not_fetched_and_stages_nothing(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    nebula.reconcile()
    assert nebula.ctx.git is not None
    fetches, calls = nebula.ctx.git.fetches, nebula.ctx.git.remote_calls
    count = len(nebula.changesets())
    nebula.reconcile()
    nebula.reconcile()
    assert nebula.ctx.git.fetches == fetches
    assert nebula.ctx.git.remote_calls == calls + 2
    assert len(nebula.changesets()) == count


def test_two_projects_on_one_repository_cost_one_remote_call(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    add(nebula, git_repo.url, "shop-copy")
    assert nebula.ctx.git is not None
    before = nebula.ctx.git.remote_calls
    report = nebula.reconcile()
    assert report.poll.polled == 2
    assert nebula.ctx.git.remote_calls == before + 1
    assert {c["project"] for c in nebula.json("changesets")["changesets"]} == {"shop", "shop-copy"}


def test_a_force_push_is_followed(nebula: Nebula, git_repo: GitRepo) -> None:
    add_shop(nebula, git_repo)
    nebula.settle()
    rewritten = git_repo.rewrite({"nebula.toml": with_log_level("warn")}, "Squashed history")
    nebula.reconcile()
    assert nebula.status()["commit"] == rewritten
    latest = [c for c in nebula.changesets() if c["environment"] == "staging"][-1]
    assert latest["commit"] == rewritten
    assert [(line["field"], line["after"]) for line in latest["lines"]] == [
        ("variables.LOG_LEVEL", "warn")
    ]


def test_a_deleted_branch_blocks_delivery_and_environments_keep_serving(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    nebula.settle()
    git_repo.commit({"nebula.toml": BASE}, branch="other")
    git_repo.delete_branch("main")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "delivery"
    assert status["message"] == (
        "Branch main does not exist in the repository; environments keep serving"
    )
    assert nebula.unit("staging", "api")["active_release"] == "r-1"


def test_an_unreachable_remote_blocks_delivery_until_it_is_back(
    nebula: Nebula, git_repos: GitRepoFactory, git_daemon: object
) -> None:
    repo = git_repos.served("shop")
    repo.commit({"nebula.toml": BASE})
    url = repo.git_url
    port = url.split(":")[2].split("/")[0]
    add(nebula, url.replace(f":{port}/", ":9/"))  # nothing listens on port 9
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "delivery"
    assert status["message"].endswith(". Environments keep serving.")
    assert ":9/" in status["message"]
    assert nebula.changesets() == []
    nebula.ok(f"project set shop repo {url}")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] is None
    assert len(nebula.changesets()) == 2


def test_an_invalid_file_blocks_configuration_then_a_fixed_push_clears_it(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    nebula.settle()
    count = len(nebula.changesets())
    bad = git_repo.commit({"nebula.toml": BASE.replace("port = 8080", 'port = "eighty"')}, "Oops")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "configuration"
    assert status["blocker_commit"] == bad
    assert status["message"] == (
        f"nebula.toml at {bad[:7]} is invalid: nebula.toml:15:8: "
        "services.api.processes.web.port must be an integer, not a string. "
        "Nothing was staged; environments keep serving."
    )
    assert len(nebula.changesets()) == count
    assert nebula.unit("staging", "api")["active_release"] == "r-1"
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "Fixed")
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] is None
    assert len(nebula.changesets()) == count + 2


def test_a_missing_file_blocks_configuration(nebula: Nebula, git_repo: GitRepo) -> None:
    sha = git_repo.commit({"README.md": "no nebula.toml here"})
    add(nebula, git_repo.url)
    nebula.reconcile()
    status = nebula.status()
    assert status["blocker"] == "configuration"
    assert status["message"] == (
        f"nebula.toml is missing at {sha[:7]}; nothing was staged and environments keep serving"
    )


def test_polling_through_git_daemon(
    nebula: Nebula, git_repos: GitRepoFactory, git_daemon: object
) -> None:
    repo = git_repos.served("over-daemon")
    sha = repo.commit({"nebula.toml": BASE})
    add(nebula, repo.git_url)
    nebula.reconcile()
    assert nebula.status()["commit"] == sha
    assert len(nebula.changesets()) == 2


def test_a_newer_push_replaces_the_older_unapplied_change_set(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    nebula.reconcile()
    first_prod = next(c for c in nebula.changesets() if c["environment"] == "production")
    assert first_prod["state"] == "pending-approval"
    newer = git_repo.commit({"nebula.toml": with_log_level("debug")}, "Newer")
    nebula.reconcile()
    prods = [c for c in nebula.changesets() if c["environment"] == "production"]
    old = next(c for c in prods if c["id"] == first_prod["id"])
    assert old["state"] == "discarded"
    assert old["note"] == f"Replaced by the change set from {newer[:7]}"
    assert old["message"] == old["note"], "the outcome is the change set's message"
    assert old["commit_message"] != old["note"]
    approval = next(a for a in nebula.approvals() if a["target_id"] == first_prod["id"])
    assert approval["state"] == "cancelled"
    # The newer change set is diffed against the last *applied* file: still first deploys.
    assert prods[-1]["state"] == "pending-approval"
    assert {line["field"] for line in prods[-1]["lines"]} == {"first_deploy"}
    assert all(
        d["state"] == "cancelled"
        for d in nebula.deployments()
        if d["environment"] == "production" and d["changeset_id"] == first_prod["id"]
    )


def test_removing_a_service_stages_a_removal_and_tears_it_down(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    add_shop(nebula, git_repo)
    nebula.settle()
    without_worker = BASE.split("[services.worker]")[0]
    git_repo.commit({"nebula.toml": without_worker}, "Retire the worker")
    nebula.reconcile()
    latest = [c for c in nebula.changesets() if c["environment"] == "staging"][-1]
    assert [(line["service"], line["kind"], line["after"]) for line in latest["lines"]] == [
        ("worker", "removal", None)
    ]
    nebula.settle()
    services = {
        u["name"]
        for e in nebula.status()["environments"]
        if e["name"] == "staging"
        for u in e["services"]
    }
    assert services == {"db", "api"}
    cluster = nebula.ctx.clusters.simulated()
    assert not [
        o
        for o in cluster.objects("shop-staging")
        if o["metadata"]["labels"].get("nebula.dev/service") == "worker"
    ]


@pytest.mark.parametrize("auto_deploy", ["false"])
def test_auto_deploy_false_keeps_the_change_set_as_a_draft(
    nebula: Nebula, git_repo: GitRepo, auto_deploy: str
) -> None:
    git_repo.commit(
        {
            "nebula.toml": shop(
                **{"[services.api]\n": f"[services.api]\nauto_deploy = {auto_deploy}\n"}
            )
        }
    )
    add(nebula, git_repo.url)
    nebula.reconcile()
    staging = next(c for c in nebula.changesets() if c["environment"] == "staging")
    assert staging["state"] == "draft"
    assert staging["note"] == (
        f"Draft: api has auto_deploy = false; apply it with: nebula changeset apply {staging['id']}"
    )
    assert [d for d in nebula.deployments() if d["environment"] == "staging"] == []
    applied = nebula.ok(f"changeset apply {staging['id']} --json").json
    assert applied["changeset"]["state"] == "applied"
    assert [d["service"] for d in applied["deployments"]] == ["db", "api", "worker"]
