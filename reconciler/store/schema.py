"""Tables of the state store, as typed SQLAlchemy ORM models.

These rows are storage, not the domain: the frozen objects in ``reconciler.model`` and the
enums in ``reconciler.core.states`` are what the logic works with. Enum columns are stored as
their string values (readable in SQL, stable across renames of the Python names).
Times are stored as UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

# The declarative base and the organization's tables live in modules of their own; they are
# named here too, so that every table is ``schema.X``.
from reconciler.store.base import Base, UTCDateTime
from reconciler.store.notifying import InboxRead, NotifyChannel
from reconciler.store.organization import ApiToken, FreezeWindowRow, Member, Setting, SignInRow

__all__ = [
    "ApiToken",
    "Base",
    "FreezeWindowRow",
    "InboxRead",
    "Member",
    "NotifyChannel",
    "Setting",
    "SignInRow",
    "UTCDateTime",
]


class GrantRow(Base):
    """A member may deploy or approve in a project (``environment`` null) or one of its
    environments; owners and admins hold both everywhere without one."""

    __tablename__ = "grants"
    __table_args__ = (Index("ix_grants_member", "member_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"))
    kind: Mapped[str] = mapped_column(String(20))  # GrantKind
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(100))
    member: Mapped[Member] = relationship()
    project: Mapped[Project] = relationship()


class Project(Base):
    __tablename__ = "projects"
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(40), unique=True)
    repo_url: Mapped[str] = mapped_column(Text)  # as shown: credentials masked (***@)
    repo_url_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary)  # as given, encrypted
    branch: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(String(255))
    interval_seconds: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int | None]
    slack_channel: Mapped[str | None] = mapped_column(String(80))
    webhook_secret: Mapped[bytes | None] = mapped_column(LargeBinary)  # encrypted
    # Unsigned push notifications (no webhook secret) poll at most once per this many seconds
    # (0: no limit); the last one that did, shared by every replica.
    webhook_limit_seconds: Mapped[int] = mapped_column(Integer, default=10, server_default="10")
    webhook_polled_at: Mapped[datetime | None]
    clusters: Mapped[dict[str, Any]] = mapped_column(default=dict)  # environment -> context
    created_at: Mapped[datetime]
    # Polling
    last_commit: Mapped[str | None] = mapped_column(String(64))
    last_polled_at: Mapped[datetime | None]
    next_poll_at: Mapped[datetime | None]
    # The project-level blocker: configuration (bad file) or delivery (remote unreachable)
    blocker: Mapped[str | None] = mapped_column(String(40))
    blocker_message: Mapped[str | None] = mapped_column(Text)
    blocker_commit: Mapped[str | None] = mapped_column(String(64))
    # ``nebula project remove``: set while its environments are torn down (then it is forgotten)
    removing_by: Mapped[str | None] = mapped_column(String(100))
    removing_at: Mapped[datetime | None]
    # Suspended (nebula suspend): who, when, why; nothing is applied until resumed.
    suspended_by: Mapped[str | None] = mapped_column(String(100))
    suspended_at: Mapped[datetime | None]
    suspended_reason: Mapped[str | None] = mapped_column(Text)
    environments: Mapped[list[Environment]] = relationship(
        back_populates="project", order_by="Environment.position"
    )


class Environment(Base):
    __tablename__ = "environments"
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    name: Mapped[str] = mapped_column(String(40))
    position: Mapped[int] = mapped_column(default=0)
    protected: Mapped[bool] = mapped_column(Boolean, default=False)
    # The promotion gate and self-heal, as the last applied change set set them.
    promote_from: Mapped[str | None] = mapped_column(String(40))
    soak_seconds: Mapped[int] = mapped_column(Integer, default=0)
    self_heal: Mapped[bool] = mapped_column(Boolean, default=False)
    in_file: Mapped[bool] = mapped_column(Boolean, default=True)
    # The last file applied here: what the next push is diffed against.
    recorded_commit: Mapped[str | None] = mapped_column(String(64))
    recorded_file: Mapped[str | None] = mapped_column(Text)
    # The raw manifest files that file named, as read at its commit (path -> text); None
    # when it named none.
    recorded_manifests: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    suspended_by: Mapped[str | None] = mapped_column(String(100))
    suspended_at: Mapped[datetime | None]
    suspended_reason: Mapped[str | None] = mapped_column(Text)
    project: Mapped[Project] = relationship(back_populates="environments")

    @property
    def namespace(self) -> str:
        return f"{self.project.slug}-{self.name}"


class Unit(Base):
    """A service or database in one environment."""

    __tablename__ = "units"
    __table_args__ = (
        UniqueConstraint("environment_id", "name"),
        Index("ix_units_drift_checked", "drift_checked_at"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    name: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default="active")
    auto_deploy: Mapped[bool] = mapped_column(Boolean, default=True)
    skip_production_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    active_release_id: Mapped[int | None] = mapped_column(
        ForeignKey("releases.id", use_alter=True, name="fk_units_active_release")
    )
    next_release_number: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime]
    # Live state: the last drift check of the active release (reconciler.engine.drifting).
    sync: Mapped[str | None] = mapped_column(String(20))  # synced | drifted | unknown
    drift: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    drift_checked_at: Mapped[datetime | None]
    drift_since: Mapped[datetime | None]  # the drift episode open now began then
    # Each autoscaled process's replicas as that check saw them: {"web": 5} (its autoscaler's).
    scaled: Mapped[dict[str, int] | None] = mapped_column(JSON, nullable=True)
    sync_blocker: Mapped[str | None] = mapped_column(String(40))  # delivery: unreadable
    sync_message: Mapped[str | None] = mapped_column(Text)
    environment: Mapped[Environment] = relationship()
    active_release: Mapped[Release | None] = relationship(foreign_keys=[active_release_id])


class Release(Base):
    """Immutable: an image and the configuration frozen when it was created."""

    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("unit_id", "number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.id"))
    number: Mapped[int] = mapped_column(Integer)
    image: Mapped[str] = mapped_column(Text)
    config: Mapped[dict[str, Any]]  # the frozen spec, resolved references included
    status: Mapped[str] = mapped_column(String(20))
    source: Mapped[str | None] = mapped_column(String(80))  # commit, "rollback of r-2", ...
    created_at: Mapped[datetime]
    retired_at: Mapped[datetime | None]
    unit: Mapped[Unit] = relationship(foreign_keys=[unit_id])

    @property
    def name(self) -> str:
        return f"r-{self.number}"


class ChangeSet(Base):
    __tablename__ = "changesets"
    __table_args__ = (Index("ix_changesets_gate", "state", "gate_state"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    state: Mapped[str] = mapped_column(String(20))
    owner: Mapped[str] = mapped_column(String(100))
    commit: Mapped[str | None] = mapped_column(String(64))
    author: Mapped[str | None] = mapped_column(String(200))
    message: Mapped[str | None] = mapped_column(Text)  # the commit message
    file_text: Mapped[str] = mapped_column(Text)  # recorded for the environment on apply
    manifest_files: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    note: Mapped[str | None] = mapped_column(Text)  # why it ended, or which lines drifted
    # What the person who applied it said (``changeset apply --message``, at most 500 characters).
    applied_message: Mapped[str | None] = mapped_column(Text)
    # Its promotion gate, in an environment with promote_from (all None otherwise).
    gate_environment: Mapped[str | None] = mapped_column(String(40))
    gate_soak_seconds: Mapped[int | None] = mapped_column(Integer)
    gate_state: Mapped[str | None] = mapped_column(String(20))
    gate_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    environment: Mapped[Environment] = relationship()
    lines: Mapped[list[ChangeSetLine]] = relationship(
        back_populates="changeset", order_by="ChangeSetLine.position"
    )


class ChangeSetLine(Base):
    __tablename__ = "changeset_lines"
    id: Mapped[int] = mapped_column(primary_key=True)
    changeset_id: Mapped[int] = mapped_column(ForeignKey("changesets.id"))
    position: Mapped[int] = mapped_column(Integer)
    service: Mapped[str] = mapped_column(String(40))
    unit_kind: Mapped[str] = mapped_column(String(20))
    kind: Mapped[str] = mapped_column(String(30))
    field: Mapped[str] = mapped_column(String(300))
    before: Mapped[Any] = mapped_column(JSON, nullable=True)
    after: Mapped[Any] = mapped_column(JSON, nullable=True)
    # The reference that changed this resolved value ("a.K", "host(a)"); None for a text change.
    via: Mapped[str | None] = mapped_column(String(300))
    drifted: Mapped[bool] = mapped_column(Boolean, default=False)
    changeset: Mapped[ChangeSet] = relationship(back_populates="lines")


class Deployment(Base):
    """One attempt to make a release active; also a durable work item (marker, attempts, lease)."""

    __tablename__ = "deployments"
    __table_args__ = (
        Index("ix_deployments_open", "finished_at", "environment_id"),
        Index("ix_deployments_unit", "unit_id", "id"),
        Index("ix_deployments_marker", "stage_marker"),
        Index("ix_deployments_requester", "requested_by", "state"),  # a member's inbox
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.id"))
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"))
    previous_release_id: Mapped[int | None] = mapped_column(ForeignKey("releases.id"))
    changeset_id: Mapped[int | None] = mapped_column(ForeignKey("changesets.id"))
    kind: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(30))
    blocker: Mapped[str | None] = mapped_column(String(40))
    message: Mapped[str | None] = mapped_column(Text)
    requested_by: Mapped[str] = mapped_column(String(100))
    # Durable work item
    stage_marker: Mapped[str | None] = mapped_column(String(60))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires_at: Mapped[datetime | None]
    next_attempt_at: Mapped[datetime | None]
    stage_started_at: Mapped[datetime | None]
    waiting_on_id: Mapped[int | None] = mapped_column(Integer)  # the dependency deployment held for
    created_at: Mapped[datetime]
    queued_at: Mapped[datetime | None]  # entered pending: "started first" compares this
    admitted_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    unit: Mapped[Unit] = relationship()
    release: Mapped[Release] = relationship(foreign_keys=[release_id])
    previous_release: Mapped[Release | None] = relationship(foreign_keys=[previous_release_id])
    environment: Mapped[Environment] = relationship()


class Approval(Base):
    __tablename__ = "approvals"
    __table_args__ = (
        Index("ix_approvals_due", "state", "expires_at"),
        Index("ix_approvals_requester", "requested_by", "state"),  # a member's inbox
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    target: Mapped[str] = mapped_column(String(20))
    target_id: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20))
    requested_by: Mapped[str] = mapped_column(String(100))
    decided_by: Mapped[str | None] = mapped_column(String(100))
    decided_via: Mapped[str | None] = mapped_column(String(20))
    rule: Mapped[str | None] = mapped_column(String(40))
    reason: Mapped[str | None] = mapped_column(Text)
    # In a gated environment, what the gating environment proved (or that a gate was skipped).
    evidence: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    decided_at: Mapped[datetime | None]
    slack_channel: Mapped[str | None] = mapped_column(String(80))
    slack_ts: Mapped[str | None] = mapped_column(String(40))
    environment: Mapped[Environment] = relationship()


class Event(Base):
    """Append-only timeline: never updated or deleted."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_deployment", "deployment_id", "id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime]
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id"))
    environment_id: Mapped[int | None] = mapped_column(ForeignKey("environments.id"))
    deployment_id: Mapped[int | None] = mapped_column(ForeignKey("deployments.id"))
    changeset_id: Mapped[int | None] = mapped_column(ForeignKey("changesets.id"))
    approval_id: Mapped[int | None] = mapped_column(ForeignKey("approvals.id"))
    kind: Mapped[str] = mapped_column(String(40))
    state: Mapped[str | None] = mapped_column(String(30))
    message: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(String(100))
    # Audit events: what was done (``member.add``) and to what (``member alice``), kept as text
    # so the event outlives what it names (a removed member, a forgotten project).
    action: Mapped[str | None] = mapped_column(String(40))
    target: Mapped[str | None] = mapped_column(String(300))


