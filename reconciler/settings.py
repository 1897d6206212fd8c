"""Server settings: environment variables, or the same keys in ``nebula-server.toml``.

Read once at the edge (CLI or server start) and passed down; nothing below reads
``os.environ`` itself, so tests set settings explicitly.

The fields of ``Settings`` are the table of settings: each is declared on one line with its
kind, its default as people write it, whether it is secret and the line the README and
``nebula --help`` show; ``TABLE`` reads them back. Loading refuses nonsense. An unknown key in
the settings file, a value of the wrong kind or a choice Nebula does not know is a
``ConfigurationError`` that names the setting (never a secret's value) with a hint: the closest
known key, the allowed values, or the accepted forms. An unknown ``NEBULA_*`` environment
variable is not an error (an environment holds more than Nebula's own settings):
``unknown_variables`` lists them with the closest known one, for the CLI to warn about.
"""

# The declaration helpers below return dataclasses.field(...), never a shared default value.
# ruff: noqa: RUF009

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import TypeVar

from reconciler.durations import LONGER_HINT, parse_duration
from reconciler.errors import ConfigurationError
from reconciler.lazy import TOML
from reconciler.numbers import parse_size

PREFIX = "NEBULA_"
DEFAULT_STATE_DIR = Path(".nebula")
DOCUMENTED = "nebula --help lists every setting (so does the README, under Settings)"

_T = TypeVar("_T")
_SPEC = "nebula.setting"  # the field metadata key that holds a setting's Spec


class Kind(Enum):
    STR = "str"
    DURATION = "duration"  # 90s, 5m, 24h, 1d; a bare number is seconds
    PATH = "path"
    INT = "int"  # a whole number, 1 or more
    BOOL = "bool"
    CHOICE = "choice"  # one of Spec.choices
    SIZE = "size"  # bytes: 1MiB, 512KiB; a bare number is bytes


@dataclass(frozen=True)
class Spec:
    """One setting: ``name`` is its field, ``variable`` its environment variable."""

    name: str
    kind: Kind
    default: str  # as written in the environment or the file; "" for none
    about: str
    secret: bool = False  # never printed: not in repr, errors or logs
    choices: tuple[str, ...] = ()

    @property
    def variable(self) -> str:
        return PREFIX + self.name.upper()


def _field(
    value: _T,
    kind: Kind,
    default: str,
    about: str,
    secret: bool = False,
    choices: tuple[str, ...] = (),
) -> _T:
    spec = Spec("", kind, default, about, secret, choices)
    return field(default=value, repr=not secret, metadata={_SPEC: spec})


def _text(default: str, about: str, *, secret: bool = False) -> str:
    return _field(default, Kind.STR, default, about, secret=secret)


def _choice(default: str, choices: tuple[str, ...], about: str) -> str:
    return _field(default, Kind.CHOICE, default, about, choices=choices)


def _duration(default: str, about: str) -> timedelta:
    return _field(parse_duration(default), Kind.DURATION, default, about)


def _path(default: str, about: str) -> Path:
    return _field(Path(default), Kind.PATH, default, about)


def _optional_path(about: str) -> Path | None:
    return _field(None, Kind.PATH, "", about)


def _int(default: int, about: str) -> int:
    return _field(default, Kind.INT, str(default), about)


def _size(default: str, about: str) -> int:
    return _field(parse_size(default), Kind.SIZE, default, about)


