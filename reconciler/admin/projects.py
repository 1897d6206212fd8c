"""Registered projects: a git repository, a tracked branch and the path of its nebula.toml.

A repository URL with credentials in it (``https://user:token@host/x``, ``?private_token=``)
is stored twice: ``repo_url`` holds it as every output shows it (``https://***@host/x``, by
``urls.sanitize_url``), ``repo_url_encrypted`` the URL as given, encrypted with the vault;
``remote_url`` decrypts it for git alone.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import numbers
from reconciler.admin import repourls
from reconciler.admin.places import NO_PROJECTS as NO_PROJECTS
from reconciler.admin.places import environment as environment
from reconciler.admin.places import get as get
from reconciler.admin.places import listing as listing
from reconciler.admin.places import unit as unit
from reconciler.admin.places import units as units
from reconciler.admin.repourls import seal_credentials as seal_credentials
from reconciler.admin.repourls import shown_repo as shown_repo
from reconciler.admin.suspensions import Suspension as Suspension
from reconciler.admin.suspensions import suspended as suspended
from reconciler.admin.suspensions import suspension_of as suspension_of
from reconciler.clock import Clock
from reconciler.durations import parse_duration
from reconciler.errors import (
    ConfigurationError,
    ConflictError,
    InvalidFileError,
    shown,
)
from reconciler.gitsource import names, urls
from reconciler.model import validation
from reconciler.model.reading import SLUG
from reconciler.model.specs import EnvironmentConfig, EnvironmentSpec
from reconciler.store import schema
from reconciler.store.crypto import Vault

SETTABLE = (
    "concurrency",
    "interval",
    "branch",
    "path",
    "repo",
    "slack_channel",
    "webhook_secret",
    "webhook_limit",
    "cluster.ENV",
)


def add(
    session: Session,
    clock: Clock,
    slug: str,
    repo: str,
    *,
    branch: str = "main",
    path: str = "nebula.toml",
    interval: timedelta = timedelta(seconds=60),
    vault: Vault | None = None,
) -> schema.Project:
    check_new(session, slug, repo, branch=branch, path=path, interval=interval)
    project = schema.Project(
        slug=slug,
        repo_url="",
        branch=_branch(branch),
        path=_path(path),
        interval_seconds=int(interval.total_seconds()),
        clusters={},
        created_at=clock.now(),
        next_poll_at=clock.now(),
    )
    repourls.store_repo(project, vault, repo)
    session.add(project)
    session.flush()
    return project


def check_new(
    session: Session,
    slug: str,
    repo: str,
    *,
    branch: str = "main",
    path: str = "nebula.toml",
    interval: timedelta = timedelta(seconds=60),
) -> None:
    """What ``add`` refuses, said before anything else is done (such as asking the remote)."""
    if not SLUG.fullmatch(slug):
        raise ConfigurationError(
            f"{shown(slug)} is not a valid project slug",
            hint="use lowercase letters, digits and '-', starting with a letter, at most 40 characters",
        )
    if find(session, slug) is not None:
        raise ConflictError(f"A project named '{slug}' already exists")
    _check_repo(repo)
    _branch(branch)
    _path(path)
    _check_interval(interval)


def _check_repo(repo: str) -> None:
    if not repo.strip():
        raise ConfigurationError("--repo is empty", hint="give a git URL or a local path")
    refused = urls.refusal(repo)
    if refused is not None:
        raise ConfigurationError(refused, hint=f"use {urls.ACCEPTED}")
    path = repo.strip()
    local = Path(path).expanduser()
    if path.startswith(("/", "~")) and local.exists() and not local.is_dir():
        raise ConfigurationError(
            f"{path} is not a directory: a local repository is a directory (or a bare one)",
            hint=f"use {urls.ACCEPTED}",
        )


def _branch(name: str) -> str:
    """A branch name git allows (``git check-ref-format --branch``), else a clear error."""
    problem = names.branch_problem(name)
    if problem is not None:
        raise ConfigurationError(
            f"{shown(name)} cannot be the tracked branch: {problem}",
            hint="give a branch name as git allows it, e.g. main or release/2.0",
        )
    return name


def _path(path: str) -> str:
    """A path inside the repository, relative to its root, else a clear error."""
    problem = names.path_problem(path)
    if problem is not None:
        raise ConfigurationError(
            f"{shown(path)} cannot be the path of nebula.toml: {problem}",
            hint="give a path relative to the repository's root, e.g. nebula.toml or "
            "deploy/nebula.toml",
        )
    return names.normal_path(path)


def remote_url(project: schema.Project, vault: Vault) -> str:
    """The URL git is handed: as registered, credentials included."""
    if project.repo_url_encrypted is None:
        return project.repo_url
    return vault.decrypt(project.repo_url_encrypted)


def schedule_next(project: schema.Project, wait: timedelta) -> None:
    """After a poll: the next one ``wait`` after it, or sooner when a coalesced push
    notification (see ``web/hooks.py``) was promised a poll in between."""
    assert project.last_polled_at is not None
    when = project.last_polled_at + wait
    promised = project.webhook_polled_at
    if promised is not None and project.last_polled_at < promised < when:
        when = promised
    project.next_poll_at = when


def _reschedule(project: schema.Project) -> None:
    """A new interval counts from the last poll at once, longer or shorter (interfaces.md:
    "the next poll is rescheduled"); a poll promised to a coalesced push notification stays."""
    if project.last_polled_at is None:
        return  # never polled: it is due already
    schedule_next(project, timedelta(seconds=project.interval_seconds))


def _limit_seconds(value: str) -> int:
    if value.strip().lower() in ("0", "none", "off", "unlimited"):
        return 0
    return int(parse_duration(value, setting="webhook_limit").total_seconds())


def _check_interval(interval: timedelta) -> None:
    if interval.total_seconds() < 1:
        raise ConfigurationError("the poll interval must be at least 1s", hint="e.g. --interval 60")


def find(session: Session, slug: str) -> schema.Project | None:
    return session.scalars(select(schema.Project).where(schema.Project.slug == slug)).first()


def set_value(
    session: Session, vault: Vault, project: schema.Project, key: str, value: str
) -> None:
    if key == "concurrency":
        if value.strip().lower() in ("", "none", "unlimited", "0"):
            project.concurrency = None
            return
        number = numbers.whole(value)
        if number is None:
            raise ConfigurationError(
                f"concurrency {shown(value)} is not a number", hint="e.g. 2, or unlimited"
            )
        project.concurrency = number
    elif key == "interval":
        interval = parse_duration(value, setting="interval")
        _check_interval(interval)
        project.interval_seconds = int(interval.total_seconds())
        _reschedule(project)
    elif key == "branch":
        project.branch = _branch(value)
    elif key == "path":
        project.path = _path(value)
    elif key == "repo":
        _check_repo(value)
        repourls.store_repo(project, vault, value)
    elif key == "slack_channel":
        project.slack_channel = value or None
    elif key == "webhook_secret":
        project.webhook_secret = vault.encrypt(value) if value else None
    elif key == "webhook_limit":
        project.webhook_limit_seconds = _limit_seconds(value)
    elif key.startswith("cluster."):
        env = key.split(".", 1)[1]
        project.clusters = {**(project.clusters or {}), env: value}
    else:
        raise ConfigurationError(
            f"unknown project setting {shown(key)}", hint=f"settings: {', '.join(SETTABLE)}"
        )


def live_environment(env: schema.Environment) -> EnvironmentSpec:
    """The environment's settings in effect (the last applied change set's)."""
    return EnvironmentSpec(
        env.name,
        protected=env.protected,
        promote_from=env.promote_from,
        soak_seconds=env.soak_seconds or 0,
        self_heal=env.self_heal,
    )


def set_environment(env: schema.Environment, spec: EnvironmentSpec) -> None:
    env.protected = spec.protected
    env.promote_from = spec.promote_from
    env.soak_seconds = spec.soak_seconds
    env.self_heal = spec.self_heal


def recorded_config(env: schema.Environment) -> EnvironmentConfig | None:
    """The last file applied to ``env`` (what the next push is compared with), as that
    environment's configuration; None before the first change set took effect."""
    if not env.recorded_file:
        return None
    try:
        return stored_config(env, env.recorded_file, env.recorded_manifests)
    except InvalidFileError:
        return None


def stored_config(
    env: schema.Environment, text: str, manifests: dict[str, str] | None
) -> EnvironmentConfig | None:
    """``env``'s configuration in a stored file, with the raw manifest files stored beside it
    (``manifests``: None when the file named none)."""
    return validation.load(text, files=manifests, namespace=lambda _: env.namespace).environment(
        env.name
    )
