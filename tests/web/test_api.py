"""The JSON API: the same documents as ``nebula ... --json``, and its errors' bodies."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.web.conftest import Shop
from tests.web.world import API_NEXT, CANARY, shop_toml


def _approval_id(shop: Shop) -> str:
    pending = [a for a in shop.nebula.approvals() if a["state"] == "pending"]
    assert len(pending) == 1, pending
    return str(pending[0]["id"])


# -- reads mirror the CLI -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("status shop", "/api/v1/status?project=shop"),
        ("status", "/api/v1/status"),
        ("status shop --env production", "/api/v1/projects/shop/status?env=production"),
        ("deployments shop", "/api/v1/deployments?project=shop"),
        (
            "deployments shop --env staging --service api",
            "/api/v1/deployments?project=shop&env=staging&service=api",
        ),
        ("changesets shop", "/api/v1/changesets?project=shop"),
        ("changesets --state pending-approval", "/api/v1/changesets?state=pending-approval"),
        ("approvals", "/api/v1/approvals"),
        ("approvals shop --state pending", "/api/v1/approvals?project=shop&state=pending"),
    ],
)
def test_a_listing_is_what_the_cli_prints(
    shop: Shop, live: httpx.Client, command: str, path: str
) -> None:
    answer = live.get(path)

    assert answer.status_code == 200
    assert answer.json() == shop.nebula.json(command)


def test_one_deployment_comes_with_its_events_as_the_cli_shows_it(
    shop: Shop, live: httpx.Client
) -> None:
    first = shop.nebula.deployments()[0]

    answer = live.get(f"/api/v1/deployments/{first['id']}").json()

    assert answer == shop.nebula.json(f"deployment show {first['id']}")
    events = answer["deployment"]["events"]
    assert [e["state"] for e in events if e["kind"] == "deployment"][-1] == "healthy"
    assert set(events[0]) >= {"at", "state", "message", "actor"}


def test_one_change_set_comes_with_its_lines(shop: Shop, live: httpx.Client) -> None:
    changeset = shop.nebula.changesets()[-1]

    answer = live.get(f"/api/v1/changesets/{changeset['id']}").json()

    assert answer == shop.nebula.json(f"changeset show {changeset['id']}")
    assert {(line["service"], line["field"]) for line in answer["changeset"]["lines"]} >= {
        ("api", "first_deploy"),
        ("db", "first_deploy"),
    }


def test_projects_list_the_cli_fields_and_when_they_poll(shop: Shop, live: httpx.Client) -> None:
    [cli] = shop.nebula.json("project list")["projects"]

    [project] = live.get("/api/v1/projects").json()["projects"]
    one = live.get("/api/v1/projects/shop").json()["project"]

    assert {k: project[k] for k in cli} == cli
    assert project == one
    assert project["last_polled_at"].endswith("Z")
    assert project["next_poll_at"] > project["last_polled_at"]


def test_an_approval_by_id(shop: Shop, live: httpx.Client) -> None:
    approval_id = _approval_id(shop)

    answer = live.get(f"/api/v1/approvals/{approval_id}").json()

    assert answer["approval"]["state"] == "pending"
    assert answer["approval"]["requested_by"] == "shop"
    assert answer["approval"]["target"] == "changeset"


def test_no_answer_holds_a_secret_value(shop: Shop, live: httpx.Client) -> None:
    paths = ["/api/v1/status", "/api/v1/deployments", "/api/v1/changesets", "/api/v1/approvals"]
    paths += [f"/api/v1/deployments/{d['id']}" for d in shop.nebula.deployments()]

    for path in paths:
        assert CANARY not in live.get(path).text, path


# -- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "code", "message"),
    [
        ("/api/v1/projects/nope", 404, "not-found", "No project named 'nope'"),
        ("/api/v1/status?project=nope", 404, "not-found", "No project named 'nope'"),
        (
            "/api/v1/status?project=shop&env=qa",
            404,
            "not-found",
            "Project 'shop' has no environment 'qa'",
        ),
        ("/api/v1/deployments/999", 404, "not-found", "No deployment 999"),
        (
            "/api/v1/deployments/abc",
            404,
            "not-found",
            "No deployment 'abc': deployment ids are numbers",
        ),
        ("/api/v1/changesets/999", 404, "not-found", "No change set 999"),
        ("/api/v1/approvals/999", 404, "not-found", "No approval 999"),
        ("/api/v1/nothing-here", 404, "no-route", "Nothing at /api/v1/nothing-here"),
    ],
)
def test_what_does_not_exist_is_a_404_with_a_json_body(
    shop: Shop, live: httpx.Client, path: str, status: int, code: str, message: str
) -> None:
    answer = live.get(path)

    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["code"] == code
    assert answer.json()["error"].startswith(message)


@pytest.mark.parametrize(
    ("path", "mentions"),
    [
        ("/api/v1/approvals?state=bogus", "query.state"),
        ("/api/v1/deployments?limit=0", "query.limit"),
        ("/api/v1/status?project=Not%20A%20Slug", "query.project"),
    ],
)
def test_bad_input_is_a_422_naming_the_parameter(
    live: httpx.Client, path: str, mentions: str
) -> None:
    answer = live.get(path)

    assert answer.status_code == 422
    assert answer.json()["code"] == "invalid-request"
    assert mentions in answer.json()["error"]


def test_a_write_without_a_token_is_401_and_changes_nothing(shop: Shop, live: httpx.Client) -> None:
    approval_id = _approval_id(shop)

    answer = live.post(f"/api/v1/approvals/{approval_id}/approve")

    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.json() == {"error": "Missing bearer token", "hint": None, "code": "unauthorized"}
    assert live.get(f"/api/v1/approvals/{approval_id}").json()["approval"]["state"] == "pending"


@pytest.mark.parametrize(
    "header",
    ["Bearer nbl_00000000_notarealtokennotarealtoken", "Bearer garbage", "Basic YWxpY2U6eA=="],
)
def test_a_bad_token_is_401(shop: Shop, live: httpx.Client, header: str) -> None:
    answer = live.post(
        "/api/v1/projects/shop/services/api/redeploy",
        json={"environment": "staging"},
        headers={"Authorization": header},
    )

    assert answer.status_code == 401
    assert answer.json()["code"] == "unauthorized"


def test_the_token_is_checked_before_anything_is_looked_up(live: httpx.Client) -> None:
    answer = live.post("/api/v1/approvals/999/approve")

    assert answer.status_code == 401


def test_a_member_cannot_decide_403(shop: Shop, live: httpx.Client) -> None:
    approval_id = _approval_id(shop)

    answer = live.post(
        f"/api/v1/approvals/{approval_id}/approve", headers=shop.tokens.header("bob")
    )

    assert answer.status_code == 403
    assert answer.json() == {
        "error": "bob may not approve in shop/production: needs the approve grant or the admin "
        "role",
        "hint": "an admin can grant it: nebula grant add bob approve --project shop --env "
        "production",
        "code": "forbidden",
    }
    assert live.get(f"/api/v1/approvals/{approval_id}").json()["approval"]["state"] == "pending"


def test_an_admin_token_approves_and_the_decision_is_recorded_under_its_member(
    shop: Shop, live: httpx.Client
) -> None:
    approval_id = _approval_id(shop)

    answer = live.post(
        f"/api/v1/approvals/{approval_id}/approve", headers=shop.tokens.header("alice")
    )

    assert answer.status_code == 200
    approval = answer.json()["approval"]
    assert (approval["state"], approval["decided_by"], approval["decided_via"]) == (
        "approved",
        "alice",
        "api",
    )
    shop.nebula.settle()
    production = live.get("/api/v1/status?project=shop&env=production").json()
    assert {
        u["active_release"] for u in production["projects"][0]["environments"][0]["services"]
    } == {"r-1"}


def test_deciding_twice_is_409(shop: Shop, live: httpx.Client) -> None:
    approval_id = _approval_id(shop)
    live.post(
        f"/api/v1/approvals/{approval_id}/reject",
        headers=shop.tokens.header("olga"),
        json={"reason": "not today"},
    )

    answer = live.post(
        f"/api/v1/approvals/{approval_id}/approve", headers=shop.tokens.header("alice")
    )

    assert answer.status_code == 409
    assert answer.json()["code"] == "conflict"
    assert answer.json()["error"].startswith(f"Approval {approval_id} is already rejected by olga")


def test_reject_records_the_reason_and_ends_the_change_set(shop: Shop, live: httpx.Client) -> None:
    approval_id = _approval_id(shop)

    answer = live.post(
        f"/api/v1/approvals/{approval_id}/reject",
        headers=shop.tokens.header("alice"),
        json={"reason": "wrong image"},
    )

    assert answer.status_code == 200
    assert (answer.json()["approval"]["state"], answer.json()["approval"]["reason"]) == (
        "rejected",
        "wrong image",
    )
    changeset = live.get(f"/api/v1/changesets/{answer.json()['approval']['target_id']}").json()[
        "changeset"
    ]
    assert changeset["state"] == "rejected"


def test_redeploy_starts_a_new_release_in_an_unprotected_environment(
    shop: Shop, live: httpx.Client
) -> None:
    answer = live.post(
        "/api/v1/projects/shop/services/api/redeploy",
        json={"environment": "staging"},
        headers=shop.tokens.header("bob"),
    )

    assert answer.status_code == 200
    body = answer.json()
    assert (body["deployment"]["release"], body["deployment"]["state"]) == ("r-2", "pending")
    assert body["deployment"]["requested_by"] == "bob"
    assert body["approval"] is None
    shop.nebula.settle()
    assert shop.nebula.unit("staging", "api")["active_release"] == "r-2"


def test_env_is_accepted_for_environment_as_the_cli_spells_it(
    shop: Shop, live: httpx.Client
) -> None:
    answer = live.post(
        "/api/v1/projects/shop/services/api/redeploy",
        json={"env": "staging"},
        headers=shop.tokens.header("bob"),
    )
    assert answer.status_code == 200
    assert answer.json()["deployment"]["environment"] == "staging"


def test_rollback_to_a_retained_release(shop: Shop, live: httpx.Client) -> None:
    shop.push(shop_toml(api_image=API_NEXT))
    shop.nebula.settle()

    answer = live.post(
        "/api/v1/projects/shop/services/api/rollback",
        json={"environment": "staging", "to": "r-1"},
        headers=shop.tokens.header("bob"),
    )

    assert answer.status_code == 200
    assert (answer.json()["deployment"]["kind"], answer.json()["deployment"]["release"]) == (
        "rollback",
        "r-1",
    )


def test_promote_in_a_protected_environment_waits_for_approval(
    shop: Shop, live: httpx.Client
) -> None:
    live.post(
        f"/api/v1/approvals/{_approval_id(shop)}/approve", headers=shop.tokens.header("alice")
    )
    shop.nebula.settle()
    shop.push(shop_toml(api_image=API_NEXT, production=True))
    shop.nebula.settle()  # staging runs the new image; production's change set waits
    for pending in [a for a in shop.nebula.approvals() if a["state"] == "pending"]:
        shop.nebula.ok(f"reject {pending['id']} --as alice")

    promote = {"from": "staging", "to": "production"}
    path = "/api/v1/projects/shop/services/api/promote"
    refused = live.post(path, json=promote, headers=shop.tokens.header("bob"))
    assert refused.status_code == 403, "a member holds no deploy grant in production"
    shop.nebula.ok("grant add bob deploy --project shop --env production --as olga")

    answer = live.post(path, json=promote, headers=shop.tokens.header("bob"))

    assert answer.status_code == 200
    body = answer.json()
    assert (body["deployment"]["kind"], body["deployment"]["state"]) == (
        "promote",
        "awaiting-approval",
    )
    assert body["deployment"]["image"] == API_NEXT
    assert (body["approval"]["state"], body["approval"]["requested_by"]) == ("pending", "bob")


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        (
            "/api/v1/projects/shop/services/api/rollback",
            {"environment": "staging"},
            409,
            "api in staging has no earlier release to roll back to",
        ),
        (
            "/api/v1/projects/shop/services/api/rollback",
            {"environment": "staging", "to": "r-9"},
            404,
            "api in staging has no release r-9",
        ),
        (
            "/api/v1/projects/shop/services/nope/redeploy",
            {"environment": "staging"},
            404,
            "No service 'nope' in shop/staging",
        ),
        (
            "/api/v1/projects/shop/services/api/redeploy",
            {"environment": "production"},
            409,
            "Cannot redeploy api in production: it has never had a healthy release",
        ),
        (
            "/api/v1/projects/shop/services/api/redeploy",
            {},
            422,
            "body.environment: Field required",
        ),
        (
            "/api/v1/projects/shop/services/api/redeploy",
            {"environment": "staging", "extra": 1},
            422,
            "body.extra: Extra inputs are not permitted",
        ),
        (
            "/api/v1/projects/shop/services/api/rollback",
            {"environment": "staging", "to": "latest"},
            422,
            "body.to: String should match pattern",
        ),
        (
            "/api/v1/projects/shop/services/api/promote",
            {"from": "staging"},
            422,
            "body.to: Field required",
        ),
        (
            "/api/v1/projects/shop/services/api/promote",
            {"from": "staging", "to": "staging"},
            409,
            "Cannot promote api from staging to itself: --from and --to must be different "
            "environments",
        ),
    ],
)
def test_refused_and_invalid_requests(
    shop: Shop, live: httpx.Client, path: str, body: dict[str, Any], status: int, message: str
) -> None:
    # alice, an admin: she may deploy anywhere, so what is refused is the request itself.
    answer = live.post(path, json=body, headers=shop.tokens.header("alice"))

    assert answer.status_code == status, answer.text
    assert answer.json()["error"].startswith(message)


def test_cancel_a_deployment_that_has_not_taken_traffic(shop: Shop, live: httpx.Client) -> None:
    redeploy = live.post(
        "/api/v1/projects/shop/services/api/redeploy",
        json={"environment": "staging"},
        headers=shop.tokens.header("bob"),
    ).json()
    deployment_id = redeploy["deployment"]["id"]

    answer = live.post(
        f"/api/v1/deployments/{deployment_id}/cancel", headers=shop.tokens.header("bob")
    )
    again = live.post(
        f"/api/v1/deployments/{deployment_id}/cancel", headers=shop.tokens.header("bob")
    )

    assert answer.status_code == 200
    assert (answer.json()["deployment"]["state"], answer.json()["deployment"]["message"]) == (
        "cancelled",
        "Cancelled by bob",
    )
    assert again.status_code == 409
    assert again.json() == {
        "code": "conflict",
        "error": f"Deployment {deployment_id} has already ended (cancelled)",
        "hint": None,
    }
