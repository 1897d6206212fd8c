"""Administrative commands and the audit trail: every act an event with its actor and time
(``nebula audit``, ``-o json``, ``GET /api/v1/audit``), tokens listed without themselves and
revoked, secrets by name only, a project removed (torn down, forgotten, its events kept)."""

from __future__ import annotations

import io
import sys
from datetime import timedelta

import pytest

from fixtures import loading
from reconciler.runtimes import simulated
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

SHOP = loading.project("storefront")


def _audit(nebula: Nebula, extra: str = "") -> list[dict[str, str]]:
    return nebula.json(f"audit {extra}".strip())["events"]  # type: ignore[no-any-return]


def test_every_administrative_act_is_an_audit_event_with_its_actor(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    nebula.ok("member add alice --role owner")
    nebula.ok("member add bob --role member --as alice")
    nebula.ok("member add bob --role admin --as alice")
    nebula.ok("token create --as bob")
    nebula.ok("token revoke 1 --as alice")
    nebula.ok("policy set forbid_self_approval false --as alice")
    nebula.ok("freeze add --days sat,sun --from 00:00 --to 24:00 --as alice")
    nebula.ok("freeze remove 1 --as alice")
    nebula.ok(f"project add shop --repo {git_repo.url} --as alice")
    nebula.ok("project set shop webhook_secret s3cr3t-hook-value --as alice")
    nebula.settle()
    nebula.ok("service set shop api --env production skip_production_approval true --as bob")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    secret = nebula.cli("secret set shop staging STRIPE_KEY --as alice")
    assert (secret.code, secret.err.splitlines()[0]) == (1, "error: no secret value given")
    nebula.ok("member remove bob --as alice")
    events = _audit(nebula)
    assert [(e["actor"], e["action"], e["target"], e["message"]) for e in events] == [
        ("local-admin", "member.add", "member alice", "Added alice as owner"),
        ("alice", "member.add", "member bob", "Added bob as member"),
        ("alice", "member.role", "member bob", "Role of bob: member -> admin"),
        ("bob", "token.create", "token 1", "API token 1 created for bob"),
        ("alice", "token.revoke", "token 1", "API token 1 of bob revoked"),
        (
            "alice",
            "policy.set",
            "policy forbid_self_approval",
            "forbid_self_approval: true -> false",
        ),
        ("alice", "freeze.add", "freeze 1", "Freeze sat,sun 00:00-24:00 UTC"),
        ("alice", "freeze.remove", "freeze 1", "Removed freeze window 1"),
        (
            "alice",
            "project.add",
            "project shop",
            f"Registered shop: {git_repo.url} (main, nebula.toml)",
        ),
        ("alice", "project.set", "project shop", "webhook_secret = ***"),
        (
            "bob",
            "service.set",
            "shop/production/api",
            "skip_production_approval = true",
        ),
        (
            "alice",
            "member.remove",
            "member bob",
            "Removed bob (admin), their API tokens and grants",
        ),
    ]
    times = [e["at"] for e in events]
    assert times == sorted(times) and all(t.endswith("Z") for t in times)
    table = nebula.ok("audit").out.splitlines()
    assert table[0].split() == ["AT", "ACTOR", "ACTION", "TARGET", "MESSAGE"]
    assert "s3cr3t-hook-value" not in nebula.ok("audit -o wide").out


def test_a_secret_is_audited_by_name_never_by_value(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    nebula.ok("member add alice --role owner")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    monkeypatch.setattr(sys, "stdin", io.StringIO("sk_live_hunter2hunter2\n"))
    assert nebula.ok("secret set shop staging STRIPE_KEY --as alice").out == (
        "secret STRIPE_KEY set for shop/staging\n"
    )
    assert nebula.ok("secret delete shop staging STRIPE_KEY --as alice").out == (
        "secret STRIPE_KEY deleted from shop/staging\n"
    )
    secret_events = [e for e in _audit(nebula) if e["action"].startswith("secret.")]
    assert [(e["action"], e["target"], e["message"]) for e in secret_events] == [
        ("secret.set", "shop/staging STRIPE_KEY", "Secret STRIPE_KEY set (value not recorded)"),
        ("secret.delete", "shop/staging STRIPE_KEY", "Secret STRIPE_KEY deleted"),
    ]
    assert "hunter2" not in nebula.ok("audit -o yaml").out
    missing = nebula.cli("secret delete shop staging STRIPE_KEY")
    assert (missing.code, missing.err) == (
        1,
        "error: No secret STRIPE_KEY in staging\nhint: list them with: nebula secret list SLUG ENV\n",
    )


def test_audit_since_keeps_only_the_recent_acts(nebula: Nebula) -> None:
    nebula.ok("member add alice --role owner")
    nebula.clock.advance(timedelta(hours=30).total_seconds())
    nebula.ok("member add bob --role admin --as alice")
    assert [e["target"] for e in _audit(nebula, "--since 24h")] == ["member bob"]
    assert len(_audit(nebula, "--since 2d")) == 2
    bad = nebula.cli("audit --since yesterday")
    assert bad.code == 2


def test_tokens_are_listed_without_the_token_and_a_revoked_one_is_refused(
    nebula: Nebula,
) -> None:
    nebula.ok("member add alice --role owner")
    nebula.ok("member add bob --role admin")
    token = nebula.ok("token create --as bob").out.strip()
    nebula.ok("token create --as alice")
    listing = nebula.ok("token list")
    lines = listing.out.splitlines()
    assert lines[0].split() == [
        "ID",
        "MEMBER",
        "ROLE",
        "NAME",
        "CREATED",
        "EXPIRES",
        "LAST",
        "USED",
    ]
    assert lines[1].split()[:3] == ["1", "bob", "admin"] and lines[1].endswith("never")
    assert lines[2].split()[:3] == ["2", "alice", "owner"]
    assert token not in listing.out and token.split("_", 2)[2] not in listing.out
    data = nebula.json("token list")["tokens"]
    assert set(data[0]) == {
        "id",
        "member",
        "role",
        "name",
        "created_at",
        "expires_at",
        "last_used_at",
    }
    assert nebula.ok("token revoke 1 --as alice").out == "token 1 of bob revoked\n"
    assert [t["id"] for t in nebula.json("token list")["tokens"]] == ["2"]
    missing = nebula.cli("token revoke 1")
    assert (missing.code, missing.err) == (
        1,
        "error: No token 1\nhint: list them with: nebula token list\n",
    )
    from reconciler.errors import UnauthorizedError

    with nebula.ctx.db.transaction() as session, pytest.raises(UnauthorizedError):
        people.bearer(session, nebula.clock, token)


def test_removing_a_project_tears_down_every_environment_and_forgets_it(
    nebula_any_db: Nebula, git_repo: GitRepo
) -> None:
    nebula = nebula_any_db
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    nebula.ok("member add alice --role owner")
    nebula.ok("member add carol --role member")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    nebula.ok("approve 1 --as alice")
    nebula.settle()
    refused = nebula.cli("project remove shop --yes --as carol")
    assert (refused.code, refused.err) == (
        1,
        "error: carol may not remove projects: needs the admin role (carol is a member)\n",
    )
    removed = nebula.ok("project remove shop --yes --as alice")
    assert removed.out == "project shop torn down and removed\n"
    assert nebula.json("project list")["projects"] == []
    gone = nebula.cli("status shop")
    assert (gone.code, gone.err.splitlines()[0]) == (1, "error: No project named 'shop'")
    actions = [(e["action"], e["target"], e["actor"]) for e in _audit(nebula)]
    assert actions[-2:] == [
        ("project.remove", "project shop", "alice"),
        ("project.forgotten", "project shop", "alice"),
    ]
    assert _audit(nebula)[-2]["message"] == ("Removing shop: tearing down staging, production")
    # Its deployment events are kept too, no longer tied to rows that are gone.
    assert any(e.kind == "deployment" and e.project_id is None for e in nebula.events())
    # The slug can be registered again.
    nebula.ok(f"project add shop --repo {git_repo.url}")


def test_units_of_an_unreachable_cluster_wait_in_pending_teardown(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({"nebula.toml": SHOP}, "Shop")
    nebula.ok("member add alice --role owner")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    from reconciler.errors import TransientError

    def unreachable(self: object, namespace: str, name: str) -> object:
        raise TransientError("the cluster cannot be reached")

    monkeypatch.setattr(simulated.SimulatedCluster, "teardown", unreachable)
    waiting = nebula.ok("project remove shop --yes --as alice --json").json
    assert waiting["forgotten"] is False
    # Production's units never served (their first deploy waited for an approval): removing
    # the project discarded that change set, and with it them; only staging's wait.
    assert sorted(waiting["pending_teardown"]) == sorted(
        f"staging/{u}" for u in ("db", "api", "worker")
    )
    assert (
        nebula.ok("status shop").out.splitlines()[0].endswith("REMOVING (by alice): tearing down")
    )
    services = nebula.json("status shop")["projects"][0]["environments"][0]["services"]
    assert {s["status"] for s in services} == {"pending-teardown"}
    nebula.reconcile()  # still unreachable: still there, not polled
    assert [p["slug"] for p in nebula.json("project list")["projects"]] == ["shop"]
    monkeypatch.undo()
    nebula.reconcile()  # the cluster is back: torn down and forgotten
    assert nebula.json("project list")["projects"] == []
