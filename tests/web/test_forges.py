"""Reading push notifications (``web/forges.py``, pure): every forge's documented headers and
payload, recognised, verified and decided without a store or a server."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from fixtures import loading
from reconciler.web import forges
from tests.web.senders import BITBUCKET_CLOUD, GITHUB, GITLAB, IDS, PINGING, SENDERS, Sender

SECRET = "hook-secret-5e1b"


def _receive(
    sender: Sender,
    body: bytes,
    headers: dict[str, str],
    *,
    secret: str | None = SECRET,
    branch: str = "main",
) -> forges.Notification | forges.Refusal:
    lowered = {k.lower(): v for k, v in headers.items()}
    return forges.receive(lowered, body, secret=secret, branch=branch)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_documented_push_of_the_tracked_branch_polls(sender: Sender) -> None:
    body = sender.body()

    note = _receive(sender, body, sender.headers(body, secret=SECRET, delivery="d-1"))

    assert note == forges.Notification(
        forges.Forge(sender.forge), sender.event, "d-1", True, forges.Action.POLL
    )


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_wrong_signature_is_refused_naming_the_header(sender: Sender) -> None:
    body = sender.body()

    note = _receive(sender, body, sender.headers(body, secret="another secret"))

    assert isinstance(note, forges.Refusal)
    assert note.message == (
        f"The {sender.signature_header} {sender.noun} does not match this project's webhook secret"
    )


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_missing_signature_is_refused_naming_the_header(sender: Sender) -> None:
    body = sender.body()

    note = _receive(sender, body, sender.headers(body, secret=None))

    assert isinstance(note, forges.Refusal)
    assert note.message == (
        f"The {sender.signature_header} {sender.noun} is missing, and this project has a "
        "webhook secret"
    )


SIGNING = [s for s in SENDERS if s is not GITLAB]  # GitLab sends the secret, signing nothing


@pytest.mark.parametrize("sender", SIGNING, ids=[s.forge for s in SIGNING])
def test_a_body_changed_after_signing_is_refused(sender: Sender) -> None:
    body = sender.body()
    headers = sender.headers(body, secret=SECRET)

    note = _receive(sender, sender.body("refs/heads/evil"), headers)

    assert isinstance(note, forges.Refusal)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_push_of_another_branch_is_ignored(sender: Sender) -> None:
    body = sender.body("refs/heads/feature/x")

    note = _receive(sender, body, sender.headers(body, secret=SECRET))

    assert isinstance(note, forges.Notification)
    assert (note.action, note.reason) == (
        forges.Action.IGNORE,
        "a push to refs/heads/feature/x, not to the tracked branch main",
    )


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_tag_push_is_ignored(sender: Sender) -> None:
    if sender is GITLAB:  # its own event, and payload
        body = loading.webhook("gitlab-tag-push")
        headers = sender.headers(body, secret=SECRET, events={"X-Gitlab-Event": "Tag Push Hook"})
        tag = "refs/tags/v1.0.0"
    else:
        tag = "refs/tags/v1.2.0"
        body = sender.body(tag)
        headers = sender.headers(body, secret=SECRET)

    note = _receive(sender, body, headers)

    assert isinstance(note, forges.Notification)
    assert (note.action, note.reason) == (
        forges.Action.IGNORE,
        f"a tag push ({tag}); the tracked branch main did not move",
    )


@pytest.mark.parametrize("sender", PINGING, ids=[s.forge for s in PINGING])
def test_a_ping_is_ignored(sender: Sender) -> None:
    assert sender.ping is not None
    body = loading.webhook(sender.ping.fixture)

    note = _receive(sender, body, sender.headers(body, secret=SECRET, events=sender.ping.events))

    assert isinstance(note, forges.Notification)
    assert (note.action, note.reason) == (forges.Action.IGNORE, sender.ping.reason)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_without_a_secret_anything_is_taken_unsigned(sender: Sender) -> None:
    body = sender.body()

    note = _receive(sender, body, sender.headers(body, secret=None, delivery="d-9"), secret=None)

    assert isinstance(note, forges.Notification)
    assert (note.signed, note.action, note.delivery) == (False, forges.Action.POLL, "d-9")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"", "application/json"), (b"{}", "application/json"), (b"not json", "text/plain")],
)
def test_a_payload_that_names_no_ref_polls(body: bytes, content_type: str) -> None:
    note = forges.receive({"content-type": content_type}, body, secret=None, branch="main")

    assert isinstance(note, forges.Notification)
    assert (note.forge, note.action) == (forges.Forge.GITHUB, forges.Action.POLL)


def test_a_form_encoded_github_payload_is_read() -> None:
    """GitHub's other content type: ``payload=<the JSON, url-encoded>``."""
    body = urlencode({"payload": GITHUB.body("refs/heads/other").decode()}).encode()
    headers = GITHUB.headers(body, secret=SECRET)
    headers["Content-Type"] = "application/x-www-form-urlencoded"

    note = _receive(GITHUB, body, headers)

    assert isinstance(note, forges.Notification)
    assert note.reason == "a push to refs/heads/other, not to the tracked branch main"


