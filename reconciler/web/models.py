"""The JSON API's documents as pydantic models, so ``/openapi.json`` describes what is sent.

The data itself comes from ``reconciler.views`` (the same dicts ``nebula ... --json``
prints); these models only declare it. Output models allow extra fields, since the
contract says fields may be added; request bodies forbid unknown keys, so a typo is a 422
rather than silently ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
RELEASE_PATTERN = r"^r-[0-9]{1,9}$"


class Out(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- errors -------------------------------------------------------------------------------


class ErrorBody(Out):
    error: str = Field(description="what happened, for a person")
    hint: str | None = Field(default=None, description="what to do about it, when there is a way")
    code: str = Field(description="machine-readable: unauthorized, forbidden, not-found, ...")


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
    suspended: Suspension | None = Field(description="while nothing is applied (nebula suspend)")


class Suspension(Out):
    by: str = Field(description="the admin or owner who suspended it")
    at: str
    reason: str


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


class Drift(Out):
    """A field of an object that differs between what runs and the active release."""

    object: str = Field(description="Kind/name, e.g. Deployment/api-r3")
    path: str = Field(description="e.g. spec.replicas")
    live: str | None = Field(description="the live value (null: not set)")
    desired: str | None = Field(description="what the release sets")


class Missing(Out):
    """An object of the active release that the cluster does not have."""

    object: str = Field(description="Kind/name, e.g. Service/api")
    missing: bool


class Autoscaling(Out):
    min: int
    max: int
    cpu_percent: int
    current: int | None = Field(description="the autoscaler's count now (null: not read)")


class ProcessStatus(Out):
    name: str
    type: str = Field(description="http, worker, cron or job")
    replicas: int | None = Field(description="null when an autoscaler owns the count")
    autoscale: Autoscaling | None


class ServiceStatus(Out):
    name: str
    kind: str = Field(description="service or database")
    active_release: str | None
    image: str | None
    deployment: DeploymentBrief | None = Field(
        description="in flight, or the last one if it did not go healthy"
    )
    sync: str = Field(description="synced, drifted or unknown (live objects vs active release)")
    drift: list[Drift | Missing]
    blocker: str | None = Field(description="why sync is unknown: delivery (the cluster)")
    message: str | None
    urls: list[str] = Field(description="public URLs its routes publish (active release)")
    processes: list[ProcessStatus]


class EnvironmentStatus(Out):
    name: str
    protected: bool
    suspended: Suspension | None
    services: list[ServiceStatus]


class ProjectStatus(Out):
    slug: str
    commit: str | None
    blocker: str | None
    message: str | None
    suspended: Suspension | None
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
    applied_message: str | None = Field(
        default=None, description="what the person who applied it said (changeset apply --message)"
    )
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
    already_requested: bool = Field(
        default=False,
        description="true: an identical request was still waiting or in flight, and this is "
        "that one (nothing new was created)",
    )


class UnitDiff(Out):
    environment: str
    service: str
    release: str
    sync: str = Field(description="synced or drifted")
    drift: list[Drift | Missing]
    diff: str = Field(description="a unified diff: --- live/Kind/name, +++ r-N/Kind/name")


class Diff(Out):
    project: str
    differences: int = Field(description="how many drift entries there are in all")
    units: list[UnitDiff]


class Suspended(Out):
    project: str
    environment: str | None = Field(description="null: the whole project")
    suspended: Suspension | None = Field(description="null once resumed")
    changesets: list[ChangeSet] = Field(description="change sets that went on when resumed")


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
