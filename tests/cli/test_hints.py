"""Unknown names are answered with what there is (issue 29): the closest known one ("did you
mean"), else the names there are, for projects, environments, services, releases, commands and
a command's options; a command's usage error shows that command's usage; a refused
self-approval says who can approve. Through both doors of the command line: the server's error
carries the hint the remote command line prints.

olga is an owner, alice an admin, carol a member."""

from __future__ import annotations

import pytest

from fixtures import loading
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

SHOP = loading.project("storefront")


@pytest.fixture
def shop(door: Door, nebula: Nebula, git_repo: GitRepo) -> Door:
    with nebula.ctx.db.transaction() as session:
        for name, role in (("olga", "owner"), ("alice", "admin"), ("carol", "member")):
            people.member(session, nebula.clock, name, role)
    git_repo.commit({"nebula.toml": SHOP}, "Shop: first version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    return door


REFUSALS = [
    (
        "history shop apii --env staging",
        "error: No service 'apii' in shop/staging\n"
        "hint: did you mean 'api'? services and databases: api, db, worker\n",
    ),
    (
        "history shop cache --env staging",
        "error: No service 'cache' in shop/staging\nhint: services and databases: api, db, worker\n",
    ),
    (
        "history shopp api --env staging",
        "error: No project named 'shopp'\nhint: did you mean 'shop'? projects: shop\n",
    ),
    (
        "status stagin",
        "error: No project named 'stagin'\nhint: projects: shop\n",
    ),
    (
        "deployments shop --env prod",
        "error: Project 'shop' has no environment 'prod'\n"
        "hint: did you mean 'production'? environments: staging, production\n",
    ),
    (
        "rollback shop api --env staging --to r-99",
        "error: api in staging has no release r-99\nhint: releases to roll back to: r-2, r-1\n",
    ),
    (
        "rollback shop worker --env staging --to r-2",
        "error: worker in staging has no release r-2\n"
        "hint: there is no earlier release to roll back to\n",
    ),
]


@pytest.mark.parametrize(("command", "refusal"), REFUSALS)
def test_an_unknown_name_is_answered_with_the_names_there_are(
    shop: Door, command: str, refusal: str
) -> None:
    for _ in range(2):  # api in staging: r-3 active, r-2 and r-1 retired
        assert shop.act("olga", "redeploy shop api --env staging").code == 0
        shop.nebula.settle()
    refused = shop.act("carol", command)
    assert (refused.code, refused.out, refused.err) == (1, "", refusal)


def test_an_unknown_project_when_there_is_none_says_how_to_add_one(door: Door) -> None:
    with door.nebula.ctx.db.transaction() as session:
        people.member(session, door.nebula.clock, "olga", "owner")
    refused = door.act("olga", "status shop")
    assert (refused.code, refused.err) == (
        1,
        "error: No project named 'shop'\n"
        "hint: no project is registered yet: add one with nebula project add\n",
    )


def test_a_refused_self_approval_says_who_can_approve(shop: Door) -> None:
    assert shop.act("alice", "approve 1").code == 0  # production's first deploy
    shop.nebula.settle()
    assert shop.act("olga", "redeploy shop api --env production").code == 0
    (pending,) = [a for a in shop.nebula.approvals() if a["state"] == "pending"]
    approval = pending["id"]
    refused = shop.act("olga", f"approve {approval}")
    assert (refused.code, refused.err) == (
        1,
        "error: Your policy forbids approving your own deploys: someone else must approve this "
        "request.\nhint: who can approve it: alice\n",
    )
    # With no one else to ask, the hint says how to have someone.
    shop.nebula.ok("member remove alice --as olga")
    refused = shop.act("olga", f"approve {approval}")
    assert refused.err.splitlines()[1] == (
        "hint: no one else can approve it: an admin can grant it to someone (nebula grant add "
        "NAME approve --project shop --env production), or turn the policy off "
        "(nebula policy set forbid_self_approval false)"
    )


USAGE = [
    (
        "statsu",
        "error: nebula has no command 'statsu' (see: nebula --help)\nhint: did you mean status?\n",
    ),
    (
        "project lst",
        "error: nebula project has no command 'lst' (see: nebula project --help)\n"
        "hint: did you mean list?\n",
    ),
    (
        "project frob",
        "error: nebula project has no command 'frob' (see: nebula project --help)\n"
        "hint: commands: add, list, remove, set\n",
    ),
    (
        "status -o xml",
        "error: argument -o/--output: invalid choice: 'xml' (see: nebula status --help)\n"
        "hint: choose from: json, yaml, wide\n",
    ),
    (
        "status -o jsn",
        "error: argument -o/--output: invalid choice: 'jsn' (see: nebula status --help)\n"
        "hint: did you mean json?\n",
    ),
    (
        "deployments shop --servce api",
        "error: unrecognized arguments: --servce api (see: nebula deployments --help)\n"
        "hint: did you mean --service?\n",
    ),
    (
        "deployments --project shop",
        "error: unrecognized arguments: --project (see: nebula deployments --help)\n"
        "hint: the project comes without --project: usage: nebula deployments [-h] "
        "[--config FILE] [--server URL] [--context NAME] [--as NAME] [--env ENV] "
        "[--service SERVICE] [--limit LIMIT] [-o {json,yaml,wide}] [--json] [project]\n",
    ),
    (
        "history shop api --env staging extra",
        "error: unrecognized arguments: extra (see: nebula history --help)\n"
        "hint: usage: nebula history [-h] [--config FILE] [--server URL] [--context NAME] "
        "[--as NAME] --env ENV [-o {json,yaml,wide}] [--json] project service\n",
    ),
    (
        "history shop",
        "error: the following arguments are required: service, --env "
        "(see: nebula history --help)\n"
        "hint: usage: nebula history [-h] [--config FILE] [--server URL] [--context NAME] "
        "[--as NAME] --env ENV [-o {json,yaml,wide}] [--json] project service\n",
    ),
]


@pytest.mark.parametrize(("command", "refusal"), USAGE)
def test_bad_usage_says_what_was_meant_or_shows_the_commands_usage(
    door: Door, command: str, refusal: str
) -> None:
    refused = door.read(command)
    assert (refused.code, refused.out, refused.err) == (2, "", refusal)