@dataclass(frozen=True)
class Settings:
    """Every setting, one line each (adding one is adding a line here and in the README)."""

    # fmt: off
    database_url: str = _text("", "the store: empty is SQLite nebula.db in NEBULA_STATE_DIR; postgresql+psycopg://user:password@host/db for several replicas", secret=True)
    cluster: str = _choice("simulated", ("simulated", "kubernetes"), "where releases run: the embedded simulated cluster, or a Kubernetes cluster")
    kubeconfig: str = _text("", "the kubeconfig for NEBULA_CLUSTER=kubernetes; empty: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account")
    kube_namespace_role: str = _text("", "the ClusterRole Nebula binds to NEBULA_KUBE_SERVICE_ACCOUNT with a RoleBinding in each namespace it creates (deploy/kubernetes: nebula-namespace); empty: none")
    kube_service_account: str = _text("", "NAMESPACE/NAME of the ServiceAccount Nebula runs as: the subject of the RoleBindings of NEBULA_KUBE_NAMESPACE_ROLE")
    slack_bot_token: str = _text("", "the Slack bot token; without it notifications are recorded but not sent", secret=True)
    slack_signing_secret: str = _text("", "verifies Slack's requests to /slack/interactions; without it they get 401", secret=True)
    slack_api_url: str = _text("https://slack.com/api/", "Slack's Web API")
    slack_channel: str = _text("", "the Slack channel id notifications go to (a project may set its own)")
    public_url: str = _text("http://127.0.0.1:8080", "Nebula's own address, for links in messages")
    smtp_url: str = _text("", "the mail server e-mail channels send through: smtp://user:password@host:587 (STARTTLS when offered) or smtps://", secret=True)
    email_from: str = _text("", "the From of notification e-mails; empty: nebula@ and the host of NEBULA_PUBLIC_URL")
    pagerduty_url: str = _text("https://events.pagerduty.com", "PagerDuty's Events API v2 (pagerduty channels)")
    oidc_issuer: str = _text("", "single sign-on: the OpenID Connect provider's issuer URL (its /.well-known/openid-configuration is read when someone first signs in)")
    oidc_client_id: str = _text("", "single sign-on: Nebula's client id at NEBULA_OIDC_ISSUER")
    oidc_client_secret: str = _text("", "single sign-on: Nebula's client secret (a confidential client; empty: a public client)", secret=True)
    oidc_admin_groups: str = _text("", "single sign-on: groups (comma-separated) whose members, by the ID token's groups claim, are admins for that session")
    oidc_default_role: str = _choice("", ("", "viewer", "member", "admin", "owner"), "single sign-on: the role of a member created for a person Nebula does not know yet (audited); empty: such a person is refused")
    session_ttl: timedelta = _duration("12h", "how long a single sign-on session lasts (the page's cookie, nebula login --sso)")
    page_auth: str = _choice("public", ("public", "sso"), "who may read the status page and its JSON: everyone, or people signed in with single sign-on (or bearing a token)")
    approval_ttl: timedelta = _duration("24h", "how long an approval request stays open")
    readiness_timeout: timedelta = _duration("5m", "how long a new release may take to become ready")
    route_activation_timeout: timedelta = _duration("2m", "how long moving traffic to a new release may take")
    poll_interval: timedelta = _duration("60s", "how often a project is polled (a project may set its own interval)")
    drift_interval: timedelta = _duration("3m", "how often each unit's live objects are compared with its active release (drift)")
    simulated_delay: timedelta = _duration("1s", "how long each stage takes on the simulated cluster")
    simulated_latency: timedelta = _duration("0s", "how long each call to the simulated cluster's API takes, in real time (a benchmark aid; 0: no wait)")
    simulated_faults: str = _text("", "a TOML file of faults the simulated cluster injects, by image (a test and demo aid)")
    secret_key: str = _text("", "encrypts secrets at rest, the same on every replica; empty: generated into NEBULA_STATE_DIR/secret.key", secret=True)
    state_dir: Path = _path(str(DEFAULT_STATE_DIR), "the SQLite store, the generated secret key and the git cache")
    git_cache_dir: Path | None = _optional_path("the git cache; empty: NEBULA_STATE_DIR/git")
    git_credentials: str = _text("", "tokens for https remotes: host=token,host2=token2", secret=True)
    git_ssh_key: str = _text("", "the path of a private key for ssh:// remotes")
    git_ssh_key_passphrase: str = _text("", "the passphrase of NEBULA_GIT_SSH_KEY", secret=True)
    replica_id: str = _text("", "this replica's name in leases; empty: hostname:pid")
    workers: int = _int(8, "what one replica runs at once: scheduler jobs (polls, reconcile ticks, timers), and the cluster calls of a tick once they wait on the API (calls that return at once are made one after the other)")
    max_config_size: int = _size("1MiB", "the largest nebula.toml Nebula reads: a larger one is a configuration blocker at poll time and an error for nebula validate")
    # fmt: on

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state_dir / 'nebula.db'}"

    @property
    def resolved_git_cache_dir(self) -> Path:
        return self.git_cache_dir or (self.state_dir / "git")

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


TABLE: tuple[Spec, ...] = tuple(replace(f.metadata[_SPEC], name=f.name) for f in fields(Settings))
_BY_NAME = {spec.name: spec for spec in TABLE}


@dataclass(frozen=True)
class Unknown:
    """A ``NEBULA_*`` environment variable that is no setting: warned about, then ignored."""

    variable: str
    hint: str

    @property
    def message(self) -> str:
        return f"unknown setting {self.variable}"


# Read by the command line, not the server (interfaces.md "Settings (1.2)"): known all the same.
CLIENT_VARIABLES = {
    "server": "the Nebula server a remote command talks to (instead of the context in use)",
    "token": "the API token a remote command sends (instead of the context's)",
    "config_home": "where nebula login keeps its contexts (default ~/.config/nebula)",
}


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[Unknown]:
    """Each ``NEBULA_*`` variable that is no setting, with a hint naming the closest one."""
    env = os.environ if environ is None else environ
    known = set(_BY_NAME) | set(CLIENT_VARIABLES)
    return [
        Unknown(variable, _closest(variable[len(PREFIX) :].lower()))
        for variable in sorted(env)
        if variable.startswith(PREFIX) and variable[len(PREFIX) :].lower() not in known
    ]


