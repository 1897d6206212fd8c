"""The documents of people and the organization (whoami, members, grants, tokens, policies,
freezes, secrets by name) and of the administrative acts, as pydantic models for
``/openapi.json``. Like ``models``, they allow more fields than they declare.
"""

from __future__ import annotations

from pydantic import Field

from reconciler.web.models import ChangeSet, Deployment, Ended, Out


class GrantBrief(Out):
    grant: str = Field(description="deploy or approve")
    project: str
    environment: str | None = Field(description="null: every environment of the project")


class TokenBrief(Out):
    id: str
    name: str | None
    expires_at: str | None
    via: str | None = Field(default=None, description="sso: a single sign-on session")


class Whoami(Out):
    member: str
    role: str = Field(description="owner, admin, member or viewer")
    grants: list[GrantBrief]
    token: TokenBrief | None = Field(description="the token the request came with")
    server: str | None
    mode: str = Field(description="remote (a token) or local (the store's operator)")


class Member(Out):
    name: str
    role: str
    slack_id: str | None
    email: str | None
    oidc_subject: str | None


class MemberList(Out):
    members: list[Member]


class MemberOne(Out):
    member: Member


class MemberGone(Out):
    name: str
    role: str


class MemberRemoved(Out):
    member: MemberGone
    removed: bool


class Grant(GrantBrief):
    id: str
    member: str
    created_at: str
    created_by: str


class GrantList(Out):
    grants: list[Grant]


class GrantOne(Out):
    grant: Grant


class GrantRemoved(Out):
    grant: GrantBrief
    removed: bool


class Token(Out):
    id: str
    member: str
    role: str
    name: str | None
    created_at: str
    expires_at: str | None
    last_used_at: str | None


class TokenList(Out):
    tokens: list[Token]


class TokenCreated(Token):
    token: str = Field(description="the token itself: shown this once, stored hashed")


class TokenGone(Out):
    id: str
    member: str
    revoked: bool


class TokenRevoked(Out):
    token: TokenGone


class PolicyValues(Out):
    forbid_self_approval: bool
    rollbacks_skip_approval: bool


class Policies(Out):
    policies: PolicyValues


class PolicyValue(Out):
    key: str
    value: bool


class PolicySet(Out):
    policy: PolicyValue


class Freeze(Out):
    id: str
    days: str
    start: str = Field(alias="from")
    end: str = Field(alias="to")
    tz: str


class FreezeList(Out):
    freezes: list[Freeze]


class FreezeOne(Out):
    freeze: Freeze


class FreezeId(Out):
    id: str


class FreezeRemoved(Out):
    freeze: FreezeId
    removed: bool


class ServiceSet(Out):
    project: str
    environment: str
    service: str
    skip_production_approval: bool


class SecretList(Out):
    secrets: list[str] = Field(description="names only")


class SecretSet(Out):
    secret: str
    change: str = Field(description="created, changed or unchanged")
    changeset: ChangeSet | None = Field(description="what the new value staged, if anything")


class SecretDeleted(Out):
    secret: str
    deleted: bool


class ProjectSet(Out):
    project: str
    key: str
    value: str = Field(description="as set; a secret or a URL's credentials masked")


class ProjectRemoved(Out):
    project: str
    forgotten: bool
    pending_teardown: list[str] = Field(description="env/unit waiting for their cluster")


class ReconcilePass(Out):
    polled: int
    staged_changesets: list[str]
    blocked: dict[str, str]
    expired_approvals: int
    steps: int
    busy: bool = Field(description="something can still move without a person")


class SimulatedChange(Out):
    namespace: str
    object: str


class ChangeSetApplied(Out):
    changeset: ChangeSet
    deployments: list[Deployment]
    ended: list[Ended]


class ClusterOne(Out):
    context: str | None = Field(description="the kubeconfig context; null: in-cluster")
    server: str | None
    version: str | None = Field(description="the API server's, e.g. v1.20.2; null if unreachable")
    reachable: bool
    error: str | None = Field(description="why it could not be reached or signed in to")
    credentials: str | None = Field(description="token, exec, client-certificate or in-cluster")
    environments: list[str] = Field(description="project/environment deploying there")


class ClusterList(Out):
    clusters: list[ClusterOne]


class SsoInfo(Out):
    enabled: bool
    issuer: str | None
    device: bool = Field(description="the provider offers the device authorization grant")


class SsoDevice(Out):
    handle: str = Field(description="poll POST /api/v1/sso/token with it; never shown")
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    interval: int = Field(description="seconds between polls")
    expires_in: int


class SsoAuthorize(Out):
    handle: str
    authorization_url: str = Field(description="to open in the person's browser")
    expires_in: int


class SsoToken(Out):
    status: str = Field(description="pending or signed-in")
    interval: int | None = Field(description="pending: seconds before the next poll")
    token: str | None = Field(description="signed-in: the session token, shown this once")
    member: str | None
    role: str | None
    expires_at: str | None
    admin_for_session: bool = Field(description="an admin for this session by group")
