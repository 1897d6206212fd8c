"""The names of things that have a state. Enums exist to prevent typos in string literals.

Values are the spec's spelling (``awaiting-approval``, ``route-activation``): they are what
the CLI's JSON, the HTTP API and the events table show.
"""

from __future__ import annotations

from enum import StrEnum

from reconciler.errors import Blocker

__all__ = ["Blocker"]  # the blocker names live with the errors that report them


class DeploymentState(StrEnum):
    AWAITING_APPROVAL = "awaiting-approval"
    PENDING = "pending"
    ADMITTED = "admitted"
    RELEASING = "releasing"
    STARTING = "starting"
    QUALIFYING = "qualifying"
    ACTIVATING = "activating"
    DRAINING = "draining"
    HEALTHY = "healthy"
    FAILED = "failed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def is_taking_traffic(self) -> bool:
        """Activating or draining: stopping it halfway could leave nothing serving."""
        return self in (DeploymentState.ACTIVATING, DeploymentState.DRAINING)

    @property
    def reaches_cluster(self) -> bool:
        """Past pending: something of this deployment may exist on the cluster."""
        return self in STAGES_ON_CLUSTER


FINAL_STATES = frozenset(
    {
        DeploymentState.HEALTHY,
        DeploymentState.FAILED,
        DeploymentState.REJECTED,
        DeploymentState.CANCELLED,
        DeploymentState.SUPERSEDED,
    }
)

# The stages a deployment walks, in order, once it is admitted.
STAGES_ON_CLUSTER = (
    DeploymentState.ADMITTED,
    DeploymentState.RELEASING,
    DeploymentState.STARTING,
    DeploymentState.QUALIFYING,
    DeploymentState.ACTIVATING,
    DeploymentState.DRAINING,
)

# Not ended: what may still move, including what waits for a person's approval.
OPEN_STATES = frozenset(s for s in DeploymentState if s not in FINAL_STATES)
# In flight: counted against the concurrency cap and stepped by the tick. Waiting for approval
# is not yet in flight; a deployment held behind a dependency is.
IN_FLIGHT_STATES = OPEN_STATES - {DeploymentState.AWAITING_APPROVAL}

# The visible path on the status page: every state a successful deployment may pass.
HAPPY_PATH = (
    DeploymentState.AWAITING_APPROVAL,
    DeploymentState.PENDING,
    *STAGES_ON_CLUSTER,
    DeploymentState.HEALTHY,
)


class StageMarker(StrEnum):
    """How far a stage got on the cluster, committed with the step that got there, so a
    replayed stage repeats no call it already made (and a final deployment is cleaned up)."""

    JOB_STARTED = "job-started"  # releasing: the release command's Job was created
    PREVIOUS_DRAINED = "previous-drained"  # starting a volume release: the old one stopped
    APPLIED = "applied"  # starting: the release's objects were applied
    CLEANUP = "cleanup"  # ended before healthy: its objects are still to be removed


class DeploymentKind(StrEnum):
    DEPLOY = "deploy"
    ROLLBACK = "rollback"
    PROMOTE = "promote"


class ChangeSetState(StrEnum):
    DRAFT = "draft"
    PENDING_APPROVAL = "pending-approval"
    APPLIED = "applied"
    REJECTED = "rejected"
    DISCARDED = "discarded"
    FAILED = "failed"

    @property
    def is_open(self) -> bool:
        return self in OPEN_CHANGESET_STATES


OPEN_CHANGESET_STATES = frozenset({ChangeSetState.DRAFT, ChangeSetState.PENDING_APPROVAL})


class LineKind(StrEnum):
    """The kinds of change-set line (behaviour.md, "From git to change sets")."""

    VARIABLE_SET = "variable-set"
    VARIABLE_DELETE = "variable-delete"
    REPLICAS = "replicas"
    INSTANCE_SIZE = "instance-size"
    VOLUME_SIZE = "volume-size"
    AUTO_DEPLOY = "auto-deploy"
    RELEASE = "release"
    FIRST_DEPLOY = "first-deploy"
    REMOVAL = "removal"
    FAILOVER = "automatic-failover"
    SECRET = "secret"  # a server-side secret a service reads has a new value (never shown)
    ENVIRONMENT = "environment"  # an environment's setting: protected, promote_from, ...

    @property
    def needs_deployment(self) -> bool:
        """Settings that change no running workload apply without a new release."""
        return self not in (LineKind.AUTO_DEPLOY, LineKind.ENVIRONMENT)


class SecretChange(StrEnum):
    """What ``nebula secret set`` did to the stored value (never the value itself)."""

    ADDED = "added"  # it was missing: deployments held for it carry on
    CHANGED = "changed"  # a new value: the services reading it get a change set
    UNCHANGED = "unchanged"  # the same value again: nothing to do


class GateState(StrEnum):
    """A change set's promotion gate (behaviour.md "Promotion gates")."""

    WAITING = "waiting"  # a new image is not proven in the gating environment yet
    PASSED = "passed"  # every new image it carries is
    FAILED = "failed"  # the gating deployment failed, was cancelled or rejected


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class ApprovalTarget(StrEnum):
    CHANGESET = "changeset"
    DEPLOYMENT = "deployment"


