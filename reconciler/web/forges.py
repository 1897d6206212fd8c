"""Push notifications as each forge sends them: which forge, whether it is signed, what it asks.

Pure: headers and body in, a ``Notification`` (or a ``Refusal``) out; no store, no clock, no
network. The route (``web/hooks.py``) does the I/O. The table of interfaces.md "HTTP
additions", one ``Dialect`` per row:

| forge | recognised by | signature | delivery id |
| --- | --- | --- | --- |
| Forgejo | ``X-Forgejo-Event`` | ``X-Forgejo-Signature`` (hex), else ``X-Gitea-Signature`` | ``X-Forgejo-Delivery`` |
| Gitea | ``X-Gitea-Event`` | ``X-Gitea-Signature`` (hex), else ``X-Hub-Signature-256`` | ``X-Gitea-Delivery`` |
| GitLab | ``X-Gitlab-Event`` | ``X-Gitlab-Token``: the secret itself | ``X-Gitlab-Event-UUID``, ``Idempotency-Key`` |
| Bitbucket | ``X-Event-Key`` | ``X-Hub-Signature: sha256=<hex>`` | ``X-Request-UUID`` (Cloud), ``X-Request-Id`` (DC) |
| GitHub | ``X-GitHub-Event``, or no forge header | ``X-Hub-Signature-256: sha256=<hex>`` | ``X-GitHub-Delivery`` |

Gitea and Forgejo also send GitHub's headers, so they are recognised first. Every comparison is
constant-time (``hmac.compare_digest``). A payload that names refs decides whether to poll: a
push of other branches or of tags only is ignored; a payload Nebula cannot read polls, since
the poll asks the remote itself and costs one ref listing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any
from urllib.parse import parse_qs

MAX_DELIVERY = 100  # the stored id's length; a longer one is stored as its hash
MAX_SHOWN = 100  # of an event name or a ref, in an answer's reason

Headers = Mapping[str, str]  # lower-case names


class Forge(StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"
    GITEA = "gitea"
    FORGEJO = "forgejo"
    BITBUCKET_CLOUD = "bitbucket-cloud"
    BITBUCKET_DATA_CENTER = "bitbucket-data-center"


class Scheme(Enum):
    """How a signature header proves the sender knows the secret."""

    PREFIXED_HMAC = "sha256=<hex HMAC-SHA256 of the body>"
    HEX_HMAC = "<hex HMAC-SHA256 of the body>"
    TOKEN = "the secret itself"

    @property
    def noun(self) -> str:
        return "token" if self is Scheme.TOKEN else "signature"

    def sign(self, secret: str, body: bytes) -> str:
        """The header value a forge that knows ``secret`` sends with ``body``."""
        if self is Scheme.TOKEN:
            return secret
        digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
        return "sha256=" + digest if self is Scheme.PREFIXED_HMAC else digest

    def matches(self, secret: str, body: bytes, given: str) -> bool:
        expected = self.sign(secret, body)
        value = given.strip()
        if self is not Scheme.TOKEN:
            value = value.lower()  # hex digits in either case
        return hmac.compare_digest(expected.encode("utf-8"), value.encode("utf-8"))


class Action(StrEnum):
    POLL = "poll"
    IGNORE = "ignore"


@dataclass(frozen=True)
class Pushed:
    """What a payload says was pushed: full ref names, or None when it names none."""

    refs: tuple[str, ...] | None


@dataclass(frozen=True)
class Dialect:
    """One forge's headers, signature scheme, events and payload shape."""

    forge: Forge
    event_header: str
    signatures: tuple[tuple[str, Scheme], ...]  # the first one present is checked
    deliveries: tuple[str, ...]  # the first one present is the delivery id
    pings: frozenset[str]  # events that test the hook: answered, nothing polled
    foreign: frozenset[str]  # events of a hook that is not this project's (GitLab system hooks)
    pushes: frozenset[str]  # events whose payload names the pushed refs
    read_refs: Callable[[Any], tuple[str, ...] | None]


@dataclass(frozen=True)
class Notification:
    """A verified notification and what to do with it."""

    forge: Forge
    event: str | None
    delivery: str | None
    signed: bool  # a signature was checked against the project's secret
    action: Action
    reason: str | None = None  # why it is ignored


@dataclass(frozen=True)
class Refusal:
    """The signature or token did not prove the secret: nothing may happen."""

    forge: Forge
    header: str
    scheme: Scheme
    missing: bool

    @property
    def message(self) -> str:
        noun = self.scheme.noun
        if self.missing:
            return f"The {self.header} {noun} is missing, and this project has a webhook secret"
        return f"The {self.header} {noun} does not match this project's webhook secret"


# -- reading refs from each forge's payload -------------------------------------------------


