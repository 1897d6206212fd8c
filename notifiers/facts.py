"""What a notice says, as frozen values: read from the store once, rendered by ``messages``.

Keeping these separate from Block Kit lets the message builders stay pure (tested without a
database) and lets the outbox keep a snapshot of facts that may change later, such as what
was serving when a deployment failed or the message of a project blocker.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, Self, cast
from urllib.parse import quote

from reconciler.clock import utc


class Snapshot:
    """A notice's facts as the outbox keeps them: every field but the link (made when it is
    sent, from the settings), tuples as JSON lists and back."""

    def to_payload(self) -> dict[str, Any]:
        values = asdict(cast(Any, self)).items()
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in values if k != "url"}

    @classmethod
    def from_payload(cls, payload: dict[str, Any], url: str) -> Self:
        names = (f.name for f in fields(cast(Any, cls)) if f.name != "url")
        values = {k: payload.get(k) for k in names}
        restored = {k: (tuple(v) if isinstance(v, list) else v) for k, v in values.items()}
        made: Self = cast(Any, cls)(**restored, url=url)  # each subclass is a dataclass
        return made


@dataclass(frozen=True)
class ServiceRelease:
    """One service a request deploys: ``api r-8``, its deployment kind, and what runs now."""

    service: str
    release: str
    kind: str  # deploy | rollback | promote
    unit_kind: str  # service | database
    previous: str | None = None


@dataclass(frozen=True)
class Line:
    """One change-set line, as ``nebula changeset show`` lists it."""

    service: str
    kind: str
    field: str
    before: Any
    after: Any
    via: str | None = None  # the reference that changed a resolved value, e.g. "a.K"


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str | None
    message: str | None

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclass(frozen=True)
class ManifestDiff:
    """Rendered objects the request creates, changes and removes, by ``Kind/name``."""

    created: tuple[str, ...] = ()
    configured: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged: int = 0
    unavailable: str | None = None  # why no summary could be computed


@dataclass(frozen=True)
class Decision:
    """How an approval ended: who, when, through which channel, and why."""

    state: str  # approved | rejected | expired | cancelled
    by: str | None
    via: str | None
    at: datetime | None
    reason: str | None


@dataclass(frozen=True)
class ApprovalRequest:
    approval_id: int
    project: str
    environment: str
    target: str  # changeset | deployment
    target_id: int
    kind: str  # changeset | deploy | rollback | promote
    requested_by: str
    requested_at: datetime
    expires_at: datetime
    url: str
    commit: Commit | None = None  # for a push: the project asked, the commit says why
    services: tuple[ServiceRelease, ...] = ()
    lines: tuple[Line, ...] = ()
    manifests: ManifestDiff = field(default_factory=ManifestDiff)
    decision: Decision | None = None  # set once it is no longer pending
    # In a gated environment: what the gating environment proved ("Verified in staging: ...").
    evidence: tuple[str, ...] = ()
    message: str | None = None  # what the person applying the change set said (--message)
    page: str = ""  # the approvals page, at this one: where it is decided

    @property
    def state(self) -> str:
        return self.decision.state if self.decision is not None else "pending"

    @property
    def by_project(self) -> bool:
        return self.requested_by.startswith("project:")


@dataclass(frozen=True)
class Failure(Snapshot):
    deployment_id: int
    project: str
    environment: str
    service: str
    release: str
    kind: str
    blocker: str | None
    message: str | None
    keeps_serving: str | None  # the release still serving, or None when nothing was
    url: str = ""


@dataclass(frozen=True)
class ProjectState(Snapshot):
    """A project-level blocker (configuration, delivery) or its recovery."""

    project: str
    blocker: str
    message: str
    commit: str | None
    recovered: bool = False
    url: str = ""


@dataclass(frozen=True)
class Drifted(Snapshot):
    """A unit's live objects began to differ from its active release (one notice an episode)."""

    project: str
    environment: str
    service: str
    release: str
    differences: tuple[str, ...]  # "Deployment/api-r3 spec.replicas: 5 (release: 2)"
    count: int  # how many there are, of which ``differences`` are the first
    healed: str | None = None  # the self-heal event's message, when it put them back
    url: str = ""


@dataclass(frozen=True)
class Healthy(Snapshot):
    """A deployment went healthy: its release serves now (``previous`` did before)."""

    deployment_id: int
    project: str
    environment: str
    service: str
    release: str
    kind: str
    previous: str | None
    url: str = ""


@dataclass(frozen=True)
class DriftCleared(Snapshot):
    """A unit's live objects agree with its active release again: the drift episode ended."""

    project: str
    environment: str
    service: str
    release: str
    url: str = ""


@dataclass(frozen=True)
class Test(Snapshot):
    """``nebula notify test``: a notice that says only that the channel works."""

    channel: str  # its id, or "default"
    by: str
    url: str = ""


# -- links to the status page --------------------------------------------------------------


def project_url(public_url: str, project: str, environment: str | None = None) -> str:
    base = f"{public_url.rstrip('/')}/projects/{quote(project)}"
    return f"{base}#{quote(environment)}" if environment else base


def deployment_url(public_url: str, deployment_id: int) -> str:
    return f"{public_url.rstrip('/')}/deployments/{deployment_id}"


def approval_url(public_url: str, approval_id: int) -> str:
    """The approvals page, at this one: where it is decided."""
    return f"{public_url.rstrip('/')}/approvals#approval-{approval_id}"


def when(value: datetime | None) -> str:
    return utc(value).strftime("%Y-%m-%d %H:%M UTC") if value is not None else ""


# Every kind of facts a channel renders.
Facts = ApprovalRequest | Failure | Healthy | ProjectState | Drifted | DriftCleared | Test