class Secret(Base):
    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("project_id", "environment", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    environment: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(200))
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime]


class OutboxMessage(Base):
    """A notification written with the state change that caused it, delivered later."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_due", "delivered_at", "next_attempt_at"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)  # idempotency key
    kind: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    delivered_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The channel it goes to (``notify_channels``); null: the default Slack channel.
    channel_id: Mapped[int | None] = mapped_column(Integer, index=True)
    # What a PagerDuty alert is about (its dedup key), so a later resolve finds its trigger.
    topic: Mapped[str | None] = mapped_column(String(200))


class WebhookDelivery(Base):
    """A delivery id a project's push notification came with, so that a replay does nothing.
    Per project: a forge gives one push one id for every hook it sets off (GitHub's delivery
    id is shared by all of an event's deliveries), and two projects may track one repository."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_received", "received_at"),)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    received_at: Mapped[datetime]


class Lease(Base):
    """A named lease (polling of a project, a cluster-wide timer) held by one replica."""

    __tablename__ = "leases"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    owner: Mapped[str] = mapped_column(String(100))
    expires_at: Mapped[datetime]


class Heartbeat(Base):
    """When a reconcile pass last ran, and on which replica: what tells people that nothing is
    reconciling (no ``nebula serve``, no ``nebula reconcile``) when nothing moves."""

    __tablename__ = "heartbeats"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    owner: Mapped[str] = mapped_column(String(100))
    beat_at: Mapped[datetime]


class ClusterObject(Base):
    """The simulated cluster's objects: stored, so they survive a restart of the reconciler."""

    __tablename__ = "simulated_objects"
    __table_args__ = (UniqueConstraint("namespace", "kind", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    namespace: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(60))
    name: Mapped[str] = mapped_column(String(253))
    body: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