def test_a_deleted_bitbucket_branch_is_read_from_its_old_side() -> None:
    document = json.loads(BITBUCKET_CLOUD.body())
    document["push"]["changes"][0]["new"] = None
    body = json.dumps(document).encode()

    note = _receive(BITBUCKET_CLOUD, body, BITBUCKET_CLOUD.headers(body, secret=SECRET))

    assert isinstance(note, forges.Notification)
    assert note.action is forges.Action.POLL  # main was deleted: the poll finds it gone


def test_gitlab_falls_back_to_the_idempotency_key() -> None:
    body = GITLAB.body()
    headers = GITLAB.headers(body, secret=SECRET) | {"Idempotency-Key": "k-1"}

    note = _receive(GITLAB, body, headers)

    assert isinstance(note, forges.Notification) and note.delivery == "k-1"


def test_bitbucket_cloud_takes_the_request_uuid_and_the_hook_uuid_only_without_one() -> None:
    """X-Request-UUID names the delivery; X-Hook-UUID names the webhook (the same on every
    push), so it is the delivery id only when no X-Request-UUID came (interfaces.md)."""
    body = BITBUCKET_CLOUD.body()
    headers = BITBUCKET_CLOUD.headers(body, secret=SECRET, delivery="{r-1}")
    hook = headers["X-Hook-UUID"]

    both = _receive(BITBUCKET_CLOUD, body, headers)
    only_hook = _receive(
        BITBUCKET_CLOUD, body, {k: v for k, v in headers.items() if k != "X-Request-UUID"}
    )

    assert isinstance(both, forges.Notification) and both.delivery == "{r-1}"
    assert isinstance(only_hook, forges.Notification) and only_hook.delivery == hook


def test_a_long_delivery_id_is_kept_as_its_hash() -> None:
    body = GITHUB.body()

    note = _receive(GITHUB, body, GITHUB.headers(body, secret=SECRET, delivery="x" * 500))

    assert isinstance(note, forges.Notification)
    assert note.delivery is not None and len(note.delivery) == len("sha256:") + 64


def test_other_events_are_ignored_as_not_a_push() -> None:
    body = b'{"action": "opened"}'
    headers = GITHUB.headers(body, secret=SECRET, events={"X-GitHub-Event": "pull_request"})

    note = _receive(GITHUB, body, headers)

    assert isinstance(note, forges.Notification)
    assert note.reason == "a GitHub 'pull_request' event is not a push"


@pytest.mark.parametrize(
    ("names", "action", "reason"),
    [
        (["v1", "feature", "main"], forges.Action.POLL, None),
        (
            [f"f{n}" for n in range(5)],
            forges.Action.IGNORE,
            "a push to refs/heads/f0, refs/heads/f1, refs/heads/f2 and 2 more, "
            "not to the tracked branch main",
        ),
    ],
    ids=["tracked-among-others", "many-others"],
)
def test_a_push_of_several_refs_polls_when_one_is_the_tracked_branch(
    names: list[str], action: forges.Action, reason: str | None
) -> None:
    document = json.loads(BITBUCKET_CLOUD.body())
    change = document["push"]["changes"][0]
    document["push"]["changes"] = [
        {**change, "new": {**change["new"], "name": name}} for name in names
    ]
    body = json.dumps(document).encode()

    note = _receive(BITBUCKET_CLOUD, body, BITBUCKET_CLOUD.headers(body, secret=SECRET))

    assert isinstance(note, forges.Notification)
    assert (note.action, note.reason) == (action, reason)
