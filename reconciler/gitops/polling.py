"""Polling projects: ask each remote for its branch head, fetch only what moved, stage it.

One remote call per distinct URL (however many projects share it), no fetch when the head did
not move, the file read as a blob at the commit (no checkout). Problems become the project's
blocker, never an exception that stops other projects (an unexpected one, a bug, becomes its
``configuration`` blocker too, ``_failed``):

- ``delivery``: the remote cannot be reached, or the branch is gone; cleared when it is back;
- ``configuration``: nebula.toml is missing, a symbolic link, larger than
  ``NEBULA_MAX_CONFIG_SIZE`` (checked from the object's header, before it is read) or invalid
  at the new commit; nothing is staged, every environment keeps serving, and the next valid
  push clears it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy.orm import Session

from notifiers import notices
from reconciler.admin import projects as project_rows
from reconciler.context import Context
from reconciler.core.states import Blocker
from reconciler.errors import ConfigurationError, NebulaError, StoreError
from reconciler.gitops import keeping, staging
from reconciler.gitsource import urls
from reconciler.gitsource.results import CommitInfo, FileEntry, HeadResult
from reconciler.model import rawmanifests, validation
from reconciler.model.problems import Severity
from reconciler.model.specs import ProjectFile
from reconciler.numbers import format_size
from reconciler.requests.changesets import Commit
from reconciler.store import events, schema
from renderers import naming

log = logging.getLogger("nebula.poll")


@dataclass
class PollReport:
    polled: int = 0
    moved: list[str] = field(default_factory=list)
    staged: list[int] = field(default_factory=list)  # change set ids
    blocked: dict[str, str] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)  # slug -> "ok" or the blocker it got

    def add(self, other: PollReport) -> None:
        """``other``'s polls counted into this report (a scheduler's batches, one by one)."""
        self.polled += other.polled
        self.moved += other.moved
        self.staged += other.staged
        self.blocked.update(other.blocked)
        self.results.update(other.results)


def poll(ctx: Context, slugs: Iterable[str] | None = None) -> PollReport:
    """Poll the named projects (default: all) now."""
    assert ctx.git is not None, "polling needs a git cache"
    with ctx.db.transaction() as session:
        rows = project_rows.listing(session)
        wanted = set(slugs) if slugs is not None else None
        targets = [
            (p.slug, project_rows.remote_url(p, ctx.vault), p.branch)
            for p in rows
            if (wanted is None or p.slug in wanted) and p.removing_at is None  # being removed
        ]
    # Moved heads are fetched by the same workers, overlapping with other remotes' answers.
    heads = ctx.git.heads({(url, branch) for _, url, branch in targets}, fetch=True)
    report = PollReport()
    for slug, url, branch in targets:
        try:
            with ctx.db.transaction() as session:
                project = project_rows.get(session, slug)
                _poll_one(session, ctx, project, heads[(url, branch)], report)
        except StoreError:
            raise  # the store failing is every project's: the caller waits for it
        except Exception as exc:  # a bug one project's commit ran into: that project's alone
            _failed(ctx, slug, url, heads[(url, branch)], exc, report)
    return report


def _said(exc: Exception, url: str) -> str:
    """The failure as the status page may show it: the repository's credentials masked."""
    try:
        secrets = urls.parse(url).userinfo_secrets
    except NebulaError:
        secrets = ()
    return urls.scrub(str(exc), url, secrets)[:300]


def _failed(
    ctx: Context, slug: str, url: str, head: HeadResult, exc: Exception, report: PollReport
) -> None:
    """What an unexpected failure of one project's poll leaves: that project's
    ``configuration`` blocker saying so (logged with its traceback once per distinct error),
    its next poll on its interval rather than at once, and every other project polled. A
    project removed meanwhile leaves nothing (and stops no other's poll)."""
    with ctx.db.transaction() as session:
        project = project_rows.find(session, slug)
        if project is None:
            return
        short = (head.commit or "")[:7] or "its head"
        blocked = Blocked(
            Blocker.CONFIGURATION,
            f"Nebula could not poll {project.path} at {short}: {type(exc).__name__}: "
            f"{_said(exc, url)} (an error in Nebula, logged). Nothing was staged; environments "
            "keep serving.",
            head.commit,
        )
        if project.blocker_message != blocked.message:
            log.error(
                "polling a project failed",
                extra={"project": slug, "commit": head.commit},
                exc_info=exc,
            )
        project.last_polled_at = ctx.clock.now()
        project_rows.schedule_next(project, timedelta(seconds=project.interval_seconds))
        _block(session, ctx, project, blocked)
        report.polled += 1
        report.blocked[slug] = report.results[slug] = blocked.blocker.value


