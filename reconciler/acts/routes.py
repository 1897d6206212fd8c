"""Every route of ``/api/v1``, once: its method and path, the act it runs, who may call it, and
how ``/openapi.json`` documents it. The HTTP app builds its routes from this table
(``web.routing``) and the command line's local backend dispatches on it (``cli.local``), so
nothing a command does locally lacks a documented route, and the other way round.

Acts are named as ``module:function`` and loaded on first use (``reconciler.lazy``).
"""

from __future__ import annotations

import re
from enum import StrEnum

from reconciler import durations
from reconciler.acts.declaring import Access, Param, Route
from reconciler.core.states import ApprovalState, ChangeSetState

_ACTS = "reconciler.acts."
ID = r"^[0-9]{1,18}$"

SLUG = Param("slug", in_path=True, max_length=40)
SERVICE = Param("service", in_path=True, max_length=40)
ENV_PATH = Param("env", in_path=True, max_length=40)
PROJECT = Param("project", max_length=40, about="a project slug")
ENV = Param("env", about="an environment")
SERVICE_Q = Param("service", about="a service or database")
MEMBER = Param("member", about="a member's name", pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


def _state(kind: type[StrEnum]) -> Param:
    named = "|".join(state.value for state in kind)
    about = f"only those in this state ({named.replace('|', ', ')})"
    return Param("state", pattern=f"^({named})$", max_length=30, about=about)


CHANGESET_STATE = _state(ChangeSetState)
APPROVAL_STATE = _state(ApprovalState)


def _id(name: str, what: str) -> Param:
    return Param(name, in_path=True, pattern=None, max_length=40, about=f"a {what} id (a number)")


def _read(path: str, act: str, summary: str, response: str, *params: Param) -> Route:
    return Route("GET", path, _ACTS + act, Access.PAGE, summary, response, params=params)


def _private(path: str, act: str, summary: str, response: str, *params: Param) -> Route:
    return Route(
        "GET", path, _ACTS + act, Access.TOKEN, summary, response, params=params,
        statuses=(401, 403, 404, 422),
    )  # fmt: skip


def _act(
    method: str,
    path: str,
    act: str,
    summary: str,
    response: str,
    body: str | None,
    *params: Param,
    git: bool = False,
) -> Route:
    return Route(
        method, path, _ACTS + act, Access.ACT, summary, response, body=body, params=params,
        statuses=(401, 403, 404, 409, 422), git=git,
    )  # fmt: skip


NAME = Param("name", in_path=True, pattern=MEMBER.pattern, about="a member's name")
SECRET = Param("name", in_path=True, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$", about="a secret")
APPROVAL_ID = _id("approval_id", "approval")
DEPLOYMENT_ID = _id("deployment_id", "deployment")
CHANGESET_ID = _id("changeset_id", "change set")

# fmt: off
ROUTES: tuple[Route, ...] = (
    # -- what the status page shows: as public as the page ---------------------------------
    _read("/api/v1/projects", "reading:list_projects", "Registered projects", "ProjectList"),
    _read("/api/v1/projects/{slug}", "reading:get_project", "One project", "ProjectOne", SLUG),
    _read("/api/v1/status", "reading:status",
          "Active releases and in-flight deployments (nebula status)", "StatusList", PROJECT, ENV),
    _read("/api/v1/projects/{slug}/status", "reading:status",
          "One project's status (nebula status SLUG)", "StatusList", SLUG, ENV),
    Route("GET", "/api/v1/projects/{slug}/diff", _ACTS + "live:diff", Access.PAGE,
          "Live objects vs the active release's manifests (nebula diff)", "Diff",
          params=(SLUG, ENV, SERVICE_Q), statuses=(404, 422, 503)),
    _read("/api/v1/deployments", "reading:list_deployments",
          "Deployments, newest last (nebula deployments)", "DeploymentList", PROJECT, ENV,
          SERVICE_Q, Param("changeset", pattern=ID, max_length=18, about="only this change set's"),
          Param("limit", pattern=None, about="the newest N", integer=(1, 5000, 500))),
    _read("/api/v1/deployments/{deployment_id}", "reading:get_deployment",
          "One deployment with its events (nebula deployment show)", "DeploymentOne",
          DEPLOYMENT_ID),
    _read("/api/v1/changesets", "reading:list_changesets",
          "Change sets with their lines (nebula changesets)", "ChangeSetList", PROJECT,
          CHANGESET_STATE),
    _read("/api/v1/changesets/{changeset_id}", "reading:get_changeset",
          "One change set (nebula changeset show)", "ChangeSetOne", CHANGESET_ID),
    _read("/api/v1/approvals", "reading:list_approvals",
          "Pending and decided approvals (nebula approvals)", "ApprovalList", PROJECT,
          APPROVAL_STATE),
    _read("/api/v1/approvals/{approval_id}", "reading:get_approval", "One approval",
          "ApprovalOne", APPROVAL_ID),
    _read("/api/v1/projects/{slug}/services/{service}/history", "reading:history",
          "A service's releases, newest first (nebula history)", "HistoryList", SLUG, SERVICE,
          Param("env", required=True, max_length=40, about="the environment")),
    # -- single sign-on: anyone, to sign in ---------------------------------------------------
    Route("GET", "/api/v1/sso", _ACTS + "signing:info", Access.OPEN,
          "Whether this server signs people in with single sign-on, and with which grant",
          "SsoInfo", statuses=(503,)),
    Route("POST", "/api/v1/sso/device", _ACTS + "signing:device", Access.OPEN,
          "Start a device sign-in (RFC 8628) with the provider: the code to enter, where, and "
          "the handle to poll POST /api/v1/sso/token with", "SsoDevice",
          statuses=(404, 409, 422, 503)),
    Route("POST", "/api/v1/sso/authorize", _ACTS + "signing:authorize", Access.OPEN,
          "Start a sign-in whose answer comes to the command line's loopback listener "
          "(authorization code with PKCE)", "SsoAuthorize", body="SsoAuthorizeBody",
          statuses=(404, 422, 503)),
    Route("POST", "/api/v1/sso/token", _ACTS + "signing:token", Access.OPEN,
          "Finish a sign-in: poll a device sign-in, or hand over the loopback's code and "
          "state; answers a session token once signed in", "SsoToken", body="SsoTokenBody",
          statuses=(401, 403, 404, 409, 422, 503)),
    # -- reads that always need a token ----------------------------------------------------
    _private("/api/v1/whoami", "people:whoami",
             "Who the token acts as: member, role, grants (nebula whoami)", "Whoami"),
    _private("/api/v1/audit", "organization:audit",
             "The audit trail: administrative acts (nebula audit)", "AuditList",
             Param("since", pattern=durations.PATTERN, max_length=durations.TEXT_LONGEST,
                   about="a duration back from now, e.g. 24h")),
    _private("/api/v1/clusters", "clusters:list_clusters",
             "Each cluster Nebula deploys to, asked now: server, version, reachable or the "
             "error, credentials kind, environments (nebula clusters)", "ClusterList"),
    _private("/api/v1/members", "people:list_members", "Members (nebula member list)",
             "MemberList"),
    _private("/api/v1/grants", "people:list_grants", "Grants (nebula grant list)", "GrantList",
             MEMBER),
    _private("/api/v1/tokens", "people:list_tokens",
             "API tokens, never the tokens themselves: one's own, or everyone's for an admin",
             "TokenList", MEMBER),
    _private("/api/v1/policies", "organization:list_policies",
             "The policies (nebula policy list)", "Policies"),
    _private("/api/v1/freezes", "organization:list_freezes", "Weekly freeze windows",
             "FreezeList"),
    _private("/api/v1/notify/channels", "notify:list_channels",
             "Notification channels: kind, scope, events, a redacted target, last delivery "
             "and last error (nebula notify list)", "ChannelList"),
    _private("/api/v1/inbox", "inbox:list_inbox",
             "The caller's inbox: approvals they may decide, decisions on their requests, "
             "failures of their deployments; newest first (nebula inbox)", "InboxList",
             Param("unread", pattern=r"^(true|false)$", max_length=5,
                   about="true: only the items not read yet")),
    _private("/api/v1/projects/{slug}/environments/{env}/secrets", "organization:list_secrets",
             "Secret names, never values (nebula secret list)", "SecretList", SLUG, ENV_PATH),
    # -- acts: a token, and the rights of its member ---------------------------------------
    _act("POST", "/api/v1/approvals/{approval_id}/approve", "deploying:approve",
         "Approve a pending request (the approve grant there)", "Decided", None, APPROVAL_ID),
    _act("POST", "/api/v1/approvals/{approval_id}/reject", "deploying:reject",
         "Reject a pending request (the approve grant there)", "Decided", "Reject",
         APPROVAL_ID),
    _act("POST", "/api/v1/projects/{slug}/services/{service}/rollback", "deploying:rollback",
         "Roll back to a retained release (default: the previous one)", "Requested",
         "Rollback", SLUG, SERVICE),
    _act("POST", "/api/v1/projects/{slug}/services/{service}/promote", "deploying:promote",
         "Promote the source environment's active release to the target environment",
         "Requested", "Promote", SLUG, SERVICE),
    _act("POST", "/api/v1/projects/{slug}/services/{service}/redeploy", "deploying:redeploy",
         "A new release from the image active now", "Requested", "Redeploy", SLUG, SERVICE),
    _act("POST", "/api/v1/deployments/{deployment_id}/cancel", "deploying:cancel",
         "Cancel a deployment that has not taken traffic", "Cancelled", None, DEPLOYMENT_ID),
    _act("POST", "/api/v1/changesets/{changeset_id}/apply", "deploying:apply_changeset",
         "Apply a draft change set, or request its approval (the deploy grant there)",
         "ChangeSetApplied", "ChangeSetApply", CHANGESET_ID),
    _act("POST", "/api/v1/changesets/{changeset_id}/discard", "deploying:discard_changeset",
         "Discard a draft or a change set pending approval (the deploy grant there)",
         "ChangeSetOne", None, CHANGESET_ID),
    _act("POST", "/api/v1/projects/{slug}/suspend", "deploying:suspend",
         "Suspend a project or one environment: nothing is applied until resumed (admin)",
         "Suspended", "Suspend", SLUG),
    _act("POST", "/api/v1/projects/{slug}/resume", "deploying:resume",
         "Resume a suspended project or environment (admin)", "Suspended", "Resume", SLUG),
    _act("POST", "/api/v1/projects", "projects:add_project",
         "Register a project to watch (admin)", "ProjectOne", "ProjectAdd", git=True),
    _act("POST", "/api/v1/projects/{slug}/settings", "projects:set_project",
         "Change a project setting (admin)", "ProjectSet", "Setting", SLUG),
    _act("DELETE", "/api/v1/projects/{slug}", "projects:remove_project",
         "Tear down every environment, then forget the project (admin)", "ProjectRemoved",
         None, SLUG),
    _act("POST", "/api/v1/reconcile", "projects:reconcile",
         "One pass now: poll, stage, apply, advance (nebula reconcile)", "ReconcilePass",
         "Reconcile", git=True),
    _act("POST", "/api/v1/members", "people:add_member",
         "Add a member, or change an existing member's role (admin; owners: an owner)",
         "MemberOne", "MemberAdd"),
    _act("PATCH", "/api/v1/members/{name}", "people:set_member",
         "Change a member's role or identity (admin; owners: an owner)", "MemberOne",
         "MemberSet", NAME),
    _act("DELETE", "/api/v1/members/{name}", "people:remove_member",
         "Remove a member with their tokens and grants (admin; owners: an owner)",
         "MemberRemoved", None, NAME),
    _act("POST", "/api/v1/grants", "people:add_grant",
         "Grant deploy or approve in a project or environment (admin)", "GrantOne", "GrantAdd"),
    _act("DELETE", "/api/v1/grants", "people:remove_grant", "Remove a grant (admin)",
         "GrantRemoved", None, Param("member", required=True, pattern=MEMBER.pattern),
         Param("grant", required=True, pattern=r"^(deploy|approve)$", max_length=10),
         Param("project", required=True, max_length=40), Param("environment", max_length=40)),
    _act("POST", "/api/v1/tokens", "people:create_token",
         "Create an API token, shown once (one's own; another member's: admin)",
         "TokenCreated", "TokenCreate"),
    _act("DELETE", "/api/v1/tokens/{token_id}", "people:revoke_token",
         "Revoke a token (one's own; another member's: admin)", "TokenRevoked", None,
         _id("token_id", "token")),
    _act("PUT", "/api/v1/policies/{key}", "organization:set_policy", "Set a policy (admin)",
         "PolicySet", "Value",
         Param("key", in_path=True, pattern=r"^(forbid_self_approval|rollbacks_skip_approval)$")),
    _act("POST", "/api/v1/freezes", "organization:add_freeze",
         "Add a weekly freeze window (admin)", "FreezeOne", "FreezeAdd"),
    _act("DELETE", "/api/v1/freezes/{freeze_id}", "organization:remove_freeze",
         "Remove a freeze window (admin)", "FreezeRemoved", None, _id("freeze_id", "freeze")),
    _act("POST", "/api/v1/projects/{slug}/services/{service}/settings",
         "organization:set_service",
         "Set a service's skip_production_approval in an environment (admin)", "ServiceSet",
         "ServiceSetting", SLUG, SERVICE),
    _act("PUT", "/api/v1/projects/{slug}/environments/{env}/secrets/{name}",
         "organization:set_secret",
         "Set a secret: the value in the body, once; never answered back (admin)", "SecretSet",
         "SecretValue", SLUG, ENV_PATH, SECRET),
    _act("DELETE", "/api/v1/projects/{slug}/environments/{env}/secrets/{name}",
         "organization:delete_secret", "Delete a secret (admin)", "SecretDeleted", None, SLUG,
         ENV_PATH, SECRET),
    _act("POST", "/api/v1/notify/channels", "notify:add_channel",
         "Add a notification channel; its secrets are stored encrypted and never answered "
         "back, but a webhook's signing secret, this once (admin)", "ChannelAdded",
         "ChannelAdd"),
    _act("DELETE", "/api/v1/notify/channels/{channel_id}", "notify:remove_channel",
         "Remove a notification channel and the notices waiting for it (admin)",
         "ChannelRemoved", None, _id("channel_id", "notification channel")),
    _act("POST", "/api/v1/notify/channels/{channel_id}/test", "notify:test_channel",
         "Send a test notification to a channel now (admin; default: the Slack channel of "
         "the settings)", "ChannelTested", None,
         Param("channel_id", in_path=True, pattern=r"^([0-9]{1,18}|default)$", max_length=18,
               about="a channel id, or default")),
    _act("POST", "/api/v1/inbox/read", "inbox:mark_read",
         "Mark an item of the caller's inbox read, or all of them (any role)", "InboxMarked",
         "InboxRead"),
    _act("POST", "/api/v1/simulated/edit", "projects:simulated_edit",
         "Set a field of a live object on the simulated cluster (a test and demo aid; admin)",
         "SimulatedChange", "SimulatedEdit"),
    _act("POST", "/api/v1/simulated/delete", "projects:simulated_delete",
         "Delete a live object on the simulated cluster (a test and demo aid; admin)",
         "SimulatedChange", "SimulatedDelete"),
)
# fmt: on


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\{([a-z_]+)\}", r"(?P<\1>[^/]+)", path) + "$")


_MATCHERS = [(route, _pattern(route.path)) for route in ROUTES]


def match(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The route serving ``method path``, and its path parameters."""
    for route, pattern in _MATCHERS:
        found = pattern.match(path)
        if found is not None and route.method == method:
            return route, found.groupdict()
    return None