def _ref_field(payload: Any) -> tuple[str, ...] | None:
    """GitHub, GitLab, Gitea and Forgejo: ``{"ref": "refs/heads/main", ...}``."""
    ref = payload.get("ref") if isinstance(payload, dict) else None
    return (ref,) if isinstance(ref, str) and ref else None


_BITBUCKET_KINDS = {
    "branch": "refs/heads/",
    "named_branch": "refs/heads/",
    "tag": "refs/tags/",
    "annotated_tag": "refs/tags/",
}


def _bitbucket_cloud_refs(payload: Any) -> tuple[str, ...] | None:
    """``{"push": {"changes": [{"new": {"type": "branch", "name": "main"}, "old": ...}]}}``;
    a deleted branch has ``"new": null`` and its name under ``old``."""
    push = payload.get("push") if isinstance(payload, dict) else None
    changes = push.get("changes") if isinstance(push, dict) else None
    if not isinstance(changes, list):
        return None
    refs = []
    for change in changes:
        if not isinstance(change, dict):
            return None
        side = change.get("new") or change.get("old")
        if not isinstance(side, dict) or not isinstance(side.get("name"), str):
            return None  # a change Nebula cannot read: poll rather than guess
        kind = _BITBUCKET_KINDS.get(str(side.get("type")), "refs/heads/")
        refs.append(kind + side["name"])
    return tuple(refs) or None


def _bitbucket_data_center_refs(payload: Any) -> tuple[str, ...] | None:
    """``{"changes": [{"ref": {"id": "refs/heads/main", "type": "BRANCH"}, "refId": ...}]}``."""
    changes = payload.get("changes") if isinstance(payload, dict) else None
    if not isinstance(changes, list):
        return None
    refs = []
    for change in changes:
        ref = change.get("ref") if isinstance(change, dict) else None
        ref_id = ref.get("id") if isinstance(ref, dict) else None
        if not isinstance(ref_id, str) and isinstance(change, dict):
            ref_id = change.get("refId")
        if not isinstance(ref_id, str) or not ref_id:
            return None
        refs.append(ref_id)
    return tuple(refs) or None


# -- the table ------------------------------------------------------------------------------

_GITHUB_SIGNATURE = ("X-Hub-Signature-256", Scheme.PREFIXED_HMAC)

DIALECTS = (
    Dialect(
        Forge.FORGEJO,
        "X-Forgejo-Event",
        (("X-Forgejo-Signature", Scheme.HEX_HMAC), ("X-Gitea-Signature", Scheme.HEX_HMAC)),
        ("X-Forgejo-Delivery", "X-Gitea-Delivery"),
        pings=frozenset({"ping"}),
        foreign=frozenset(),
        pushes=frozenset({"push"}),
        read_refs=_ref_field,
    ),
    Dialect(
        Forge.GITEA,
        "X-Gitea-Event",
        (("X-Gitea-Signature", Scheme.HEX_HMAC), _GITHUB_SIGNATURE),
        ("X-Gitea-Delivery", "X-GitHub-Delivery"),
        pings=frozenset({"ping"}),
        foreign=frozenset(),
        pushes=frozenset({"push"}),
        read_refs=_ref_field,
    ),
    Dialect(
        Forge.GITLAB,
        "X-Gitlab-Event",
        (("X-Gitlab-Token", Scheme.TOKEN),),
        ("X-Gitlab-Event-UUID", "Idempotency-Key"),
        pings=frozenset(),
        # A system hook is the instance's (an administrator's), for every project on it.
        foreign=frozenset({"System Hook"}),
        pushes=frozenset({"Push Hook", "Tag Push Hook"}),
        read_refs=_ref_field,
    ),
    Dialect(
        Forge.BITBUCKET_CLOUD,
        "X-Event-Key",
        (("X-Hub-Signature", Scheme.PREFIXED_HMAC),),
        # X-Request-UUID names the delivery. X-Hook-UUID names the webhook (the same on each
        # delivery): the spec's fallback, read only when a sender gives no X-Request-UUID.
        ("X-Request-UUID", "X-Hook-UUID"),
        pings=frozenset({"diagnostics:ping"}),
        foreign=frozenset(),
        pushes=frozenset({"repo:push"}),
        read_refs=_bitbucket_cloud_refs,
    ),
    Dialect(
        Forge.BITBUCKET_DATA_CENTER,
        "X-Event-Key",
        (("X-Hub-Signature", Scheme.PREFIXED_HMAC),),
        ("X-Request-Id",),
        pings=frozenset({"diagnostics:ping"}),
        foreign=frozenset(),
        pushes=frozenset({"repo:refs_changed"}),
        read_refs=_bitbucket_data_center_refs,
    ),
    Dialect(
        Forge.GITHUB,
        "X-GitHub-Event",
        (_GITHUB_SIGNATURE,),
        ("X-GitHub-Delivery",),
        pings=frozenset({"ping"}),
        foreign=frozenset(),
        pushes=frozenset({"push"}),
        read_refs=_ref_field,
    ),
)
_BY_FORGE = {d.forge: d for d in DIALECTS}


