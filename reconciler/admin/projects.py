"""Registered projects: a git repository, a tracked branch and the path of its nebula.toml.

A repository URL with credentials in it (``https://user:token@host/x``, ``?private_token=``)
is stored twice: ``repo_url`` holds it as every output shows it (``https://***@host/x``, by
``urls.sanitize_url``), ``repo_url_encrypted`` the URL as given, encrypted with the vault;
``remote_url`` decrypts it for git alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from reconciler import numbers, suggestions
from reconciler.clock import Clock
from reconciler.core import messages
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
from reconciler.model.specs import EnvironmentConfig, EnvironmentSpec
from reconciler.store import schema
from reconciler.store.crypto import Vault
from reconciler.store.database import Database

NO_PROJECTS = "no project is registered yet: add one with nebula project add"
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
    _store_repo(project, vault, repo)
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


def _store_repo(project: schema.Project, vault: Vault | None, repo: str) -> None:
    url = repo.strip()
    shown = urls.sanitize_url(url)
    if shown != url and vault is None:
        raise ConfigurationError("credentials in a repository URL need the vault to be stored")
    project.repo_url = shown
    project.repo_url_encrypted = vault.encrypt(url) if shown != url and vault else None


def seal_credentials(db: Database, vault: Vault) -> int:
    """Projects registered before URLs with credentials were stored encrypted: seal them;
    returns how many. On SQLite the freed bytes are zeroed (``secure_delete``) and the
    write-ahead log is truncated, so no copy of the old text stays in the files."""
    with db.reading() as session:
        query = select(schema.Project.id, schema.Project.repo_url).where(
            schema.Project.repo_url_encrypted.is_(None)
        )
        legacy = [
            r.id for r in session.execute(query) if urls.sanitize_url(r.repo_url) != r.repo_url
        ]
    if not legacy:
        return 0
    with db.transaction() as session:
        if db.is_sqlite:
            session.execute(text("PRAGMA secure_delete = ON"))
        for project in session.scalars(select(schema.Project).where(schema.Project.id.in_(legacy))):
            _store_repo(project, vault, project.repo_url)
    if db.is_sqlite:  # outside any transaction, which a checkpoint cannot run in
        connection = db.engine.raw_connection()
        try:
            connection.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    return len(legacy)


def remote_url(project: schema.Project, vault: Vault) -> str:
    """The URL git is handed: as registered, credentials included."""
    if project.repo_url_encrypted is None:
        return project.repo_url
    return vault.decrypt(project.repo_url_encrypted)


def shown_repo(project: schema.Project) -> str:
    """The URL as every output shows it: ``https://***@host/x`` when it has credentials."""
    return urls.sanitize_url(project.repo_url)


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


def get(session: Session, slug: str, *, lock: bool = False) -> schema.Project:
    """The project named ``slug``; ``lock`` holds its row until the transaction ends
    (PostgreSQL: replicas deciding on the same project's webhook take turns)."""
    query = select(schema.Project).where(schema.Project.slug == slug)
    project = session.scalars(query.with_for_update() if lock else query).first()
    if project is None:
        known = list(session.scalars(select(schema.Project.slug).order_by(schema.Project.slug)))
        raise NotFoundError(
            f"No project named {shown(slug)}",
            hint=suggestions.hint(slug, known, "projects", none=NO_PROJECTS),
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
        _reschedule(project)
    elif key == "branch":
        project.branch = _branch(value)
    elif key == "path":
        project.path = _path(value)
    elif key == "repo":
        _check_repo(value)
        _store_repo(project, vault, value)
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


def environment(session: Session, project: schema.Project, name: str) -> schema.Environment:
    env = session.scalars(
        select(schema.Environment).where(
            schema.Environment.project_id == project.id, schema.Environment.name == name
        )
    ).first()
    if env is None:
        known = [e.name for e in project.environments]
        raise NotFoundError(
            f"Project '{project.slug}' has no environment {shown(name)}",
            hint=suggestions.hint(name, known, "environments", none="no environments yet"),
        )
    return env


def unit(session: Session, env: schema.Environment, name: str) -> schema.Unit:
    row = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name == name)
    ).first()
    if row is None:
        raise NotFoundError(
            f"No service {shown(name)} in {env.project.slug}/{env.name}",
            hint=suggestions.hint(name, sorted(units(session, env)), "services and databases"),
        )
    return row


def units(session: Session, env: schema.Environment) -> dict[str, schema.Unit]:
    """The environment's services and databases by name (not those removed and torn down)."""
    rows = session.scalars(select(schema.Unit).where(schema.Unit.environment_id == env.id))
    return {u.name: u for u in rows if u.status != ServiceStatus.REMOVED}


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


@dataclass(frozen=True)
class Suspension:
    """Who suspended a project or an environment, when and why (``nebula suspend``)."""

    by: str
    at: datetime
    reason: str

    @property
    def message(self) -> str:
        return messages.suspended(self.by, self.at, self.reason)


def suspension_of(row: schema.Project | schema.Environment) -> Suspension | None:
    """``row``'s own suspension (an environment's, not its project's)."""
    if row.suspended_by is None or row.suspended_at is None:
        return None
    return Suspension(row.suspended_by, row.suspended_at, row.suspended_reason or "")


def suspended(env: schema.Environment) -> Suspension | None:
    """What holds ``env``: its project's suspension, else its own; None when neither is."""
    return suspension_of(env.project) or suspension_of(env)