def load(environ: Mapping[str, str] | None = None, config_file: str | None = None) -> Settings:
    """Settings from a config file (if given) overlaid with ``NEBULA_*`` environment variables."""
    env = os.environ if environ is None else environ
    given = _from_file(config_file) if config_file else {}
    for variable, value in env.items():
        name = variable[len(PREFIX) :].lower()
        if variable.startswith(PREFIX) and name in _BY_NAME:
            given[name] = (value, variable)
    values = {name: convert(_BY_NAME[name], raw, where) for name, (raw, where) in given.items()}
    settings = Settings(**values)  # type: ignore[arg-type]
    if settings.page_auth == "sso" and not (settings.oidc_issuer and settings.oidc_client_id):
        raise ConfigurationError(
            "NEBULA_PAGE_AUTH=sso needs single sign-on: NEBULA_OIDC_ISSUER and "
            "NEBULA_OIDC_CLIENT_ID are not both set",
            hint="set them (and NEBULA_OIDC_CLIENT_SECRET for a confidential client), or "
            "unset NEBULA_PAGE_AUTH for a public page",
        )
    return settings


def _from_file(path: str) -> dict[str, tuple[object, str]]:
    """Each setting the file gives: its TOML value and where it was (``key in path``)."""
    try:
        data = TOML.get()(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not TOML
        raise ConfigurationError(f"cannot read settings file {path}: {exc}") from exc
    given: dict[str, tuple[object, str]] = {}
    keys: dict[str, str] = {}
    for key, value in data.items():
        name = key.lower().removeprefix(PREFIX.lower())
        if name not in _BY_NAME:
            raise ConfigurationError(f"unknown setting {key} in {path}", hint=_closest(name))
        if name in keys:
            raise ConfigurationError(
                f"{keys[name]} and {key} in {path} are the same setting", hint="keep one of them"
            )
        keys[name] = key
        given[name] = (value, f"{key} in {path}")
    return given


def _closest(name: str) -> str:
    close = difflib.get_close_matches(name, [*_BY_NAME, *CLIENT_VARIABLES], n=1)
    return f"did you mean {PREFIX}{close[0].upper()}?" if close else DOCUMENTED


def convert(spec: Spec, raw: object, where: str) -> object:
    """``raw`` (a string from the environment, a TOML scalar from the file) as ``spec`` says."""
    if isinstance(raw, bool):
        text = str(raw).lower()
    elif isinstance(raw, str | int | float):
        text = str(raw)
    else:
        kind = "table" if isinstance(raw, dict) else "list" if isinstance(raw, list) else "date"
        raise ConfigurationError(
            f"{where} is a {kind}", hint="give a string, a number or true/false"
        )
    shown = "the value given (a secret, not shown)" if spec.secret else repr(text)
    if spec.kind is Kind.STR:
        return text
    if spec.kind is Kind.CHOICE:
        if text in spec.choices:
            return text
        close = difflib.get_close_matches(text, spec.choices, n=1)
        allowed = " or ".join(spec.choices)
        hint = f"did you mean {close[0]}?" if close else f"unset it for the default, {spec.default}"
        raise ConfigurationError(f"{where} must be {allowed}, not {shown}", hint=hint)
    if spec.kind is Kind.DURATION:
        try:
            return parse_duration(text, setting=spec.variable)
        except ConfigurationError as exc:
            too_long = exc.hint == LONGER_HINT
            raise ConfigurationError(
                f"{where} must be a duration of at most 10 years, not {shown}"
                if too_long
                else f"{where} must be a duration, not {shown}",
                hint="write a number and a unit: 90s, 5m, 24h or 1d",
            ) from None
    if spec.kind is Kind.SIZE:
        try:
            size = parse_size(text, setting=spec.variable)
        except ConfigurationError:
            size = 0
        if size >= 1:
            return size
        raise ConfigurationError(
            f"{where} must be a size, not {shown}",
            hint="write a number of bytes, or a number and a unit: 512KiB, 1MiB, 2GiB",
        )
    if spec.kind is Kind.INT:
        if re.fullmatch(r"\s*[0-9]+\s*", text) and int(text) >= 1:
            return int(text)
        raise ConfigurationError(
            f"{where} must be a whole number, 1 or more, not {shown}",
            hint=f"write it in digits, e.g. {spec.default}",
        )
    if spec.kind is Kind.BOOL:
        words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
        if text.strip().lower() in words:
            return words[text.strip().lower()]
        raise ConfigurationError(
            f"{where} must be true or false, not {shown}", hint="use true or false"
        )
    if not text.strip():  # Kind.PATH
        default = f" (default {spec.default})" if spec.default else ""
        raise ConfigurationError(f"{where} is empty", hint=f"give a path, or unset it{default}")
    return Path(text)
