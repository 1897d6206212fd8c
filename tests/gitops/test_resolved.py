"""Staging compares resolved values (behaviour.md "Resolved values", issue 19): a service whose
variables resolve differently because a value it references changed gets a line (``via``) and
a release, in dependency order, in the same change set."""

from __future__ import annotations

import json
import re

from notifiers import gathering, messages
from reconciler.store import schema
from tests.gitops.chain import chain, in_env, push, register, variables
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

V2 = {'K = "v1"': 'K = "v2"'}
ADDRESS = "http://a.shop-staging.svc.cluster.local:{}/api"


def lines(changeset: dict[str, object]) -> list[tuple[object, ...]]:
    return [
        (line["service"], line["field"], line["before"], line["after"], line["via"])
        for line in changeset["lines"]  # type: ignore[attr-defined]
    ]


def test_a_changed_value_re_releases_the_chain_that_reads_it_in_order(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    before = len(nebula.deployments())
    push(nebula, git_repo, chain(V2))

    staged = in_env(nebula.changesets())[-1]
    assert staged["state"] == "applied"
    assert lines(staged) == [
        ("a", "variables.K", "v1", "v2", None),
        ("b", "variables.X", "v1", "v2", "a.K"),
        ("c", "variables.Y", "c-v1", "c-v2", "b.X"),
    ]
    new = nebula.deployments()[before:]
    staging = in_env(new)
    assert [(d["service"], d["release"]) for d in staging] == [
        ("a", "r-2"),
        ("b", "r-2"),
        ("c", "r-2"),
    ]
    assert {d["changeset_id"] for d in staging} == {staged["id"]}
    # b reads a (and c reads b): they wait for it, in that order.
    assert staging[1]["message"] == "Waiting for a to finish deploying (r-2)"
    assert staging[2]["message"] == "Waiting for b to finish deploying (r-2)"

    nebula.settle()
    assert {d["state"] for d in in_env(nebula.deployments())} == {"healthy"}
    assert variables(nebula, "a", "r-2")["K"] == "v2"
    assert variables(nebula, "b", "r-2")["X"] == "v2"
    assert variables(nebula, "c", "r-2")["Y"] == "c-v2"

    shown = nebula.ok(f"changeset show {staged['id']}").out
    assert re.search(r"^  b +variables\.X +v1 +v2 +via a\.K +-$", shown, re.M), shown
    assert re.search(r"^  c +variables\.Y +c-v1 +c-v2 +via b\.X +-$", shown, re.M), shown


def test_the_protected_environment_asks_for_the_whole_chain_and_slack_says_via(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    first = in_env(nebula.approvals(), "production")[0]
    nebula.ok(f"approve {first['id']} --as bo")
    nebula.settle()
    push(nebula, git_repo, chain(V2))

    staged = in_env(nebula.changesets(), "production")[-1]
    assert staged["state"] == "pending-approval"
    assert [line[0] for line in lines(staged)] == ["a", "b", "c"]
    pending = [a for a in nebula.approvals() if a["state"] == "pending"]
    assert [(a["target"], a["target_id"]) for a in pending] == [("changeset", staged["id"])]
    with nebula.ctx.db.transaction() as session:
        approval = session.get(schema.Approval, int(pending[0]["id"]))
        assert approval is not None
        message = messages.approval(
            gathering.approval_request(session, nebula.ctx.settings, approval)
        )
    text = json.dumps(message.blocks, ensure_ascii=False)
    assert "~ b X: v1 → v2 (via a.K)" in text
    assert "~ c Y: c-v1 → c-v2 (via b.X)" in text


def test_a_host_port_change_re_releases_its_users_without_ordering_them(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    before = len(nebula.deployments())
    push(nebula, git_repo, chain({"port = 8080": "port = 9090"}))

    staged = in_env(nebula.changesets())[-1]
    assert lines(staged) == [
        ("a", "processes.web.port", 8080, 9090, None),
        ("web", "variables.A_URL", ADDRESS.format(8080), ADDRESS.format(9090), "host(a)"),
    ]
    new = in_env(nebula.deployments()[before:])
    assert [(d["service"], d["state"], d["blocker"]) for d in new] == [
        ("a", "admitted", None),
        ("web", "admitted", None),  # an address only: it does not wait for a
    ]
    nebula.settle()
    assert variables(nebula, "web", "r-2")["A_URL"] == ADDRESS.format(9090)


def test_nothing_is_staged_when_a_referenced_value_is_rewritten_to_the_same_value(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    register(nebula, git_repo)
    count = len(in_env(nebula.changesets()))
    # The same value written another way: no line at all.
    push(nebula, git_repo, chain({'K = "v1"': "K = 'v1'"}))
    assert len(in_env(nebula.changesets())) == count
    # a.K's text changes but resolves to what it did: a's line only, not its readers'.
    push(
        nebula,
        git_repo,
        chain(
            {
                'K = "v1"': 'K = "${{ pay.V }}"',
                "[services.pay.variables]\n": '[services.pay.variables]\nV = "v1"\n',
            }
        ),
    )
    staged = in_env(nebula.changesets())[-1]
    assert [(line[0], line[1], line[4]) for line in lines(staged)] == [
        ("a", "variables.K", None),
        ("pay", "variables.V", None),
    ]


def test_a_line_through_a_reference_drifts_when_the_live_value_moved(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    held = {"[services.b]\n": "[services.b]\nauto_deploy = false\n"}
    register(nebula, git_repo, chain(held), healthy=False)  # a draft: b has auto_deploy off
    draft = in_env(nebula.changesets())[0]
    nebula.ok(f"changeset apply {draft['id']} --as ada")
    nebula.settle()
    for value in ("v2", "v3"):
        push(nebula, git_repo, chain({**held, 'K = "v1"': f'K = "{value}"'}))
        draft = in_env(nebula.changesets())[-1]
        assert draft["state"] == "draft"
        if value == "v2":
            nebula.ok(f"changeset apply {draft['id']} --as ada")
            nebula.settle()
    assert lines(draft)[1] == ("b", "variables.X", "v2", "v3", "a.K")
    # b is rolled back to r-1 (X = v1) underneath the draft.
    nebula.ok("rollback shop b --env staging --to r-1")
    nebula.settle()

    refused = nebula.cli(f"changeset apply {draft['id']} --as ada")
    assert (refused.code, refused.err) == (
        1,
        f"error: Change set {draft['id']} not applied: 1 line drifted since staged: "
        "b variables.X (staged with 'v2', now 'v1'). "
        "Push again or restage to replace this change set.\n",
    )
    shown = nebula.json(f"changeset show {draft['id']}")["changeset"]
    assert [line["drifted"] for line in shown["lines"]] == [False, True, False]
