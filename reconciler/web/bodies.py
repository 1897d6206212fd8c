"""The API's request bodies as pydantic models, so ``/openapi.json`` describes them and a typo
is a 422 rather than silently ignored (unknown keys are refused).

The acts read a body as ``model_dump(by_alias=True)`` gives it; the command line sends those
same keys, whether it talks to a server or to the acts in its own process.
"""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from reconciler import durations
from reconciler.web.models import NAME_PATTERN, RELEASE_PATTERN

MEMBER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$"
SLUG_PATTERN = r"^[a-z](?:[a-z0-9-]{0,38}[a-z0-9])?$"
ROLE_PATTERN = r"^(owner|admin|member|viewer)$"
EMAIL_PATTERN = r"^[^@\s]{1,64}@[^@\s]{1,189}$"
BOOLEAN_PATTERN = r"^(true|false|yes|no|on|off|1|0)$"
TOKEN_NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]{1,100}$"  # printable: it is shown in tables
_DAY = "(mon|tue|wed|thu|fri|sat|sun)"
DAYS_PATTERN = f"^{_DAY}(,{_DAY}){{0,6}}$"
TIME_PATTERN = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"
SETTINGS_PATTERN = (
    r"^(concurrency|interval|branch|path|repo|slack_channel|webhook_secret|webhook_limit"
    r"|cluster\.[A-Za-z0-9][A-Za-z0-9._-]{0,99})$"
)


class In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


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


class ChangeSetApply(In):
    message: str | None = Field(
        default=None,
        description="what you say about it, at most 500 characters (longer is refused): "
        "recorded on the change set, its deployments' first event and its approval request",
    )


class Redeploy(In):
    environment: str = Field(pattern=NAME_PATTERN, validation_alias=_ENVIRONMENT)


class Suspend(In):
    environment: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        validation_alias=_ENVIRONMENT,
        description="only this environment (default: the whole project)",
    )
    reason: str = Field(min_length=1, max_length=2000)


class Resume(In):
    environment: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        validation_alias=_ENVIRONMENT,
        description="only this environment (default: the whole project)",
    )


class ProjectAdd(In):
    slug: str = Field(pattern=SLUG_PATTERN)
    repo: str = Field(min_length=1, max_length=2000, description="git URL or a path on the server")
    branch: str | None = Field(
        default=None, min_length=1, max_length=255, description="default: main"
    )
    path: str | None = Field(
        default=None, min_length=1, max_length=1000, description="default: nebula.toml"
    )
    interval: str | None = Field(
        default=None,
        pattern=durations.PATTERN,
        max_length=durations.TEXT_LONGEST,
        description="poll interval (default 60s)",
    )
    no_check: bool = Field(
        default=False,
        description="register it without checking that the repository answers and has the branch",
    )


class Setting(In):
    key: str = Field(pattern=SETTINGS_PATTERN, description="concurrency, interval, repo, ...")
    value: str = Field(max_length=4000)


class Reconcile(In):
    project: str | None = Field(default=None, pattern=NAME_PATTERN, max_length=40)
    poll: bool = Field(default=True, description="poll the repositories first")


class MemberSet(In):
    role: str | None = Field(
        default=None, pattern=ROLE_PATTERN, description="owner, admin, member or viewer"
    )
    slack_id: str | None = Field(default=None, min_length=1, max_length=40)
    email: str | None = Field(default=None, pattern=EMAIL_PATTERN, max_length=254)
    oidc_subject: str | None = Field(default=None, min_length=1, max_length=255)


class MemberAdd(MemberSet):
    name: str = Field(pattern=MEMBER_PATTERN)
    role: str = Field(pattern=ROLE_PATTERN, description="owner, admin, member or viewer")


class GrantAdd(In):
    member: str = Field(pattern=MEMBER_PATTERN)
    grant: str = Field(pattern=r"^(deploy|approve)$")
    project: str = Field(pattern=NAME_PATTERN, max_length=40)
    environment: str | None = Field(
        default=None, pattern=NAME_PATTERN, max_length=40, description="default: every one"
    )


class TokenCreate(In):
    """Always the caller's own token (a token is its member)."""

    name: str | None = Field(
        default=None, pattern=TOKEN_NAME_PATTERN, description="what it is for, e.g. ci"
    )
    expires: str | None = Field(
        default=None,
        pattern=durations.PATTERN,
        max_length=durations.TEXT_LONGEST,
        description="a lifetime, e.g. 30d (at most 10 years)",
    )


class Value(In):
    value: str = Field(pattern=BOOLEAN_PATTERN, description="true or false")


class FreezeAdd(In):
    days: str = Field(pattern=DAYS_PATTERN, description="e.g. sat,sun")
    start: str = Field(alias="from", pattern=TIME_PATTERN, description="HH:MM")
    end: str = Field(alias="to", pattern=TIME_PATTERN, description="HH:MM; 24:00 ends the day")
    tz: str | None = Field(default=None, max_length=64, description="an IANA zone; default UTC")


class ServiceSetting(In):
    environment: str = Field(pattern=NAME_PATTERN, validation_alias=_ENVIRONMENT)
    key: str = Field(pattern=r"^skip_production_approval$", description="skip_production_approval")
    value: str = Field(pattern=BOOLEAN_PATTERN, description="true or false")


class SecretValue(In):
    value: str = Field(min_length=1, description="sent once; never shown or logged")


class SimulatedEdit(In):
    namespace: str = Field(max_length=253)
    object: str = Field(max_length=300, description="KIND/NAME")
    path: str = Field(max_length=300, description="e.g. spec.replicas")
    value: str = Field(max_length=4000, description="a YAML scalar: 5, true, debug")


class SimulatedDelete(In):
    namespace: str = Field(max_length=253)
    object: str = Field(max_length=300, description="KIND/NAME")


class ChannelAdd(In):
    """Checked by the act, so a bad target is refused in the same words locally and remotely
    (one line and a hint), and never echoed: it may be a secret."""

    kind: str = Field(
        pattern=r"^(slack|pagerduty|teams|email|webhook)$",
        max_length=20,
        description="slack, pagerduty, teams, email or webhook",
    )
    target: str = Field(
        max_length=4000,
        description="a Slack channel id, a PagerDuty routing key, a Teams workflow URL, "
        "e-mail addresses (comma-separated) or a webhook URL; sent once, never answered back",
    )
    project: str | None = Field(default=None, max_length=40, description="default: everywhere")
    environment: str | None = Field(
        default=None, max_length=100, validation_alias=_ENVIRONMENT, description="needs project"
    )
    on: str | None = Field(
        default=None,
        max_length=200,
        description="events: approval,failure,drift,healthy,blocked (default approval,failure,drift)",
    )


class InboxRead(In):
    """Checked by the act (one item id, or all), so both doors refuse in the same words."""

    id: str | None = Field(
        default=None, max_length=40, description="an item: approval-12, decision-12, failure-40"
    )
    all: bool = Field(default=False, description="every unread item")


class SsoAuthorizeBody(In):
    redirect_uri: str = Field(
        max_length=100,
        pattern=r"^http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}/callback$",
        description="the command line's loopback listener: http://127.0.0.1:PORT/callback",
    )


class SsoTokenBody(In):
    handle: str = Field(max_length=200)
    code: str | None = Field(default=None, max_length=2000, description="the loopback's code")
    state: str | None = Field(default=None, max_length=200)