@dataclass(frozen=True)
class Blocked:
    """A sub-step found what stops this poll: the project's blocker until it is fixed."""

    blocker: Blocker
    message: str
    commit: str | None = None  # a bad file is identified by its commit


@dataclass
class _Poll:
    """What the sub-steps of one poll learn, in order."""

    head: HeadResult
    commit: str = ""
    entry: FileEntry | None = None  # what the commit holds at the project's path
    blob: bytes | None = None
    info: CommitInfo | None = None
    file: ProjectFile | None = None
    fetched: bool = False  # the head moved and its commit is here: the project moved


class _Unchanged:
    """The head did not move: nothing to fetch, nothing to stage."""


UNCHANGED = _Unchanged()


def _poll_one(
    session: Session, ctx: Context, project: schema.Project, head: HeadResult, report: PollReport
) -> None:
    """The sub-steps of one poll, in order; the first that finds a blocker records it."""
    report.polled += 1
    report.results[project.slug] = "ok"
    now = ctx.clock.now()
    project.last_polled_at = now
    project_rows.schedule_next(project, timedelta(seconds=project.interval_seconds))
    state = _Poll(head)
    for step in (_reachable, _moved, _fetched, _present, _valid, _keeps_data):
        stop = step(session, ctx, project, state)
        if state.fetched and project.slug not in report.moved:
            report.moved.append(project.slug)
        if isinstance(stop, Blocked):
            _block(session, ctx, project, stop)
            report.blocked[project.slug] = report.results[project.slug] = stop.blocker.value
        if stop is not None:
            return
    assert state.info is not None and state.file is not None
    commit = Commit(
        sha=state.info.sha,
        author=f"{state.info.author_name} <{state.info.author_email}>",
        message=state.info.summary,
        committed_at=state.info.committed_at,
    )
    report.staged += [c.id for c in staging.stage(session, ctx, project, commit, state.file)]


def _reachable(
    session: Session, ctx: Context, project: schema.Project, state: _Poll
) -> Blocked | None:
    """The remote answered and the branch exists (a ``delivery`` blocker clears)."""
    if state.head.error is not None:
        return Blocked(Blocker.DELIVERY, _keep_serving(state.head.error.message))
    if state.head.commit is None:
        return Blocked(
            Blocker.DELIVERY,
            f"Branch {project.branch} does not exist in the repository; environments keep serving",
        )
    if project.blocker == Blocker.DELIVERY.value:
        _clear(session, ctx, project, "The repository is reachable again")
    state.commit = state.head.commit
    return None


def _moved(
    session: Session, ctx: Context, project: schema.Project, state: _Poll
) -> _Unchanged | None:
    return UNCHANGED if state.commit == project.last_commit else None


def _fetched(
    session: Session, ctx: Context, project: schema.Project, state: _Poll
) -> Blocked | None:
    """The new head's commit, and what it holds at the project's path (not read yet)."""
    assert ctx.git is not None
    url = project_rows.remote_url(project, ctx.vault)
    try:
        ctx.git.ensure(url, project.branch, state.commit)
        state.entry = ctx.git.file_entry(url, state.commit, project.path)
        state.info = ctx.git.commit_info(url, state.commit)
    except NebulaError as exc:
        return Blocked(Blocker.DELIVERY, _keep_serving(exc.message))
    project.last_commit = state.commit
    state.fetched = True
    return None