def dialect(forge: Forge) -> Dialect:
    return _BY_FORGE[forge]


def recognise(headers: Headers) -> Dialect:
    """The forge that sent these headers; GitHub's when none of them says."""
    if "x-forgejo-event" in headers:
        return _BY_FORGE[Forge.FORGEJO]
    if "x-gitea-event" in headers:  # Gitea sends X-GitHub-Event too
        return _BY_FORGE[Forge.GITEA]
    if "x-gitlab-event" in headers:
        return _BY_FORGE[Forge.GITLAB]
    if "x-event-key" in headers:
        # Data Center pushes are repo:refs_changed and carry X-Request-Id; Cloud X-Request-UUID.
        data_center = headers["x-event-key"] == "repo:refs_changed" or (
            "x-request-id" in headers and "x-request-uuid" not in headers
        )
        return _BY_FORGE[Forge.BITBUCKET_DATA_CENTER if data_center else Forge.BITBUCKET_CLOUD]
    return _BY_FORGE[Forge.GITHUB]


def verify(found: Dialect, headers: Headers, body: bytes, secret: str) -> Refusal | None:
    """None when the first signature header this forge sends proves ``secret``."""
    for header, scheme in found.signatures:
        given = headers.get(header.lower())
        if given is not None:
            if scheme.matches(secret, body, given):
                return None
            return Refusal(found.forge, header, scheme, missing=False)
    header, scheme = found.signatures[0]
    return Refusal(found.forge, header, scheme, missing=True)


def delivery_id(found: Dialect, headers: Headers) -> str | None:
    for header in found.deliveries:
        value = headers.get(header.lower(), "").strip()
        if value:
            if len(value) > MAX_DELIVERY:
                return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
            return value
    return None


def payload(headers: Headers, body: bytes) -> Any:
    """The JSON document, sent as such or as the ``payload`` field of a form; None if neither."""
    text = body.decode("utf-8", errors="replace")
    if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        text = (parse_qs(text).get("payload") or [""])[0]
    try:
        return json.loads(text)
    except ValueError:
        return None


def receive(
    headers: Headers, body: bytes, *, secret: str | None, branch: str
) -> Notification | Refusal:
    """Recognise, verify (when the project has a ``secret``), and decide: poll or ignore."""
    found = recognise(headers)
    if secret is not None:
        refused = verify(found, headers, body, secret)
        if refused is not None:
            return refused
    event = headers.get(found.event_header.lower())
    if event is not None:
        event = event[:MAX_SHOWN]
    note = _Note(found, event, delivery_id(found, headers), secret is not None)
    name = _NAMES[found.forge]
    if event in found.pings:
        return note.ignore(f"a {name} '{event}' event tests the webhook; nothing was pushed")
    if event in found.foreign:
        return note.ignore(
            f"a {name} '{event}' is the instance's hook, not this project's; "
            "add a project webhook for push events"
        )
    if event is not None and event not in found.pushes:
        return note.ignore(f"a {name} '{event}' event is not a push")
    return note.decide(found.read_refs(payload(headers, body)), branch)


@dataclass(frozen=True)
class _Note:
    found: Dialect
    event: str | None
    delivery: str | None
    signed: bool

    def ignore(self, reason: str) -> Notification:
        return Notification(
            self.found.forge, self.event, self.delivery, self.signed, Action.IGNORE, reason
        )

    def decide(self, refs: tuple[str, ...] | None, branch: str) -> Notification:
        tracked = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        # Why each answer, in order:
        if refs is None or tracked in refs:  # the branch moved, or the payload does not say
            return Notification(
                self.found.forge, self.event, self.delivery, self.signed, Action.POLL
            )
        shown = ", ".join(r[:MAX_SHOWN] for r in refs[:3])
        if len(refs) > 3:
            shown += f" and {len(refs) - 3} more"
        if all(r.startswith("refs/tags/") for r in refs):  # tags are not deployed
            return self.ignore(f"a tag push ({shown}); the tracked branch {branch} did not move")
        return self.ignore(f"a push to {shown}, not to the tracked branch {branch}")


_NAMES = {
    Forge.GITHUB: "GitHub",
    Forge.GITLAB: "GitLab",
    Forge.GITEA: "Gitea",
    Forge.FORGEJO: "Forgejo",
    Forge.BITBUCKET_CLOUD: "Bitbucket",
    Forge.BITBUCKET_DATA_CENTER: "Bitbucket",
}
