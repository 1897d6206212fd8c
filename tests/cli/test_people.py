"""Every person is themselves (issue 25): members, roles, grants and tokens through either door
of the command line (``door``: local with ``--as``, remote with the member's token), the
refusals an adversarial test found, and the audit of every change.

alice is an owner, bob an admin, carol a member, vera a viewer (made in the store)."""

from __future__ import annotations

import io
import sys
from datetime import timedelta

import pytest

from fixtures import loading
from reconciler.errors import UnauthorizedError
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

SHOP = loading.project("storefront")


@pytest.fixture
def org(nebula: Nebula) -> Nebula:
    with nebula.ctx.db.transaction() as session:
        for name, role in (("alice", "owner"), ("bob", "admin"), ("carol", "member")):
            people.member(session, nebula.clock, name, role)
        people.member(session, nebula.clock, "vera", "viewer")
    return nebula


def _audit(nebula: Nebula) -> list[tuple[str, str, str]]:
    return [(e["actor"], e["action"], e["message"]) for e in nebula.json("audit")["events"]]


# What carol (a member) tried, and what each refusal says; nothing of it may happen.
ADMIN_ACTS = [
    ("member add carol --role owner", "carol may not change the role of carol: needs the admin role (carol is a member)"),
    ("member add eve --role admin", "carol may not add eve as admin: needs the admin role (carol is a member)"),
    ("member remove bob", "carol may not remove bob: needs the admin role (carol is a member)"),
    ("member set bob --role viewer", "carol may not change the role of bob: needs the admin role (carol is a member)"),
    ("policy set forbid_self_approval false", "carol may not set policies: needs the admin role (carol is a member)"),
    ("token revoke 1", "carol may not revoke the tokens of alice: needs the admin role (carol is a member)"),
    ("freeze add --days sat,sun --from 00:00 --to 24:00", "carol may not add freeze windows: needs the admin role (carol is a member)"),
    ("freeze remove 1", "carol may not remove freeze windows: needs the admin role (carol is a member)"),
    ("project add other --repo /nowhere", "carol may not add projects: needs the admin role (carol is a member)"),
    ("project set shop concurrency 2", "carol may not change project settings: needs the admin role (carol is a member)"),
    ("project remove shop --yes", "carol may not remove projects: needs the admin role (carol is a member)"),
    ("grant add carol approve --project shop", "carol may not change grants: needs the admin role (carol is a member)"),
    ("service set shop api --env production skip_production_approval true", "carol may not change service settings: needs the admin role (carol is a member)"),
    ("suspend shop --reason mine", "carol may not suspend or resume projects: needs the admin role (carol is a member)"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "refusal"), ADMIN_ACTS)
