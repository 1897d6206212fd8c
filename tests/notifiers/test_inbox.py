"""``nebula inbox`` through either door, and ``/api/v1/inbox`` (behaviour.md "Notifications
(1.2)", Inbox): the approvals a member may decide while they are pending, the decisions on
their own requests, the failures of deployments they asked for; read and unread.

The shop of fixtures/projects/two-environments: api in staging, and in production
(protected). ada is an admin, carol a member
granted approve in production, dev a member granted deploy there, mo a member with no grant,
vera a viewer.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from fixtures import loading
from reconciler.runtimes.registry import Clusters
from reconciler.store import schema
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, nebula_with
from tests.web.world import ThreadedServer

API_IMAGE = "registry.example.com/shop/api@sha256:" + "a" * 64
PAGE = "http://127.0.0.1:8080"


def _build(nebula: Nebula, repo: GitRepo) -> None:
    repo.commit({"nebula.toml": loading.project("two-environments")})
    nebula.ok("member add ada --role admin")
    for name, role in (("carol", "member"), ("dev", "member"), ("mo", "member")):
        nebula.ok(f"member add {name} --role {role}")
    nebula.ok("member add vera --role viewer")
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("grant add carol approve --project shop --env production")
    nebula.ok("grant add dev deploy --project shop --env production")
    nebula.settle()
    (first,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {first['id']} --as ada")
    nebula.settle()
    assert nebula.unit("production", "api")["active_release"] == "r-1"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime]:
    """The shop deployed once for the module (a few seconds); each test gets a copy."""
    tmp = tmp_path_factory.mktemp("inbox")
    for nebula in nebula_with(tmp):
        _build(nebula, GitRepo(tmp / "repo", bare=False))
        now = nebula.clock.now()
    return tmp, now


@pytest.fixture
def nebula(built: tuple[Path, datetime], tmp_path: Path) -> Iterator[Nebula]:
    """A copy of the built store (and state directory), at the time it was left."""
    source, now = built
    for path in source.glob("nebula.db*"):
        shutil.copy(path, tmp_path / path.name)
    shutil.copytree(source / "state", tmp_path / "state")
    for copied in nebula_with(tmp_path):
        copied.clock.set(now)
        yield copied


@pytest.fixture
def shop(nebula: Nebula) -> Nebula:
    return nebula


def _ids(door: Door, who: str, *options: str) -> list[str]:
    found = door.read(" ".join(("inbox -o json", *options)), who)
    assert found.code == 0, found.err
    return [item["id"] for item in found.json["items"]]


def _redeploy(door: Door, who: str, env: str) -> str:
    asked = door.act(who, f"redeploy shop api --env {env} -o json")
    assert asked.code == 0, asked.err
    approval = asked.json["approval"]
    return str(approval["id"]) if approval is not None else str(asked.json["deployment"]["id"])


def test_a_pending_approval_is_in_the_inbox_of_who_may_decide_it_until_it_is_decided(
    door: Door, shop: Nebula
) -> None:
    approval = _redeploy(door, "dev", "production")
    item = f"approval-{approval}"
    assert _ids(door, "ada") == [item]
    assert _ids(door, "carol") == [item]  # granted approve there
    for nobody in ("mo", "vera", "dev"):  # no grant, a viewer, the requester
        assert _ids(door, nobody) == []
    listed = door.read("inbox", "carol")
    assert listed.out.splitlines() == [
        "ID          KIND      WHERE            SERVICE  READ   SUMMARY",
        f"{item}  approval  shop/production  api      false  Deploy of api r-2 in shop/production waits for your approval (requested by dev)",
    ]  # fmt: skip
    assert door.read("inbox", "mo").out == "Your inbox is empty.\n"

    decided = door.act("carol", f"approve {approval}")
    assert decided.code == 0, decided.err
    assert _ids(door, "ada") == _ids(door, "carol") == []
    document = door.read("inbox -o json", "dev").json
    assert document == {
        "items": [
            {
                "id": f"decision-{approval}",
                "kind": "decision",
                "project": "shop",
                "environment": "production",
                "service": "api",
                "summary": "Your deploy of api r-2 in shop/production was approved by carol",
                "link": f"{PAGE}/approvals#approval-{approval}",
                "created_at": document["items"][0]["created_at"],
                "read": False,
                "approval_id": approval,
                "deployment_id": document["items"][0]["deployment_id"],
            }
        ],
        "unread": 1,
    }
    assert document["items"][0]["created_at"].endswith("Z")


def test_read_and_unread(door: Door, shop: Nebula) -> None:
    first = _redeploy(door, "dev", "production")
    assert door.act("ada", f"reject {first} --reason 'not today'").code == 0
    second = _redeploy(door, "dev", "production")
    assert _ids(door, "ada") == [f"approval-{second}"]
    assert _ids(door, "dev") == [f"decision-{first}"]
    summary = door.read("inbox -o json", "dev").json["items"][0]["summary"]
    assert summary == "Your deploy of api r-2 in shop/production was rejected by ada: not today"

    marked = door.act("dev", f"inbox read decision-{first}")
    assert (marked.code, marked.out) == (0, f"decision-{first} marked read\n")
    again = door.act("dev", f"inbox read decision-{first}")
    assert again.out == f"decision-{first} was read already\n"
    assert door.read("inbox --unread", "dev").out == "No unread items.\n"
    assert door.read("inbox -o json", "dev").json["items"][0]["read"] is True
    assert door.read("inbox -o json", "dev").json["unread"] == 0
    # Marks are each member's own: ada's item is still unread.
    assert door.read("inbox --unread -o json", "ada").json["unread"] == 1
    everything = door.act("ada", "inbox read --all -o json")
    assert everything.json == {"marked": [f"approval-{second}"], "unread": 0}
    assert door.act("ada", "inbox read --all").out == "Nothing was unread.\n"
    assert _ids(door, "ada", "--unread") == []
    assert _ids(door, "ada") == [f"approval-{second}"]  # read, and still to decide

    unknown = door.act("dev", f"inbox read approval-{second}")  # dev may not decide it
    assert unknown.code == 1
    assert unknown.err == (
        f"error: No item approval-{second} in the inbox of dev\n"
        "hint: nebula inbox lists them (a decided approval leaves its deciders' inboxes)\n"
    )
    wrong = door.act("dev", "inbox read 12")
    assert (wrong.code, wrong.err) == (
        1,
        "error: '12' is not an inbox item\n"
        "hint: items are named like approval-12, decision-12 or failure-40: nebula inbox "
        "lists them\n",
    )
    neither = door.act("dev", "inbox read")
    assert neither.code == 2
    assert neither.err.startswith("error: give an item id or --all (see: nebula inbox read")


def test_ones_own_request_is_not_ones_to_decide_while_self_approval_is_forbidden(
    door: Door, shop: Nebula
) -> None:
    approval = _redeploy(door, "ada", "production")
    assert _ids(door, "ada") == []
    assert _ids(door, "carol") == [f"approval-{approval}"]
    assert door.act("ada", "policy set forbid_self_approval false").code == 0
    assert _ids(door, "ada") == [f"approval-{approval}"]  # the rule deciding applies
    assert door.act("ada", f"approve {approval}").code == 0
    assert _ids(door, "ada") == []  # no decision item for one's own decision


def test_a_failure_is_in_the_inbox_of_who_asked_for_the_deployment_only(
    door: Door, shop: Nebula, tmp_path: Path
) -> None:
    faults = tmp_path / "faults.toml"
    faults.write_text(f'[images."{API_IMAGE}"]\nfail = "image-pull"\n')
    ctx = shop.ctx
    ctx.settings = ctx.settings.with_(simulated_faults=str(faults))
    ctx.clusters = Clusters(ctx.settings, ctx.db, ctx.clock, ctx.vault)
    deployment = _redeploy(door, "dev", "staging")  # a member deploys in staging unasked
    shop.settle()
    assert door.read(f"deployment show {deployment} -o json").json["deployment"]["state"] == (
        "failed"
    )
    (item,) = door.read("inbox -o json", "dev").json["items"]
    assert item["id"] == f"failure-{deployment}"
    assert (item["kind"], item["environment"], item["service"]) == ("failure", "staging", "api")
    assert item["summary"].startswith(
        "Your deploy of api r-2 in shop/staging failed (image-pull): "
    )
    assert item["link"] == f"{PAGE}/deployments/{deployment}"
    assert (item["approval_id"], item["deployment_id"]) == (None, deployment)
    for other in ("ada", "carol", "mo"):
        assert _ids(door, other) == []


def test_the_inbox_needs_a_token_and_answers_its_members_items(shop: Nebula) -> None:
    approval = _redeploy(Door(shop), "dev", "production")
    with shop.ctx.db.transaction() as session:
        carol = people.token(session, shop.clock, "carol")
        vera = people.token(session, shop.clock, "vera")
    with ThreadedServer(shop.ctx) as server, httpx.Client(base_url=server.url) as http:
        for method, path in (("GET", "/api/v1/inbox"), ("POST", "/api/v1/inbox/read")):
            refused = http.request(method, path, json={"all": True})
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"] == "Missing bearer token"
        mine = http.get("/api/v1/inbox", headers={"Authorization": f"Bearer {carol}"})
        assert mine.status_code == 200
        (item,) = mine.json()["items"]
        assert list(item) == [
            "id", "kind", "project", "environment", "service", "summary", "link",
            "created_at", "read", "approval_id", "deployment_id",
        ]  # fmt: skip
        assert (item["id"], item["kind"], item["read"]) == (
            f"approval-{approval}",
            "approval",
            False,
        )
        viewer = {"Authorization": f"Bearer {vera}"}
        assert http.get("/api/v1/inbox", headers=viewer).json() == {"items": [], "unread": 0}
        read = http.post("/api/v1/inbox/read", headers=viewer, json={"all": True})
        assert read.json() == {"marked": [], "unread": 0}
        unread = http.get(
            "/api/v1/inbox",
            params={"unread": "true"},
            headers={"Authorization": f"Bearer {carol}"},
        )
        assert [i["id"] for i in unread.json()["items"]] == [f"approval-{approval}"]
        bad = http.post(
            "/api/v1/inbox/read",
            headers={"Authorization": f"Bearer {carol}"},
            json={"id": "approval-1", "all": True},
        )
        assert bad.status_code == 422
        assert bad.json()["error"] == "give one item id or all, not both"


def test_an_expired_request_leaves_the_deciders_and_tells_the_requester(shop: Nebula) -> None:
    door = Door(shop)
    approval = _redeploy(door, "dev", "production")
    shop.clock.advance(hours=24, seconds=1)
    assert _ids(door, "ada") == []  # past its expiry: no longer anyone's to decide
    shop.reconcile()  # expires it
    (item,) = door.read("inbox -o json", "dev").json["items"]
    assert (item["id"], item["summary"]) == (
        f"decision-{approval}",
        "Your deploy of api r-2 in shop/production expired without a decision",
    )


def test_read_marks_go_with_their_member_and_their_project(shop: Nebula) -> None:
    door = Door(shop)
    approval = _redeploy(door, "dev", "production")
    assert door.act("ada", f"reject {approval}").code == 0
    assert door.act("dev", "inbox read --all").code == 0
    assert door.act("ada", "member remove dev").code == 0
    assert door.act("ada", "member add dev --role member").code == 0
    # A member added again under the name starts with nothing read.
    assert door.read("inbox --unread -o json", "dev").json["unread"] == 1
    assert door.act("dev", "inbox read --all").code == 0
    assert _marks(shop) == 1
    # Forgotten with the project (its approvals' and deployments' ids may come back).
    assert door.act("ada", "project remove shop --yes").code == 0
    shop.settle()
    assert door.read("project list -o json").json["projects"] == []
    assert _marks(shop) == 0


def _marks(nebula: Nebula) -> int:
    with nebula.ctx.db.reading() as session:
        return session.query(schema.InboxRead).count()


@pytest.mark.postgres
@pytest.mark.parametrize("nebula_any_db", ["postgres"], indirect=True)
def test_the_inbox_on_postgres(nebula_any_db: Nebula, git_repo: GitRepo) -> None:
    """The same queries on the other store (what is decided by whom, what nobody decided)."""
    _build(nebula_any_db, git_repo)
    door = Door(nebula_any_db)
    approval = _redeploy(door, "dev", "production")
    assert _ids(door, "carol") == [f"approval-{approval}"]
    assert door.act("carol", f"approve {approval}").code == 0
    assert _ids(door, "carol") == []
    assert _ids(door, "dev") == [f"decision-{approval}"]
    assert door.act("dev", "inbox read --all -o json").json["marked"] == [f"decision-{approval}"]
    assert _ids(door, "dev", "--unread") == []
