"""Registered projects: a git repository, a tracked branch and the path of its nebula.toml."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler import numbers
from reconciler.clock import Clock
from reconciler.core.states import ServiceStatus
from reconciler.durations import parse_duration
from reconciler.errors import (
    ConfigurationError,
    ConflictError,
    InvalidFileError,
    NotFoundError,
    shown,
)
from reconciler.gitsource import names, urls
from reconciler.model import validation
from reconciler.model.reading import SLUG
from reconciler.model.specs import EnvironmentConfig
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
) -> schema.Project:
    if not SLUG.fullmatch(slug):
        raise ConfigurationError(
            f"{shown(slug)} is not a valid project slug",
            hint="use lowercase letters, digits and '-', starting with a letter, at most 40 characters",
        )
    if find(session, slug) is not None:
        raise ConflictError(f"A project named '{slug}' already exists")
    _check_repo(repo)
    _check_interval(interval)
    project = schema.Project(
        slug=slug,
        repo_url=repo.strip(),
        branch=_branch(branch),
        path=_path(path),
        interval_seconds=int(interval.total_seconds()),
        clusters={},
        created_at=clock.now(),
        next_poll_at=clock.now(),
    )
    session.add(project)
    session.flush()
    return project


def _check_repo(repo: str) -> None:
    if not repo.strip():
        raise ConfigurationError("--repo is empty", hint="give a git URL or a local path")
    scheme = urls.unsupported_scheme(repo)
    if scheme is not None:
        raise ConfigurationError(
            f"The repository URL {urls.sanitize_url(repo)} uses the unsupported scheme '{scheme}'",
            hint="use a local path, file://, git://, http(s):// or ssh:// (or user@host:path)",
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


def _check_interval(interval: timedelta) -> None:
    if interval.total_seconds() < 1:
        raise ConfigurationError("the poll interval must be at least 1s", hint="e.g. --interval 60")


def find(session: Session, slug: str) -> schema.Project | None:
    return session.scalars(select(schema.Project).where(schema.Project.slug == slug)).first()


def get(session: Session, slug: str) -> schema.Project:
    project = find(session, slug)
    if project is None:
        raise NotFoundError(
            f"No project named {shown(slug)}", hint="list them with: nebula project list"
        )
    return project


def listing(session: Session) -> list[schema.Project]:
    return list(session.scalars(select(schema.Project).order_by(schema.Project.slug)))


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
    elif key == "branch":
        project.branch = _branch(value)
    elif key == "path":
        project.path = _path(value)
    elif key == "repo":
        _check_repo(value)
        project.repo_url = value
    elif key == "slack_channel":
        project.slack_channel = value or None
    elif key == "webhook_secret":
        project.webhook_secret = vault.encrypt(value) if value else None
    elif key.startswith("cluster."):
        env = key.split(".", 1)[1]
        project.clusters = {**(project.clusters or {}), env: value}
    else:
        raise ConfigurationError(
            f"unknown project setting {shown(key)}", hint=f"settings: {', '.join(SETTABLE)}"
        )


def environment(session: Session, project: schema.Project, name: str) -> schema.Environment:
    env = session.scalars(
        select(schema.Environment).where(
            schema.Environment.project_id == project.id, schema.Environment.name == name
        )
    ).first()
    if env is None:
        known = ", ".join(e.name for e in project.environments) or "none yet"
        raise NotFoundError(
            f"Project '{project.slug}' has no environment {shown(name)}",
            hint=f"environments: {known}",
        )
    return env


def unit(session: Session, env: schema.Environment, name: str) -> schema.Unit:
    row = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name == name)
    ).first()
    if row is None:
        raise NotFoundError(
            f"No service {shown(name)} in {env.project.slug}/{env.name}",
        )
    return row


def units(session: Session, env: schema.Environment) -> dict[str, schema.Unit]:
    """The environment's services and databases by name (not those removed and torn down)."""
    rows = session.scalars(select(schema.Unit).where(schema.Unit.environment_id == env.id))
    return {u.name: u for u in rows if u.status != ServiceStatus.REMOVED}


def recorded_config(env: schema.Environment) -> EnvironmentConfig | None:
    """The last file applied to ``env`` (what the next push is compared with), as that
    environment's configuration; None before the first change set took effect."""
    if not env.recorded_file:
        return None
    try:
        return validation.load(env.recorded_file).environment(env.name)
    except InvalidFileError:
        return None
