"""``POST /hooks/git/{project}`` as each forge calls it: signed pushes poll at once; replays,
pings, tags and other branches do nothing; a bad signature is refused naming its header;
unsigned notifications (a project without a secret) are coalesced to one poll per
``webhook_limit``."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from fixtures import loading
from reconciler import scheduling
from reconciler.store import schema
from reconciler.web.hooks import signature
from tests.web.conftest import Shop
from tests.web.senders import GITHUB, GITLAB, IDS, PINGING, SENDERS, Sender
from tests.web.world import API_NEXT, eventually, shop_toml

SECRET = "hook-secret-5e1b"


def _changesets(live: httpx.Client) -> list[dict[str, object]]:
    return live.get("/api/v1/changesets?project=shop").json()["changesets"]  # type: ignore[no-any-return]


def _project(live: httpx.Client) -> dict[str, object]:
    return live.get("/api/v1/projects/shop").json()["project"]  # type: ignore[no-any-return]


def _last_polled(live: httpx.Client) -> object:
    return _project(live)["last_polled_at"]


def _deliveries(shop: Shop) -> list[str]:
    with shop.nebula.ctx.db.transaction() as session:
        return sorted(d.delivery_id for d in session.query(schema.WebhookDelivery))


def _send(live: httpx.Client, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return live.post("/hooks/git/shop", content=body, headers=headers)


def _receipt(
    sender: Sender, delivery: str | None, status: str, reason: str | None = None
) -> dict[str, object]:
    return {
        "project": "shop",
        "forge": sender.forge,
        "delivery": delivery,
        "status": status,
        "reason": reason,
    }


@pytest.fixture
def secured(shop: Shop) -> Shop:
    shop.nebula.ok(f"project set shop webhook_secret {SECRET}")
    shop.nebula.clock.advance(30)  # a poll from now on changes last_polled_at
    return shop


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_signed_push_polls_at_once_and_its_replay_does_nothing(
    secured: Shop, live: httpx.Client, sender: Sender
) -> None:
    before = len(_changesets(live))
    secured.push(shop_toml(api_image=API_NEXT), "New api image")
    body = sender.body()
    headers = sender.headers(body, secret=SECRET, delivery="d-1")

    answer = _send(live, body, headers)

    assert (answer.status_code, answer.json()) == (202, _receipt(sender, "d-1", "polling"))
    staged = eventually(lambda: _changesets(live)[before:], timeout=10, what="a change set staged")
    assert {c["message"] for c in staged} == {"New api image"}
    assert _deliveries(secured) == ["d-1"]

    polled = _last_polled(live)
    secured.nebula.clock.advance(30)
    secured.push(shop_toml(), "Pushed again")
    replay = _send(live, body, headers)

    assert (replay.status_code, replay.json()) == (200, _receipt(sender, "d-1", "duplicate"))
    assert _last_polled(live) == polled
    assert len(_changesets(live)) == before + len(staged)


@pytest.mark.parametrize("sender", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_one_push_to_a_repository_two_projects_track_polls_both(
    secured: Shop, live: httpx.Client, sender: Sender
) -> None:
    """A forge gives a push one delivery id for every hook it sets off (GitHub's is shared by
    all the event's deliveries): a replay is per project, so the second project polls too."""
    secured.nebula.ok(f"project add shop2 --repo {secured.repo.url}")
    secured.nebula.ok(f"project set shop2 webhook_secret {SECRET}")
    body = sender.body()
    headers = sender.headers(body, secret=SECRET, delivery="d-shared")

    first = live.post("/hooks/git/shop", content=body, headers=headers)
    second = live.post("/hooks/git/shop2", content=body, headers=headers)
    again = live.post("/hooks/git/shop2", content=body, headers=headers)

    assert (first.status_code, first.json()["status"]) == (202, "polling")
    assert (second.status_code, second.json()) == (
        202,
        {**_receipt(sender, "d-shared", "polling"), "project": "shop2"},
    )
    assert (again.status_code, again.json()["status"]) == (200, "duplicate")


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("signed", ["wrong", "missing"])
def test_a_bad_signature_is_401_naming_the_header_and_changes_nothing(
    secured: Shop, live: httpx.Client, sender: Sender, signed: str
) -> None:
    before = _last_polled(live)
    secured.push(shop_toml(api_image=API_NEXT))
    body = sender.body()
    secret = "another secret" if signed == "wrong" else None

    answer = _send(live, body, sender.headers(body, secret=secret, delivery="d-1"))

    what = f"The {sender.signature_header} {sender.noun}"
    assert answer.status_code == 401
    assert answer.json() == {
        "code": "unauthorized",
        "error": f"{what} does not match this project's webhook secret"
        if signed == "wrong"
        else f"{what} is missing, and this project has a webhook secret",
        "hint": "set the same secret on the git host and with: nebula project set shop webhook_secret",
    }
    assert _deliveries(secured) == []
    assert _last_polled(live) == before


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("refs/heads/feature/x", "a push to refs/heads/feature/x, not to the tracked branch main"),
        ("refs/tags/v1.2.0", "a tag push (refs/tags/v1.2.0); the tracked branch main did not move"),
    ],
    ids=["other-branch", "tag"],
)
def test_a_push_of_another_branch_or_a_tag_is_ignored(
    secured: Shop, live: httpx.Client, sender: Sender, ref: str, reason: str
) -> None:
    before = _last_polled(live)
    secured.push(shop_toml(api_image=API_NEXT))
    body = sender.body(ref)
    events = {"X-Gitlab-Event": "Tag Push Hook"} if sender is GITLAB and "tags" in ref else None

    answer = _send(live, body, sender.headers(body, secret=SECRET, delivery="d-2", events=events))

    assert (answer.status_code, answer.json()) == (200, _receipt(sender, "d-2", "ignored", reason))
    assert _deliveries(secured) == []
    assert _last_polled(live) == before


