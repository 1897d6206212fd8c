"""Asking twice is asking once (issue 29): a promote, rollback or redeploy identical to one
still waiting for approval or in flight answers with that one (`already requested: deployment
N, approval M`), and creates no second release and no second approval; through either door of
the command line (``door``: local and remote) and the HTTP API. A different request (another
release, another image, another environment) is still a new one."""

from __future__ import annotations

from typing import Any

import httpx

from tests.engine.projects import promotable
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import DIGEST_B, DIGEST_C, DIGEST_D, Nebula, image
from tests.web.world import ThreadedServer

STAGED = image("api", DIGEST_B)
PROMOTE = "promote shop api --from staging --to production"


def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    """Admins ada and bo; staging runs STAGED, a protected production the file's image, both
    healthy at r-1."""
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": promotable(staging_image=STAGED)})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    nebula.ok(f"approve {nebula.approvals()[0]['id']} --as bo")
    nebula.settle()
    return nebula


def of(nebula: Nebula, env: str) -> list[tuple[str, str, str]]:
    return [
        (d["release"], d["kind"], d["state"])
        for d in nebula.deployments()
        if d["environment"] == env
    ]


def pending(nebula: Nebula) -> list[dict[str, Any]]:
    return [a for a in nebula.approvals() if a["state"] == "pending"]


def asked_three_times(door: Door, command: str) -> dict[str, Any]:
    """``command`` as ada three times: the first answer (JSON), after checking that the second
    (text) and the third (JSON) are that same request."""
    first = door.act("ada", f"{command} --json")
    assert first.code == 0, first.err
    body = first.json
    assert body["already_requested"] is False
    deployment, approval = body["deployment"]["id"], body["approval"]
    said = f"already requested: deployment {deployment}"
    said += f", approval {approval['id']}\n" if approval is not None else "\n"
    again = door.act("ada", command)
    assert (again.code, again.out, again.err) == (0, said, "")
    third = door.act("ada", f"{command} --json").json
    assert third["already_requested"] is True
    assert third["deployment"]["id"] == deployment
    assert third["approval"] == approval
    assert third["ended"] == []
    return body  # type: ignore[no-any-return]


def test_promote_three_times_makes_one_release_and_one_approval(
    door: Door, git_repo: GitRepo
) -> None:
    nebula = shop(door.nebula, git_repo)

    asked = asked_three_times(door, PROMOTE)

    assert of(nebula, "production") == [
        ("r-1", "deploy", "healthy"),
        ("r-2", "promote", "awaiting-approval"),
    ]
    assert [a["id"] for a in pending(nebula)] == [asked["approval"]["id"]]
    # Staging moves on: promoting now is another image, so another request.
    git_repo.commit({"nebula.toml": promotable(staging_image=image("api", DIGEST_C))})
    nebula.settle()
    newer = door.act("ada", f"{PROMOTE} --json").json
    assert (newer["already_requested"], newer["deployment"]["release"]) == (False, "r-3")


def test_rollback_three_times_waits_for_one_approval(door: Door, git_repo: GitRepo) -> None:
    nebula = shop(door.nebula, git_repo)
    promoted = door.act("ada", f"{PROMOTE} --json").json
    nebula.ok(f"approve {promoted['approval']['id']} --as bo")
    nebula.settle()  # production: r-2 active, r-1 retired

    asked = asked_three_times(door, "rollback shop api --env production")

    assert asked["deployment"]["release"] == "r-1"
    assert of(nebula, "production")[2:] == [("r-1", "rollback", "awaiting-approval")]
    assert [a["id"] for a in pending(nebula)] == [asked["approval"]["id"]]


def test_a_rollback_to_another_release_is_a_new_request(door: Door, git_repo: GitRepo) -> None:
    nebula = shop(door.nebula, git_repo)
    for digest in (DIGEST_C, DIGEST_D):
        git_repo.commit({"nebula.toml": promotable(staging_image=image("api", digest))})
        nebula.settle()  # staging: r-3 active, r-1 and r-2 retired

    asked = asked_three_times(door, "rollback shop api --env staging --to r-1")
    other = door.act("ada", "rollback shop api --env staging --to r-2 --json").json

    assert (asked["approval"], other["already_requested"]) == (None, False)
    assert [(e["id"], e["state"]) for e in other["ended"]] == [
        (asked["deployment"]["id"], "superseded")
    ]
    assert of(nebula, "staging")[3:] == [
        ("r-1", "rollback", "superseded"),
        ("r-2", "rollback", "pending"),
    ]


def test_redeploy_three_times_makes_one_release_until_it_is_done(
    door: Door, git_repo: GitRepo
) -> None:
    nebula = shop(door.nebula, git_repo)

    asked = asked_three_times(door, "redeploy shop api --env production")
    in_staging = door.act("ada", "redeploy shop api --env staging --json").json

    assert (asked["deployment"]["release"], in_staging["already_requested"]) == ("r-2", False)
    assert of(nebula, "production") == [
        ("r-1", "deploy", "healthy"),
        ("r-2", "deploy", "awaiting-approval"),
    ]
    assert [a["id"] for a in pending(nebula)] == [asked["approval"]["id"]]
    nebula.ok(f"approve {asked['approval']['id']} --as bo")
    nebula.settle()
    # Done, so no longer the same request: asking again redeploys again.
    again = door.act("ada", "redeploy shop api --env production --json").json
    assert (again["already_requested"], again["deployment"]["release"]) == (False, "r-3")


def test_the_http_api_answers_a_repeat_with_the_open_request(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    shop(nebula, git_repo)
    with nebula.ctx.db.transaction() as session:
        token = people.token(session, nebula.clock, "ada")
    with (
        ThreadedServer(nebula.ctx) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        path = "/api/v1/projects/shop/services/api/promote"
        body = {"from": "staging", "to": "production"}
        headers = {"Authorization": f"Bearer {token}"}
        first = client.post(path, json=body, headers=headers)
        second = client.post(path, json=body, headers=headers)

    assert (first.status_code, second.status_code) == (200, 200)
    assert (first.json()["already_requested"], second.json()["already_requested"]) == (
        False,
        True,
    )
    assert second.json()["deployment"] == first.json()["deployment"]
    assert second.json()["approval"]["id"] == first.json()["approval"]["id"]
    assert len(pending(nebula)) == 1
