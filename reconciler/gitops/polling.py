"""Polling projects: ask each remote for its branch head, fetch only what moved, stage it.

One remote call per distinct URL (however many projects share it), no fetch when the head did
not move, the file read as a blob at the commit (no checkout). Problems become the project's
blocker, never an exception that stops other projects:

- ``delivery``: the remote cannot be reached, or the branch is gone; cleared when it is back;
- ``configuration``: nebula.toml is missing or invalid at the new commit; nothing is staged,
  every environment keeps serving, and the next valid push clears it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy.orm import Session

from notifiers import notices
from reconciler.admin import projects as project_rows
from reconciler.context import Context
from reconciler.core.states import Blocker
from reconciler.errors import NebulaError
from reconciler.gitops import staging
from reconciler.gitsource.results import HeadResult
from reconciler.model import validation
from reconciler.model.problems import Severity
from reconciler.store import events, schema


@dataclass
class PollReport:
    polled: int = 0
    moved: list[str] = field(default_factory=list)
    staged: list[int] = field(default_factory=list)  # change set ids
    blocked: dict[str, str] = field(default_factory=dict)


def poll(ctx: Context, slugs: Iterable[str] | None = None) -> PollReport:
    """Poll the named projects (default: all) now."""
    assert ctx.git is not None, "polling needs a git cache"
    with ctx.db.transaction() as session:
        rows = project_rows.listing(session)
        wanted = set(slugs) if slugs is not None else None
        targets = [
            (p.slug, p.repo_url, p.branch) for p in rows if wanted is None or p.slug in wanted
        ]
    # Moved heads are fetched by the same workers, overlapping with other remotes' answers.
    heads = ctx.git.heads({(url, branch) for _, url, branch in targets}, fetch=True)
    report = PollReport()
    for slug, url, branch in targets:
        with ctx.db.transaction() as session:
            project = project_rows.get(session, slug)
            _poll_one(session, ctx, project, heads[(url, branch)], report)
    return report


def _poll_one(
    session: Session, ctx: Context, project: schema.Project, head: HeadResult, report: PollReport
) -> None:
    report.polled += 1
    now = ctx.clock.now()
    project.last_polled_at = now
    project.next_poll_at = now + _interval(project)
    if head.error is not None:
        _block(
            session,
            ctx,
            project,
            Blocker.DELIVERY,
            _keep_serving(head.error.message),
            None,
        )
        report.blocked[project.slug] = Blocker.DELIVERY.value
        return
    if head.commit is None:
        _block(
            session,
            ctx,
            project,
            Blocker.DELIVERY,
            f"Branch {project.branch} does not exist in the repository; environments keep serving",
            None,
        )
        report.blocked[project.slug] = Blocker.DELIVERY.value
        return
    if project.blocker == Blocker.DELIVERY.value:
        _clear(session, ctx, project, "The repository is reachable again")
    if head.commit == project.last_commit:
        return  # the head did not move: nothing to fetch, nothing to stage
    assert ctx.git is not None
    try:
        ctx.git.ensure(project.repo_url, project.branch, head.commit)
        blob = ctx.git.read_file(project.repo_url, head.commit, project.path)
        info = ctx.git.commit_info(project.repo_url, head.commit)
    except NebulaError as exc:
        _block(
            session,
            ctx,
            project,
            Blocker.DELIVERY,
            _keep_serving(exc.message),
            None,
        )
        report.blocked[project.slug] = Blocker.DELIVERY.value
        return
    project.last_commit = head.commit
    report.moved.append(project.slug)
    short = head.commit[:7]
    if blob is None:
        _block(
            session,
            ctx,
            project,
            Blocker.CONFIGURATION,
            f"{project.path} is missing at {short}; nothing was staged and environments keep serving",
            head.commit,
        )
        report.blocked[project.slug] = Blocker.CONFIGURATION.value
        return
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    file, problems = validation.check(text, project.path) if text is not None else (None, [])
    if file is None:
        errors = [p for p in problems if p.severity is Severity.ERROR]
        detail = "; ".join(f"{p.location}: {p.message}" for p in errors) or "it is not UTF-8 text"
        _block(
            session,
            ctx,
            project,
            Blocker.CONFIGURATION,
            f"{project.path} at {short} is invalid: {detail}. Nothing was staged; environments keep serving.",
            head.commit,
        )
        report.blocked[project.slug] = Blocker.CONFIGURATION.value
        return
    if project.blocker == Blocker.CONFIGURATION.value:
        _clear(session, ctx, project, f"{project.path} at {short} is valid again")
    commit = staging.Commit(
        sha=info.sha,
        author=f"{info.author_name} <{info.author_email}>",
        message=info.summary,
        committed_at=info.committed_at,
    )
    report.staged += [c.id for c in staging.stage(session, ctx, project, commit, file)]


def _keep_serving(message: str) -> str:
    text = message.strip()
    return f"{text}{'' if text.endswith('.') else '.'} Environments keep serving."


def _interval(project: schema.Project) -> timedelta:
    return timedelta(seconds=project.interval_seconds)


def _block(
    session: Session,
    ctx: Context,
    project: schema.Project,
    blocker: Blocker,
    message: str,
    commit: str | None,
) -> None:
    if project.blocker == blocker.value and project.blocker_message == message:
        return
    project.blocker = blocker.value
    project.blocker_message = message
    project.blocker_commit = commit
    events.record(
        session,
        ctx.clock.now(),
        "project.blocker",
        project_id=project.id,
        state=blocker.value,
        message=message,
    )
    notices.project_blocked(session, ctx.clock, project)


def _clear(session: Session, ctx: Context, project: schema.Project, message: str) -> None:
    notices.project_recovered(session, ctx.clock, project, message)
    project.blocker = None
    project.blocker_message = None
    project.blocker_commit = None
    events.record(
        session,
        ctx.clock.now(),
        "project.blocker",
        project_id=project.id,
        state=None,
        message=message,
    )
