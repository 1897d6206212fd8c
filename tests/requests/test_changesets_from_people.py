"""Change sets from people (behaviour.md "Change sets from people (1.2)", issue 29): discarding
the change set that holds a service's first deploy removes that service from the environment
(it existed only there), and ``changeset apply --message`` (at most 500 characters) is
recorded on the change set, its deployments' first event and its approval request; through
either door of the command line."""

from __future__ import annotations

from typing import Any

from notifiers import gathering, messages
from reconciler.store import schema
from tests.gitops.shop import BASE, with_log_level
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, image

SEARCH = '\n[services.search]\nimage = "' + image("search") + '"\n'
DRAFTED = BASE.replace("[services.api]\n", "[services.api]\nauto_deploy = false\n")
SAID = "Ship the new checkout; the migration was tested on a copy of production"


def registered(nebula: Nebula, git_repo: GitRepo, text: str) -> None:
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": text}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()


def live(nebula: Nebula, git_repo: GitRepo) -> None:
    """The shop healthy at r-1 in staging and (approved by bo) in production."""
    registered(nebula, git_repo, BASE)
    [approval] = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {approval['id']} --as bo")
    nebula.settle()


def listed(nebula: Nebula, env: str) -> dict[str, Any]:
    """Each service listed in ``env`` (nebula status): its active release and what is open."""
    [environment] = [e for e in nebula.status()["environments"] if e["name"] == env]
    return {
        s["name"]: (s["active_release"], (s["deployment"] or {}).get("state"))
        for s in environment["services"]
    }


def production_changeset(nebula: Nebula) -> dict[str, Any]:
    return [c for c in nebula.changesets() if c["environment"] == "production"][-1]


# -- discard --------------------------------------------------------------------------------


def test_discarding_a_first_deploy_removes_the_service_until_a_push_declares_it_again(
    door: Door, git_repo: GitRepo
) -> None:
    nebula = door.nebula
    live(nebula, git_repo)
    git_repo.commit({"nebula.toml": BASE + SEARCH}, "Add search")
    nebula.reconcile()
    waiting = production_changeset(nebula)
    assert listed(nebula, "production")["search"] == (None, "awaiting-approval")

    discarded = door.act("ada", f"changeset discard {waiting['id']}")

    assert (discarded.code, discarded.out) == (0, f"change set {waiting['id']} discarded\n")
    assert listed(nebula, "production") == {
        "api": ("r-1", None),
        "worker": ("r-1", None),
        "db": ("r-1", None),
    }
    assert "search" in listed(nebula, "staging"), "staging applied it: it stays there"
    [search] = [
        d
        for d in nebula.deployments()
        if (d["environment"], d["service"]) == ("production", "search")
    ]
    assert (search["release"], search["state"]) == ("r-1", "cancelled"), "its history is kept"
    removed = [e.message for e in nebula.events() if e.kind == "unit" and e.message]
    assert removed[-1] == (
        f"search removed from production: it existed only in change set {waiting['id']}, "
        "which ended discarded"
    )
    # The next push stages its first deploy again, since the file still declares it...
    git_repo.commit({"nebula.toml": with_log_level("debug") + SEARCH}, "Debug")
    nebula.reconcile()
    again = production_changeset(nebula)
    assert ("search", "first_deploy") in {(x["service"], x["field"]) for x in again["lines"]}
    assert listed(nebula, "production")["search"] == (None, "awaiting-approval")
    # ... and one that no longer declares it stages nothing for it (its change set replaced
    # the one above, and took the service with it again).
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "No search")
    nebula.reconcile()
    assert [x["service"] for x in production_changeset(nebula)["lines"]] == ["api"]
    assert "search" not in listed(nebula, "production")