def test_a_member_administers_nothing(
    door: Door, org: Nebula, git_repo: GitRepo, command: str, refusal: str
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    org.settle()
    org.ok("token create --as alice")
    org.ok("freeze add --days mon --from 01:00 --to 02:00")
    before = _audit(org)
    refused = door.act("carol", command)
    assert (refused.code, refused.err.splitlines()[0]) == (1, f"error: {refusal}")
    assert _audit(org) == before, "nothing was done, so nothing was audited"


def test_a_secret_is_an_admins_to_set(
    door: Door, org: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    monkeypatch.setattr(sys, "stdin", io.StringIO("sk_live_carols_own"))
    refused = door.act("carol", "secret set shop staging STRIPE_KEY")
    assert (refused.code, refused.err) == (
        1,
        "error: carol may not set secrets: needs the admin role (carol is a member)\n",
    )
    assert door.act("carol", "secret delete shop staging STRIPE_KEY").err == (
        "error: carol may not delete secrets: needs the admin role (carol is a member)\n"
    )
    assert org.json("secret list shop staging")["secrets"] == []


def test_the_last_owner_can_be_neither_demoted_nor_removed(door: Door, org: Nebula) -> None:
    demoted = door.act("alice", "member set alice --role admin")
    removed = door.act("alice", "member remove alice")
    for refused, doing in ((demoted, "demoted"), (removed, "removed")):
        assert refused.code == 1
        assert refused.err.splitlines() == [
            f"error: alice is the last owner and cannot be {doing}: an organization always "
            "keeps one owner",
            "hint: make someone else an owner first: nebula member set NAME --role owner",
        ]
    # With a second owner, the first may step down.
    door.act("alice", "member add olga --role owner")
    assert door.act("alice", "member set alice --role admin").code == 0
    owners = [m["name"] for m in org.json("member list")["members"] if m["role"] == "owner"]
    assert owners == ["olga"]


def test_an_admin_cannot_touch_an_owner(door: Door, org: Nebula) -> None:
    refused = door.act("bob", "member add carol --role owner")
    assert refused.err.splitlines()[0] == (
        "error: bob may not make carol an owner: needs the owner role (bob is an admin)"
    )
    refused = door.act("bob", "member add alice --role owner --slack-id U0BOB")
    assert refused.err.splitlines()[0] == (
        "error: bob may not change the role of alice, an owner: needs the owner role "
        "(bob is an admin)"
    )
    assert door.act("bob", "member add eve --role member").code == 0


def test_who_an_admin_is_takes_an_owner_to_change_and_every_change_is_audited(
    door: Door, org: Nebula
) -> None:
    """Re-pointing another admin's Slack id would let one admin approve their own deploy from
    Slack as the other: an owner's act, and never silent."""
    assert door.act("alice", "member add dave --role admin --slack-id U0DAVE").code == 0
    assert door.act("bob", "member set bob --slack-id U0BOB").code == 0
    refused = door.act("bob", "member set dave --slack-id U0BOB2")
    assert refused.err.splitlines()[0] == (
        "error: bob may not change who dave is, an admin (Slack id U0DAVE -> U0BOB2): needs "
        "the owner role (bob is an admin)"
    )
    assert (
        door.act("bob", "member set carol --slack-id U0CAROL --email carol@example.com").code == 0
    )
    assert door.act("alice", "member set dave --role member --slack-id U0DAVE2").code == 0
    assert _audit(org)[-4:] == [
        ("alice", "member.add", "Added dave as admin"),
        ("bob", "member.role", "Identity of bob: Slack id none -> U0BOB"),
        ("bob", "member.role", "Identity of carol: Slack id none -> U0CAROL; e-mail none -> carol@example.com"),
        ("alice", "member.role", "Role of dave: admin -> member; Slack id U0DAVE -> U0DAVE2"),
    ]  # fmt: skip


def test_a_name_is_one_part_of_a_path_and_never_another_route(
    door: Door, org: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    refused = door.act("bob", "member remove ../projects/shop")
    assert refused.err.splitlines()[0] == "error: '../projects/shop' is not a name"
    refused = door.act("bob", "secret delete shop production ..")
    assert refused.err.splitlines()[0] == "error: '..' is not a name"
    assert [p["slug"] for p in org.json("project list")["projects"]] == ["shop"]
    # Whatever else a name holds is itself, never a query: not a member's name, through
    # either door in the same words.
    invalid = door.act("bob", "member remove 'carol?x=1'")
    assert invalid.err.splitlines()[0] == (
        "error: path.name: String should match pattern '^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$'"
    )
    assert "carol" in [m["name"] for m in org.json("member list")["members"]]


def test_local_acts_without_as_are_the_operators(nebula: Nebula) -> None:
    nebula.ok("member add eve --role admin")
    assert _audit(nebula) == [("local-admin", "member.add", "Added eve as admin")]
    me = nebula.json("whoami")
    assert me == {
        "member": "local-admin",
        "role": "owner",
        "grants": [],
        "token": None,
        "server": None,
        "mode": "local",
    }
    named = nebula.cli("member add local-admin --role member")
    assert named.code == 1 and "is not a valid member name" in named.err


def test_grants_let_a_member_approve_there_and_only_there(
    door: Door, org: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    org.settle()
    approval = next(a for a in org.approvals() if a["state"] == "pending")
    refused = door.act("carol", f"approve {approval['id']}")
    assert (refused.code, refused.err.splitlines()[0]) == (
        1,
        "error: carol may not approve in shop/production: needs the approve grant or the "
        "admin role",
    )
    assert refused.err.splitlines()[1] == (
        "hint: an admin can grant it: nebula grant add carol approve --project shop "
        "--env production"
    )
    granted = door.act("bob", "grant add carol approve --project shop --env production")
    assert granted.out == "carol may approve in shop/production\n"
    listed = door.read("grant list carol -o json", who="carol").json["grants"]
    assert [(g["member"], g["grant"], g["project"], g["environment"]) for g in listed] == [
        ("carol", "approve", "shop", "production")
    ]
    me = door.read("whoami -o json", who="carol").json
    assert me["grants"] == [{"grant": "approve", "project": "shop", "environment": "production"}]
    approved = door.act("carol", f"approve {approval['id']}")
    assert approved.code == 0, approved.err
    assert approved.out.startswith(f"approval {approval['id']} approved by carol")
    # Taken back: it is audited, and carol holds nothing there any more.
    door.act("bob", "grant remove carol approve --project shop --env production")
    assert door.read("grant list carol -o json", who="bob").json["grants"] == []
    actions = [(actor, action, text) for actor, action, text in _audit(org) if "grant" in action]
    assert actions == [
        ("bob", "grant.add", "Granted approve in shop/production to carol"),
        ("bob", "grant.remove", "Removed the approve grant in shop/production from carol"),
    ]


def test_a_grant_never_lets_anyone_approve_their_own_request(
    door: Door, org: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    org.settle()
    org.ok(f"approve {org.approvals()[0]['id']} --as alice")
    org.settle()
    org.ok("grant add carol approve --project shop")
    org.ok("grant add carol deploy --project shop")
    asked = door.act("carol", "redeploy shop api --env production -o json")
    assert asked.code == 0, asked.err
    approval = asked.json["approval"]
    assert approval["state"] == "pending" and approval["requested_by"] == "carol"
    refused = door.act("carol", f"approve {approval['id']}")
    assert (refused.code, refused.err) == (
        1,
        "error: Your policy forbids approving your own deploys: someone else must approve "
        "this request.\nhint: who can approve it: alice, bob\n",
    )


def test_a_viewer_reads_and_acts_on_nothing(door: Door, org: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    org.ok(f"project add shop --repo {git_repo.url}")
    org.settle()
    assert door.read("status shop -o json", who="vera").code == 0
    assert door.read("audit -o json", who="vera").code == 0
    refused = door.act("vera", "redeploy shop api --env staging")
    assert refused.err.splitlines()[0] == (
        "error: vera may not redeploy in shop/staging: needs the deploy grant or the admin "
        "role (vera is a viewer)"
    )
    refused = door.act("bob", "grant add vera deploy --project shop")
    assert refused.err.splitlines()[0] == "error: vera is a viewer, and a viewer holds no grants"
    # A member deploys in an unprotected environment without a grant.
    assert door.act("carol", "redeploy shop api --env staging").code == 0


def test_tokens_have_a_name_an_expiry_and_a_last_use(door: Door, org: Nebula) -> None:
    created = door.act("carol", "token create --name ci --expires 30d -o json")
    assert created.code == 0, created.err
    token = created.json
    assert (token["member"], token["name"], token["role"]) == ("carol", "ci", "member")
    assert token["expires_at"] is not None and token["token"].startswith("nbl_")
    mine = door.read("token list -o json", who="carol").json["tokens"]
    assert token["token"] not in door.read("token list -o wide", who="carol").out
    assert {t["member"] for t in mine} == {"carol"}, "a member lists only their own tokens"
    everyone = door.read("token list -o json", who="bob").json["tokens"]
    assert {t["member"] for t in everyone} >= {"carol"}
    assert set(everyone[0]) >= {
        "id",
        "member",
        "role",
        "name",
        "created_at",
        "expires_at",
        "last_used_at",
    }
    # A token is its member: nobody, an admin included, makes one for someone else (it would
    # be acting as them, and deciding their approvals).
    refused = door.act("bob", "token create --member alice")
    assert refused.code == 2 and "unrecognized arguments: --member alice" in refused.err


def test_an_expired_token_is_refused(nebula: Nebula) -> None:
    nebula.ok("member add alice --role owner")
    text = nebula.ok("token create --as alice --expires 1h").out.strip()
    with nebula.ctx.db.transaction() as session:
        assert people.bearer(session, nebula.clock, text) == "alice"
    nebula.clock.advance(timedelta(hours=1).total_seconds())
    with nebula.ctx.db.transaction() as session, pytest.raises(UnauthorizedError) as refused:
        people.bearer(session, nebula.clock, text)
    assert refused.value.message == "token expired"


def test_an_administrator_s_acts_print_the_same_through_either_door(
    door: Door, org: Nebula, git_repo: GitRepo
) -> None:
    """What bob (an admin) does, and what each act prints, whichever door he comes through."""
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    said = [
        (f"project add shop --repo {git_repo.url}", f"project shop watches {git_repo.url} (main, nebula.toml)\n"),
        ("project set shop concurrency 3", "shop: concurrency = 3\n"),
        ("policy set rollbacks_skip_approval true", "rollbacks_skip_approval = true\n"),
        ("freeze add --days sun --from 01:00 --to 02:00", "freeze 1: sun 01:00-02:00 UTC\n"),
        ("freeze remove 1", "freeze 1 removed\n"),
    ]  # fmt: skip
    for command, printed in said:
        done = door.act("bob", command)
        assert (done.code, done.out, done.err) == (0, printed, ""), command
    org.settle()
    said = [
        ("service set shop api --env production skip_production_approval true",
         "shop/production/api: skip_production_approval = true\n"),
        ("suspend shop --env production --reason 'incident 42'", "shop/production suspended: incident 42\n"),
        ("resume shop --env production", "shop/production resumed\n"),
        ("member set carol --role viewer", "member carol is viewer\n"),
        ("member remove carol", "member carol removed\n"),
    ]  # fmt: skip
    for command, printed in said:
        done = door.act("bob", command)
        assert (done.code, done.out.splitlines()[0], done.err) == (0, printed.strip(), ""), command
    pending = next(c for c in org.changesets() if c["state"] == "pending-approval")
    discarded = door.act("bob", f"changeset discard {pending['id']}")
    assert discarded.out == f"change set {pending['id']} discarded\n"
    removed = door.act("bob", "project remove shop --yes -o json")
    assert removed.json == {"project": "shop", "forgotten": True, "pending_teardown": []}
    assert {actor for actor, _, _ in _audit(org)} == {"bob"}, "every act audited as bob"
