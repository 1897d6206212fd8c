"""A server-side secret set to a new value stages a change set that redeploys the services
reading it (behaviour.md "Resolved values", issue 19), and its value is never shown."""

from __future__ import annotations

import json
import re

import httpx

from notifiers import gathering, messages
from reconciler.store import schema
from tests.gitops.chain import (
    SECRET_VALUE,
    chain,
    in_env,
    register,
    secret_on_cluster,
    set_secret,
)
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import ThreadedServer

NEW_VALUE = "sk_live_second_77c1"


def test_a_new_value_in_staging_redeploys_only_the_services_that_read_it(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    before = len(nebula.deployments())
    out = set_secret(nebula, "staging", NEW_VALUE, "--as", "ada").out

    staged = in_env(nebula.changesets())[-1]
    assert out == (
        f"secret STRIPE_KEY set for shop/staging\n  change set {staged['id']} applied: pay\n"
    )
    assert (staged["owner"], staged["commit"], staged["state"]) == ("ada", None, "applied")
    assert staged["message"] == "A new value of secret STRIPE_KEY"
    assert [
        (line["service"], line["field"], line["before"], line["after"]) for line in staged["lines"]
    ] == [("pay", "secret.STRIPE_KEY", None, None)]
    new = nebula.deployments()[before:]
    assert [(d["environment"], d["service"], d["release"]) for d in new] == [
        ("staging", "pay", "r-2")
    ]
    shown = nebula.ok(f"changeset show {staged['id']}").out
    assert re.search(r"^  pay +secret\.STRIPE_KEY +- +changed +- +-$", shown, re.M), shown
    nebula.settle()
    assert nebula.unit("staging", "pay")["active_release"] == "r-2"
    assert secret_on_cluster(nebula) == NEW_VALUE


def test_a_new_value_in_production_asks_for_one_approval(nebula: Nebula, git_repo: GitRepo) -> None:
    register(nebula, git_repo)
    first = in_env(nebula.approvals(), "production")[0]
    nebula.ok(f"approve {first['id']} --as bo")
    nebula.settle()
    set_secret(nebula, "production", NEW_VALUE, "--as", "ada")

    staged = in_env(nebula.changesets(), "production")[-1]
    assert (staged["state"], staged["owner"]) == ("pending-approval", "ada")
    pending = [a for a in nebula.approvals() if a["state"] == "pending"]
    assert [(a["target"], a["target_id"], a["requested_by"]) for a in pending] == [
        ("changeset", staged["id"], "ada")
    ]
    waiting = [d for d in nebula.deployments() if d["state"] == "awaiting-approval"]
    assert [(d["service"], d["release"]) for d in waiting] == [("pay", "r-2")]
    # ada set it, so someone else approves it (forbid_self_approval is on by default).
    nebula.ok(f"approve {pending[0]['id']} --as bo")
    nebula.settle()
    assert nebula.unit("production", "pay")["active_release"] == "r-2"
    assert secret_on_cluster(nebula, "production") == NEW_VALUE


def test_the_same_value_again_stages_nothing_and_a_newer_one_replaces_an_open_change_set(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    first = in_env(nebula.approvals(), "production")[0]
    nebula.ok(f"approve {first['id']} --as bo")
    nebula.settle()
    count = len(nebula.changesets())
    set_secret(nebula, "production", SECRET_VALUE, "--as", "ada")
    assert len(nebula.changesets()) == count

    set_secret(nebula, "production", NEW_VALUE, "--as", "ada")
    set_secret(nebula, "production", "sk_live_third_0b2e", "--as", "bo")
    older, newer = in_env(nebula.changesets(), "production")[-2:]
    assert (older["state"], older["note"]) == (
        "discarded",
        "Replaced by a newer value of STRIPE_KEY set by bo",
    )
    assert (newer["state"], newer["owner"]) == ("pending-approval", "bo")
    assert [a["state"] for a in nebula.approvals()][-2:] == ["cancelled", "pending"]


def test_a_missing_secret_releases_the_held_deployment_and_stages_nothing(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": chain()}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    held = nebula.unit("staging", "pay")["deployment"]
    assert held["blocker"] == "configuration"
    count = len(nebula.changesets())
    set_secret(nebula, "staging", SECRET_VALUE)
    assert len(nebula.changesets()) == count
    nebula.settle()
    assert nebula.unit("staging", "pay")["active_release"] == "r-1"


def test_auto_deploy_false_keeps_the_secret_change_a_draft(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    text = chain({"[services.pay]\n": "[services.pay]\nauto_deploy = false\n"})
    register(nebula, git_repo, text, healthy=False)
    for c in in_env(nebula.changesets()):
        nebula.ok(f"changeset apply {c['id']} --as ada")
    nebula.settle()
    set_secret(nebula, "staging", NEW_VALUE, "--as", "ada")
    staged = in_env(nebula.changesets())[-1]
    assert (staged["state"], staged["note"]) == (
        "draft",
        f"Draft: pay has auto_deploy = false; apply it with: nebula changeset apply {staged['id']}",
    )


def test_the_value_never_appears_in_lines_events_json_the_page_or_slack(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    set_secret(nebula, "staging", NEW_VALUE, "--as", "ada")
    set_secret(nebula, "production", NEW_VALUE, "--as", "ada")
    nebula.settle()
    seen = [
        nebula.ok("changesets --json").out,
        nebula.ok("approvals --json").out,
        nebula.ok("status --json").out,
        nebula.ok("deployments --json").out,
        *(nebula.ok(f"changeset show {c['id']}").out for c in nebula.changesets()),
        *(e.message or "" for e in nebula.events()),
    ]
    with nebula.ctx.db.transaction() as session:
        for approval in session.query(schema.Approval):
            message = messages.approval(
                gathering.approval_request(session, nebula.ctx.settings, approval)
            )
            seen += [message.text, json.dumps(message.blocks)]
        seen += [json.dumps(row.payload) for row in session.query(schema.OutboxMessage)]
    with ThreadedServer(nebula.ctx) as server, httpx.Client(base_url=server.url) as client:
        paths = ["/", "/projects/shop", "/api/v1/changesets", "/api/v1/approvals"]
        for path in paths + [f"/changesets/{c['id']}" for c in nebula.changesets()]:
            response = client.get(path)
            assert response.status_code == 200, path
            seen.append(response.text)
    assert "secret.STRIPE_KEY" in "".join(seen)
    for value in (SECRET_VALUE, NEW_VALUE):
        assert not [text for text in seen if value in text]