class ApprovalRule(StrEnum):
    """Why an approval passed at once (it is still recorded, with the rule and who)."""

    ROLLBACKS_SKIP_APPROVAL = "rollbacks-skip-approval"
    REQUESTER_CAN_DECIDE = "requester-can-decide"
    SKIP_PRODUCTION_APPROVAL = "skip-production-approval"


class Role(StrEnum):
    """A member's standing in the organization, highest first (behaviour.md "People, roles
    and grants"): owners and admins hold every grant everywhere; a member deploys in
    unprotected environments and holds what is granted; a viewer reads and acts on nothing."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"

    @property
    def can_decide(self) -> bool:
        """An admin or an owner: holds both grants everywhere and administers."""
        return self in (Role.OWNER, Role.ADMIN)

    @property
    def acts(self) -> bool:
        """Anything but a viewer may act (within its grants)."""
        return self is not Role.VIEWER


class SignInKind(StrEnum):
    """How a single sign-on reaches the provider and comes back."""

    PAGE = "page"  # the status page: a redirect to /auth/callback, a cookie at the end
    DEVICE = "device"  # nebula login --sso: the device authorization grant (RFC 8628)
    LOOPBACK = "loopback"  # nebula login --sso without a device endpoint: code + PKCE to the CLI


class GrantKind(StrEnum):
    """What a grant lets a member do in a project or one of its environments."""

    DEPLOY = "deploy"  # apply change sets, redeploy, roll back, promote, cancel there
    APPROVE = "approve"  # decide that environment's approvals


class ReleaseStatus(StrEnum):
    CREATED = "created"  # made for a deployment that has not gone healthy (yet)
    ACTIVE = "active"
    RETIRED = "retired"  # one of the 3 most recent: available for rollback
    UNAVAILABLE = "unavailable"  # older retired releases; rows and events are kept
    ABANDONED = "abandoned"  # its deployment ended without going healthy


class ServiceKind(StrEnum):
    SERVICE = "service"
    DATABASE = "database"
    MANIFESTS = "manifests"  # an environment's raw manifests (behaviour.md "Raw manifests")
    ENVIRONMENT = "environment"  # only on a change-set line about the environment's settings


class ServiceStatus(StrEnum):
    ACTIVE = "active"
    PENDING_TEARDOWN = "pending-teardown"
    REMOVED = "removed"


class Sync(StrEnum):
    """A unit's live state against its active release (reconciler.engine.drifting)."""

    SYNCED = "synced"  # checked, and what runs is what the release says
    DRIFTED = "drifted"  # checked, and something differs (or is missing)
    UNKNOWN = "unknown"  # not checked yet, or the cluster could not be read


class DecisionChannel(StrEnum):
    CLI = "cli"
    API = "api"
    SLACK = "slack"
    RULE = "rule"
    EXPIRY = "expiry"


class HookOutcome(StrEnum):
    """What a push notification did (``POST /hooks/git/{project}``; the webhooks metric)."""

    POLLING = "polling"
    DUPLICATE = "duplicate"  # a delivery id already received
    IGNORED = "ignored"  # a ping, a tag, another branch: nothing to poll
    COALESCED = "coalesced"  # unsigned, within the project's webhook_limit: a poll covers it
    UNAUTHORIZED = "unauthorized"


class AdminAction(StrEnum):
    """An administrative act, as ``nebula audit`` names it (behaviour.md "Audit")."""

    MEMBER_ADD = "member.add"
    MEMBER_ROLE = "member.role"  # an existing member's role (or Slack id) changed
    MEMBER_REMOVE = "member.remove"
    TOKEN_CREATE = "token.create"
    TOKEN_REVOKE = "token.revoke"
    POLICY_SET = "policy.set"
    FREEZE_ADD = "freeze.add"
    FREEZE_REMOVE = "freeze.remove"
    SERVICE_SET = "service.set"
    SECRET_SET = "secret.set"  # the name only, never the value
    SECRET_DELETE = "secret.delete"
    PROJECT_ADD = "project.add"
    PROJECT_SET = "project.set"
    PROJECT_REMOVE = "project.remove"  # asked for: its environments are being torn down
    PROJECT_FORGOTTEN = "project.forgotten"  # torn down everywhere and forgotten
    PROMOTE_SKIP_GATE = "promote.skip-gate"  # a promotion past its gate (``--skip-gate``)
    SUSPEND = "suspend"  # a project or an environment: nothing is applied until resumed
    RESUME = "resume"
    DRIFT = "drift"  # a unit's live objects began to differ from its release (actor nebula)
    DRIFT_CLEARED = "drift.cleared"  # ... and agree with it again
    SELF_HEAL = "self-heal"  # its drifted objects applied again (actor nebula)
    GRANT_ADD = "grant.add"  # a member may deploy or approve in a project or environment
    GRANT_REMOVE = "grant.remove"
    NOTIFY_ADD = "notify.add"  # a notification channel (its target shown redacted)
    NOTIFY_REMOVE = "notify.remove"


class HistoryState(StrEnum):
    """A release as ``nebula history`` shows it (interfaces.md 1.1)."""

    ACTIVE = "active"  # serving now
    ROLLBACK_ABLE = "rollback-able"  # retired, one of the recent ones: ``rollback --to`` it
    RETIRED = "retired"  # retired, too old to roll back to
    FAILED = "failed"  # its deployment ended failed
    IN_FLIGHT = "in-flight"  # its deployment has not ended yet
    ENDED = "ended"  # its deployment was cancelled, rejected or superseded before serving
