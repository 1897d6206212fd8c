"""The JSON API's documents as pydantic models, so ``/openapi.json`` describes what is sent.

The data itself comes from ``reconciler.views`` (the same dicts ``nebula ... --json``
prints); these models only declare it. Output models allow extra fields, since the
contract says fields may be added; request bodies forbid unknown keys, so a typo is a 422
rather than silently ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
RELEASE_PATTERN = r"^r-[0-9]{1,9}$"


class Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# -- errors -------------------------------------------------------------------------------


class ErrorDetail(Out):
    code: str = Field(description="machine-readable: unauthorized, forbidden, not-found, ...")
    message: str = Field(description="what happened and what to do, for a person")
    hint: str | None = None


class ErrorBody(Out):
    error: ErrorDetail


# -- projects and status ------------------------------------------------------------------


class Project(Out):
    slug: str
    repo: str = Field(description="the repository URL, without credentials")
    branch: str
    path: str
    interval: int = Field(description="poll interval in seconds")
    concurrency: int | None
    commit: str | None
    blocker: str | None = Field(description="configuration or delivery, when blocked")
    message: str | None
    last_polled_at: str | None
    next_poll_at: str | None
    webhook_signed: bool = Field(
        description="false: push notifications need no signature (anyone may send one)"
    )
    webhook_limit: int | None = Field(
        description="unsigned push notifications poll at most once per this many seconds"
    )


class ProjectList(Out):
    projects: list[Project]


class ProjectOne(Out):
    project: Project


class DeploymentBrief(Out):
    id: str
    release: str
    kind: str
    state: str
    blocker: str | None
    message: str | None


class ServiceStatus(Out):
    name: str
    kind: str = Field(description="service or database")
    active_release: str | None
    image: str | None
    deployment: DeploymentBrief | None = Field(
        description="in flight, or the last one if it did not go healthy"
    )


class EnvironmentStatus(Out):
    name: str
    protected: bool
    services: list[ServiceStatus]


class ProjectStatus(Out):
    slug: str
    commit: str | None
    blocker: str | None
    message: str | None
    environments: list[EnvironmentStatus]


class StatusList(Out):
    projects: list[ProjectStatus]


# -- deployments --------------------------------------------------------------------------


class Deployment(Out):
    id: str
    project: str
    environment: str
    service: str
    release: str
    kind: str = Field(description="deploy, rollback or promote")
    state: str
    blocker: str | None
    message: str | None
    created_at: str | None
    finished_at: str | None


class Event(Out):
    at: str | None
    state: str | None
    message: str | None
    actor: str | None


class DeploymentWithEvents(Deployment):
    events: list[Event]


class DeploymentList(Out):
    deployments: list[Deployment]


class DeploymentOne(Out):
    deployment: DeploymentWithEvents


class Cancelled(Out):
    deployment: Deployment


# -- change sets and approvals ------------------------------------------------------------


class ChangeSetLine(Out):
    service: str
    field: str
    before: Any = Field(description="the live value when staged (null: none)")
    after: Any = Field(description="the new file's value (null: removed)")
    via: str | None = Field(
        default=None,
        description="the reference that changed this resolved value (e.g. a.K); null: the text",
    )


class Gate(Out):
    environment: str = Field(description="where a new image must prove itself first")
    soak: str = Field(description="how long it must stay healthy there, e.g. 30m")
    state: str = Field(description="waiting, passed or failed")
    message: str | None


class ChangeSet(Out):
    id: str
    project: str
    environment: str
    state: str
    owner: str
    commit: str | None
    message: str | None = Field(description="how it ended once it has, else the commit message")
    commit_message: str | None
    note: str | None = Field(description="how it ended (replaced, rejected, expired, refused)")
    gate: Gate | None = Field(
        default=None, description="its promotion gate; null without promote_from"
    )
    evidence: list[str] = Field(
        default_factory=list, description="what the gate proved, as its approval request shows"
    )
    lines: list[ChangeSetLine]


class ChangeSetList(Out):
    changesets: list[ChangeSet]


class ChangeSetOne(Out):
    changeset: ChangeSet


class Approval(Out):
    id: str
    project: str
    environment: str
    target: str = Field(description="changeset or deployment")
    target_id: str
    kind: str
    state: str = Field(description="pending, approved, rejected, expired or cancelled")
    requested_by: str
    decided_by: str | None
    rule: str | None
    evidence: list[str] = Field(
        default_factory=list,
        description="in a gated environment: Verified in staging: api r-4 healthy since ...",
    )


class ApprovalList(Out):
    approvals: list[Approval]


class ApprovalOne(Out):
    approval: Approval


class Ended(Out):
    """A deployment a request ended (superseded, cancelled)."""

    id: str
    service: str
    release: str
    state: str


class Decided(Out):
    approval: Approval
    ended: list[Ended]


class Requested(Out):
    deployment: Deployment
    approval: Approval | None = Field(description="the approval it waits for, or passed by")
    ended: list[Ended]


# -- request bodies -----------------------------------------------------------------------


class Reject(In):
    reason: str | None = Field(default=None, max_length=2000)


# ``env`` is accepted too, as the CLI spells the option (``--env``).
_ENVIRONMENT = AliasChoices("environment", "env")


class Rollback(In):
    environment: str = Field(pattern=NAME_PATTERN, validation_alias=_ENVIRONMENT)
    to: str | None = Field(
        default=None, pattern=RELEASE_PATTERN, description="r-N; default: the previous release"
    )


class Promote(In):
    source: str = Field(alias="from", pattern=NAME_PATTERN, description="source environment")
    target: str = Field(alias="to", pattern=NAME_PATTERN, description="target environment")
    skip_gate: bool = Field(
        default=False,
        description="promote before the target's promotion gate passes (admins and owners; "
        "recorded in the event and shown in the approval request)",
    )


class Redeploy(In):
    environment: str = Field(pattern=NAME_PATTERN, validation_alias=_ENVIRONMENT)


# -- operations ---------------------------------------------------------------------------


class Health(Out):
    status: str = Field(description="ok or unavailable")
    database: str


class HookReceipt(Out):
    project: str
    forge: str = Field(description="github, gitlab, gitea, forgejo, bitbucket-cloud, ...")
    delivery: str | None
    status: str = Field(
        description="polling; duplicate (a delivery already received), ignored (see reason), "
        "or coalesced (an unsigned notification within the project's webhook_limit: one poll "
        "at the end of it covers it)"
    )
    reason: str | None = None


# -- audit and history (1.1) ---------------------------------------------------------------


class AuditEvent(Out):
    at: str
    actor: str | None
    action: str = Field(description="e.g. member.add, token.revoke, secret.set, project.remove")
    target: str = Field(description="what it was done to, e.g. member alice")
    message: str | None


class AuditList(Out):
    events: list[AuditEvent]


class HistoryRelease(Out):
    release: str
    image: str
    state: str = Field(description="active, rollback-able, retired, failed, in-flight or ended")
    created_at: str
    created_by: str | None
    commit: str | None


class HistoryList(Out):
    releases: list[HistoryRelease]