def test_gitlab_s_own_tag_push_payload_is_ignored(secured: Shop, live: httpx.Client) -> None:
    body = loading.webhook("gitlab-tag-push")
    headers = GITLAB.headers(body, secret=SECRET, events={"X-Gitlab-Event": "Tag Push Hook"})

    answer = _send(live, body, headers)

    assert answer.status_code == 200
    assert answer.json()["reason"] == (
        "a tag push (refs/tags/v1.0.0); the tracked branch main did not move"
    )


@pytest.mark.parametrize("sender", PINGING, ids=[s.forge for s in PINGING])
def test_a_ping_is_answered_without_polling(
    secured: Shop, live: httpx.Client, sender: Sender
) -> None:
    assert sender.ping is not None
    before = _last_polled(live)
    body = loading.webhook(sender.ping.fixture)
    headers = sender.headers(body, secret=SECRET, delivery="p-1", events=sender.ping.events)

    answer = _send(live, body, headers)

    assert (answer.status_code, answer.json()) == (
        200,
        _receipt(sender, "p-1", "ignored", sender.ping.reason),
    )
    assert _deliveries(secured) == []
    assert _last_polled(live) == before


def test_an_unknown_project_is_404(live: httpx.Client) -> None:
    answer = live.post("/hooks/git/nope", content=b"{}")

    assert answer.status_code == 404
    assert answer.json()["error"] == "No project named 'nope'"


def test_notifications_are_counted_in_the_metrics(secured: Shop, live: httpx.Client) -> None:
    body = GITHUB.body()
    _send(live, body, GITHUB.headers(body, secret=SECRET, delivery="d-1"))
    _send(live, body, GITHUB.headers(body, secret=SECRET, delivery="d-1"))
    _send(live, body, GITHUB.headers(body, secret="wrong", delivery="d-2"))
    other = GITHUB.body("refs/heads/other")
    _send(live, other, GITHUB.headers(other, secret=SECRET, delivery="d-3"))

    metrics = live.get("/metrics").text

    assert 'nebula_webhooks_total{outcome="polling",project="shop"} 1.0' in metrics
    assert 'nebula_webhooks_total{outcome="duplicate",project="shop"} 1.0' in metrics
    assert 'nebula_webhooks_total{outcome="unauthorized",project="shop"} 1.0' in metrics
    assert 'nebula_webhooks_total{outcome="ignored",project="shop"} 1.0' in metrics


# -- projects without a secret: anyone may notify, at most one poll per webhook_limit ------


def _unsigned(live: httpx.Client, delivery: str | None) -> httpx.Response:
    body = GITHUB.body()
    return _send(live, body, GITHUB.headers(body, secret=None, delivery=delivery))