def test_a_first_push_discarded_leaves_the_environment_empty(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    registered(nebula, git_repo, BASE)
    first = production_changeset(nebula)
    nebula.ok(f"changeset discard {first['id']} --as ada")

    assert listed(nebula, "production") == {}
    assert set(listed(nebula, "staging")) == {"api", "worker", "db"}

    git_repo.commit({"nebula.toml": with_log_level("debug")}, "Debug")
    nebula.reconcile()
    assert listed(nebula, "production") == {
        "api": (None, "awaiting-approval"),
        "worker": (None, "awaiting-approval"),
        "db": (None, "awaiting-approval"),
    }
    # Release numbers are never reused: r-1 was the discarded one's.
    production = [d for d in nebula.deployments() if d["environment"] == "production"]
    assert [(d["service"], d["release"], d["state"]) for d in production][-3:] == [
        ("db", "r-2", "awaiting-approval"),
        ("api", "r-2", "awaiting-approval"),
        ("worker", "r-2", "awaiting-approval"),
    ]


def test_a_first_deploy_whose_approval_expired_is_removed_too(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    """Expiry ends a change set ``discarded`` as well: the same goes for what it created."""
    registered(nebula, git_repo, BASE)
    nebula.clock.advance(hours=25)
    nebula.reconcile()

    assert production_changeset(nebula)["state"] == "discarded"
    assert listed(nebula, "production") == {}


def test_discarding_a_change_to_running_services_keeps_them(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    live(nebula, git_repo)
    git_repo.commit({"nebula.toml": with_log_level("debug")}, "Debug")
    nebula.reconcile()
    nebula.ok(f"changeset discard {production_changeset(nebula)['id']} --as ada")

    assert listed(nebula, "production")["api"] == ("r-1", "cancelled"), "r-2 was cancelled"


# -- apply --message ------------------------------------------------------------------------


def test_the_message_is_recorded_on_the_change_set_its_deployments_and_its_approval(
    door: Door, git_repo: GitRepo
) -> None:
    nebula = door.nebula
    registered(nebula, git_repo, DRAFTED)
    staging, production = (
        next(c for c in nebula.changesets() if c["environment"] == env)
        for env in ("staging", "production")
    )
    assert (staging["state"], production["state"]) == ("draft", "draft")

    applied = door.act("ada", f'changeset apply {staging["id"]} --message "{SAID}" --json')

    assert applied.code == 0, applied.err
    assert applied.json["changeset"]["applied_message"] == SAID
    api = next(d for d in applied.json["deployments"] if d["service"] == "api")
    events = nebula.json(f"deployment show {api['id']}")["deployment"]["events"]
    assert events[0]["message"] == f'deploy of api r-1 requested with the message "{SAID}"'
    shown = door.act("ada", f"changeset show {staging['id']}").out
    assert f"  message: {SAID}\n" in shown

    asked = door.act("ada", f"changeset apply {production['id']} -m '{SAID}' --json").json
    assert (asked["changeset"]["state"], asked["changeset"]["applied_message"]) == (
        "pending-approval",
        SAID,
    )
    first = nebula.json(f"deployment show {asked['deployments'][0]['id']}")["deployment"]
    assert first["events"][0]["message"] == (
        f'deploy of db r-1 requested with the message "{SAID}": Waiting for approval'
    )
    with nebula.ctx.db.transaction() as session:
        approval = session.get(schema.Approval, int(asked["changeset"]["approval_id"]))
        assert approval is not None
        request = gathering.approval_request(session, nebula.ctx.settings, approval)
    slack = messages.approval(request)
    assert {"type": "mrkdwn", "text": f"*Message*\n{SAID}"} in [
        block.get("text") for block in slack.blocks
    ]
    assert slack.text.endswith(f'(requested by ada): "{SAID}"')


def test_a_message_longer_than_500_characters_is_refused_and_nothing_applied(
    door: Door, git_repo: GitRepo
) -> None:
    nebula = door.nebula
    registered(nebula, git_repo, DRAFTED)
    staging = next(c for c in nebula.changesets() if c["environment"] == "staging")

    refused = door.act("ada", f"changeset apply {staging['id']} --message {'x' * 501}")

    assert (refused.code, refused.out, refused.err) == (
        1,
        "",
        "error: The message is 501 characters long; a change set's message is at most 500\n"
        "hint: shorten it; the commit message and the change set's lines say the rest\n",
    )
    shown = nebula.json(f"changeset show {staging['id']}")["changeset"]
    assert (shown["state"], shown["applied_message"]) == ("draft", None)
    assert [d for d in nebula.deployments() if d["environment"] == "staging"] == []
    at_most = door.act("ada", f"changeset apply {staging['id']} --message {'x' * 500} --json")
    assert at_most.json["changeset"]["applied_message"] == "x" * 500