def _present(
    session: Session, ctx: Context, project: schema.Project, state: _Poll
) -> Blocked | None:
    """A regular file no larger than ``NEBULA_MAX_CONFIG_SIZE`` is there; then it is read."""
    assert ctx.git is not None
    short = state.commit[:7]
    entry, limit = state.entry, ctx.settings.max_config_size
    if entry is None:
        problem = f"{project.path} is missing at {short}"
    elif entry.link:
        problem = (
            f"{project.path} at {short} is a symbolic link; Nebula reads the file itself, "
            "not what a link points to (commit it as a regular file)"
        )
    elif entry.size > limit:
        problem = (
            f"{project.path} at {short} is {format_size(entry.size)} ({entry.size} bytes), "
            f"more than NEBULA_MAX_CONFIG_SIZE allows ({format_size(limit)})"
        )
    else:
        try:
            url = project_rows.remote_url(project, ctx.vault)
            state.blob = ctx.git.read_file(url, state.commit, project.path)
        except NebulaError as exc:
            return Blocked(Blocker.DELIVERY, _keep_serving(exc.message))
        if state.blob is not None:
            return None
        problem = f"{project.path} is missing at {short}"
    return Blocked(
        Blocker.CONFIGURATION,
        f"{problem}; nothing was staged and environments keep serving",
        state.commit,
    )


def _valid(session: Session, ctx: Context, project: schema.Project, state: _Poll) -> Blocked | None:
    """The file parses and validates."""
    assert state.blob is not None
    short = state.commit[:7]
    text = validation.decode(state.blob)
    file, problems = validation.check(text, project.path) if text is not None else (None, [])
    if file is not None and text is not None and validation.manifest_paths(file):
        files = _manifest_files(ctx, project, state.commit, validation.manifest_paths(file))
        if isinstance(files, Blocked):
            return files
        file, problems = validation.check(
            text,
            project.path,
            files=files,
            namespace=lambda env: naming.namespace(project.slug, env),
        )
    if file is None:
        errors = [p for p in problems if p.severity is Severity.ERROR]
        detail = "; ".join(f"{p.location}: {p.message}" for p in errors) or "it is not UTF-8 text"
        return Blocked(
            Blocker.CONFIGURATION,
            f"{project.path} at {short} is invalid: {detail}. Nothing was staged; "
            "environments keep serving.",
            state.commit,
        )
    state.file = file
    return None


def _keeps_data(
    session: Session, ctx: Context, project: schema.Project, state: _Poll
) -> Blocked | None:
    """The file does not replace what a live database runs (``keeping``); then a
    ``configuration`` blocker clears."""
    assert state.file is not None
    refused = keeping.replaced_data(session, project, state.file)
    if refused:
        return Blocked(Blocker.CONFIGURATION, refused, state.commit)
    if project.blocker == Blocker.CONFIGURATION.value:
        _clear(session, ctx, project, f"{project.path} at {state.commit[:7]} is valid again")
    return None


def _manifest_files(
    ctx: Context, project: schema.Project, commit: str, paths: tuple[str, ...]
) -> dict[str, str] | Blocked:
    """The raw manifest files the file names, read at ``commit`` (path -> text)."""
    assert ctx.git is not None
    url = project_rows.remote_url(project, ctx.vault)
    files: dict[str, str] = {}
    try:
        for path in paths:
            found = ctx.git.files_under(
                url, commit, path, rawmanifests.SUFFIXES, ctx.settings.max_config_size
            )
            for name, data in found.items():
                text = validation.decode(data)
                if text is None:
                    return Blocked(
                        Blocker.CONFIGURATION,
                        f"{name} at {commit[:7]} is not UTF-8 text. Nothing was staged; "
                        "environments keep serving.",
                        commit,
                    )
                files[name] = text
    except ConfigurationError as exc:
        return Blocked(
            Blocker.CONFIGURATION,
            f"{exc.message}. Nothing was staged; environments keep serving.",
            commit,
        )
    except NebulaError as exc:
        return Blocked(Blocker.DELIVERY, _keep_serving(exc.message))
    return files


def _keep_serving(message: str) -> str:
    text = message.strip()
    return f"{text}{'' if text.endswith('.') else '.'} Environments keep serving."


def _block(session: Session, ctx: Context, project: schema.Project, blocked: Blocked) -> None:
    if project.blocker == blocked.blocker.value and project.blocker_message == blocked.message:
        return
    project.blocker = blocked.blocker.value
    project.blocker_message = blocked.message
    project.blocker_commit = blocked.commit
    events.project_blocker(session, ctx.clock.now(), project, blocked.message)
    notices.project_blocked(session, ctx.clock, project)


def _clear(session: Session, ctx: Context, project: schema.Project, message: str) -> None:
    notices.project_recovered(session, ctx.clock, project, message)
    project.blocker = None
    project.blocker_message = None
    project.blocker_commit = None
    events.project_blocker(session, ctx.clock.now(), project, message)