def test_a_project_without_a_secret_takes_an_unsigned_push(shop: Shop, live: httpx.Client) -> None:
    before = len(_changesets(live))
    shop.push(shop_toml(api_image=API_NEXT), "Unsigned")

    answer = _unsigned(live, None)

    assert (answer.status_code, answer.json()) == (202, _receipt(GITHUB, None, "polling"))
    eventually(lambda: _changesets(live)[before:], timeout=10, what="a change set staged")


def test_a_flood_of_unsigned_notifications_polls_once_per_limit(
    shop: Shop, live: httpx.Client
) -> None:
    """Issue 18: 500 distinct delivery ids made 500 rows and 516 remote calls."""
    first = shop.nebula.clock.now()

    answers = [_unsigned(live, f"flood-{n}") for n in range(40)]

    assert [(a.status_code, a.json()["status"]) for a in answers] == [(202, "polling")] + [
        (202, "coalesced")
    ] * 39
    slot = first + timedelta(seconds=10)
    assert answers[1].json()["reason"] == (
        "unsigned push notifications poll shop at most once every 10s; the poll at "
        f"{slot.strftime('%Y-%m-%dT%H:%M:%SZ')} covers this one"
    )
    assert {a.json()["reason"] for a in answers[1:]} == {answers[1].json()["reason"]}
    assert _deliveries(shop) == ["flood-0"]
    assert _project(live)["next_poll_at"] == slot.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_coalesced_poll_runs_when_the_window_ends(shop: Shop, live: httpx.Client) -> None:
    shop.nebula.clock.advance(30)
    now = shop.nebula.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _unsigned(live, "a").json()["status"] == "polling"
    eventually(lambda: _last_polled(live) == now, what="the notification's poll")
    assert _unsigned(live, "b").json()["status"] == "coalesced"
    scheduler = scheduling.Scheduler(shop.nebula.ctx)

    shop.nebula.clock.advance(9)
    early = scheduler.poll_due()
    shop.nebula.clock.advance(1)
    due = scheduler.poll_due()

    assert (early.polled, due.polled) == (0, 1)
    assert _unsigned(live, "c").json()["status"] == "coalesced"  # the next window


def test_a_limit_of_zero_polls_every_unsigned_notification(shop: Shop, live: httpx.Client) -> None:
    shop.nebula.ok("project set shop webhook_limit 0")

    statuses = [_unsigned(live, f"d-{n}").json()["status"] for n in range(3)]

    assert statuses == ["polling"] * 3
    assert _project(live)["webhook_limit"] is None


def test_signed_notifications_are_never_coalesced(secured: Shop, live: httpx.Client) -> None:
    body = GITHUB.body()

    statuses = [
        _send(live, body, GITHUB.headers(body, secret=SECRET, delivery=f"s-{n}")).json()["status"]
        for n in range(3)
    ]

    assert statuses == ["polling"] * 3


def test_signature_is_github_s_header_value() -> None:
    assert signature("It's a Secret to Everybody", b"Hello, World!") == (
        # The example of docs.github.com "Validating webhook deliveries".
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_the_status_page_warns_about_a_project_without_a_secret(
    shop: Shop, live: httpx.Client
) -> None:
    assert "need no signature" in live.get("/").text
    project = live.get("/projects/shop").text
    assert (
        "Push notifications to this project need no signature: anyone who can reach "
        "<code>/hooks/git/shop</code> can make it poll (at most once every 10 s)."
    ) in project

    shop.nebula.ok(f"project set shop webhook_secret {SECRET}")

    assert "need no signature" not in live.get("/").text
    assert "need no signature" not in live.get("/projects/shop").text


def test_the_longest_limit_coalesces_without_overflowing(shop: Shop, live: httpx.Client) -> None:
    """Issue 26: ``webhook_limit 999999999d`` was taken, and every unsigned notification after
    the first was a 500 (the window's end past the last date). The longest limit now is ten
    years: refused past it, and the window's end a date within it."""
    too_long = shop.nebula.cli("project set shop webhook_limit 999999999d")
    assert too_long.code == 1 and "longer than 10 years" in too_long.err
    shop.nebula.ok("project set shop webhook_limit 3650d")

    answers = [_unsigned(live, f"long-{n}") for n in range(3)]

    assert [(a.status_code, a.json()["status"]) for a in answers] == [(202, "polling")] + [
        (202, "coalesced")
    ] * 2
