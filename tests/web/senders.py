"""Each forge as a sender of push notifications: the headers its documentation says it sends,
its signature, and where its payload keeps the pushed ref (bodies: fixtures/webhooks/)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fixtures import loading

Body = dict[str, Any]


def _hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _set_ref(body: Body, ref: str) -> None:
    body["ref"] = ref


def _set_cloud_ref(body: Body, ref: str) -> None:
    if ref.startswith("refs/tags/"):
        kind, name = "tag", ref.removeprefix("refs/tags/")
    else:
        kind, name = "branch", ref.removeprefix("refs/heads/")
    for change in body["push"]["changes"]:
        for side in ("new", "old"):
            change[side]["type"] = kind
            change[side]["name"] = name


def _set_data_center_ref(body: Body, ref: str) -> None:
    kind = "TAG" if ref.startswith("refs/tags/") else "BRANCH"
    for change in body["changes"]:
        change["ref"] = {"id": ref, "displayId": ref.split("/", 2)[2], "type": kind}
        change["refId"] = ref


@dataclass(frozen=True)
class Ping:
    fixture: str
    events: dict[str, str]
    reason: str  # Nebula's answer


@dataclass(frozen=True)
class Sender:
    forge: str  # as Nebula names it in its answer
    fixture: str  # fixtures/webhooks/<fixture>.json
    events: dict[str, str]  # the event headers of a push
    signature_header: str  # the header Nebula checks, as named in its refusal
    noun: str  # "signature", or "token" for GitLab
    signing: Callable[[str, bytes], dict[str, str]]
    delivering: Callable[[str], dict[str, str]]
    set_ref: Callable[[Body, str], None]
    ping: Ping | None = None  # its test event, when it documents one

    @property
    def event(self) -> str:
        return next(iter(self.events.values()))

    def body(self, ref: str | None = None) -> bytes:
        """The documented push, of ``ref`` when given (else the tracked branch, main)."""
        raw = loading.webhook(self.fixture)
        if ref is None:
            return raw
        document = json.loads(raw)
        self.set_ref(document, ref)
        return json.dumps(document).encode()

    def headers(
        self,
        body: bytes,
        *,
        secret: str | None,
        delivery: str | None = None,
        events: dict[str, str] | None = None,
    ) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **(events or self.events)}
        if secret is not None:
            headers.update(self.signing(secret, body))
        if delivery is not None:
            headers.update(self.delivering(delivery))
        return headers


GITHUB = Sender(
    "github",
    "github-push",
    {"X-GitHub-Event": "push", "X-GitHub-Hook-ID": "109948940", "User-Agent": "GitHub-Hookshot/1"},
    "X-Hub-Signature-256",
    "signature",
    lambda secret, body: {"X-Hub-Signature-256": "sha256=" + _hex(secret, body)},
    lambda delivery: {"X-GitHub-Delivery": delivery},
    _set_ref,
    ping=Ping(
        "github-ping",
        {"X-GitHub-Event": "ping", "X-GitHub-Hook-ID": "109948940"},
        "a GitHub 'ping' event tests the webhook; nothing was pushed",
    ),
)
GITLAB = Sender(
    "gitlab",
    "gitlab-push",
    {
        "X-Gitlab-Event": "Push Hook",
        "X-Gitlab-Instance": "https://gitlab.example.com",
        "X-Gitlab-Webhook-UUID": "4ab5f4a2-1e7c-4f05-a0b1-4b1f5e2b7c3d",
        "User-Agent": "GitLab/17.6.0",
    },
    "X-Gitlab-Token",
    "token",
    lambda secret, body: {"X-Gitlab-Token": secret},
    lambda delivery: {"X-Gitlab-Event-UUID": delivery, "Idempotency-Key": f"idem-{delivery}"},
    _set_ref,
    ping=Ping(
        "gitlab-system-hook",
        {"X-Gitlab-Event": "System Hook"},
        "a GitLab 'System Hook' is the instance's hook, not this project's; "
        "add a project webhook for push events",
    ),
)
GITEA = Sender(
    "gitea",
    "gitea-push",
    {"X-Gitea-Event": "push", "X-Gitea-Event-Type": "push", "X-GitHub-Event": "push"}
    | {"X-Gogs-Event": "push"},
    "X-Gitea-Signature",
    "signature",
    lambda secret, body: (
        {"X-Gitea-Signature": _hex(secret, body)} | {"X-Gogs-Signature": _hex(secret, body)}
    ),
    lambda delivery: (
        {"X-Gitea-Delivery": delivery, "X-GitHub-Delivery": delivery}
        | {"X-Gogs-Delivery": delivery}
    ),
    _set_ref,
)
FORGEJO = Sender(
    "forgejo",
    "forgejo-push",
    {"X-Forgejo-Event": "push", "X-Forgejo-Event-Type": "push", "X-Gitea-Event": "push"}
    | {"X-GitHub-Event": "push", "X-Gogs-Event": "push"},
    "X-Forgejo-Signature",
    "signature",
    lambda secret, body: (
        {"X-Forgejo-Signature": _hex(secret, body)}
        | {"X-Gitea-Signature": _hex(secret, body), "X-Gogs-Signature": _hex(secret, body)}
    ),
    lambda delivery: (
        {"X-Forgejo-Delivery": delivery, "X-Gitea-Delivery": delivery}
        | {"X-GitHub-Delivery": delivery, "X-Gogs-Delivery": delivery}
    ),
    _set_ref,
)
BITBUCKET_CLOUD = Sender(
    "bitbucket-cloud",
    "bitbucket-cloud-push",
    {
        "X-Event-Key": "repo:push",
        "X-Hook-UUID": "{b5b5f8f6-9e45-4a4f-8d9e-0a7a3f2b2c11}",
        "X-Attempt-Number": "1",
        "User-Agent": "Bitbucket-Webhooks/2.0",
    },
    "X-Hub-Signature",
    "signature",
    lambda secret, body: {"X-Hub-Signature": "sha256=" + _hex(secret, body)},
    lambda delivery: {"X-Request-UUID": delivery},
    _set_cloud_ref,
)
BITBUCKET_DATA_CENTER = Sender(
    "bitbucket-data-center",
    "bitbucket-data-center-push",
    {"X-Event-Key": "repo:refs_changed"},
    "X-Hub-Signature",
    "signature",
    lambda secret, body: {"X-Hub-Signature": "sha256=" + _hex(secret, body)},
    lambda delivery: {"X-Request-Id": delivery},
    _set_data_center_ref,
    ping=Ping(
        "bitbucket-data-center-ping",
        {"X-Event-Key": "diagnostics:ping"},
        "a Bitbucket 'diagnostics:ping' event tests the webhook; nothing was pushed",
    ),
)

SENDERS = [GITHUB, GITLAB, GITEA, FORGEJO, BITBUCKET_CLOUD, BITBUCKET_DATA_CENTER]
PINGING = [s for s in SENDERS if s.ping is not None]
IDS = [s.forge for s in SENDERS]
