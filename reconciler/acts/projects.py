"""Projects: register, change a setting, remove (tear down, then forget); one reconcile pass
now; and the simulated cluster's test and demo aid (change a live object behind Nebula's
back). Projects take an admin or an owner; a pass any member; every change is audited.
"""

from __future__ import annotations

from datetime import timedelta

import yaml

from reconciler import reconciling, views
from reconciler.acts.calls import Call, Document
from reconciler.admin import projects, repositories
from reconciler.core import rights
from reconciler.core.states import AdminAction
from reconciler.durations import parse_duration
from reconciler.errors import ConflictError
from reconciler.requests import removing
from reconciler.runtimes import tampering


def add_project(call: Call) -> Document:
    rights.require_admin(call.who, "add projects")
    ctx = call.ctx
    slug, branch, path = call.text("slug"), call.maybe("branch"), call.maybe("path")
    branch = "main" if branch is None else branch  # "" is refused by projects.add, not defaulted
    path = "nebula.toml" if path is None else path
    interval_text = call.maybe("interval")
    interval: timedelta = (
        parse_duration(interval_text, setting="--interval")
        if interval_text
        else ctx.settings.poll_interval
    )
    repo = call.text("repo")
    with ctx.db.reading() as session:  # what is refused anyway, before the remote is asked
        projects.check_new(session, slug, repo, branch=branch, path=path, interval=interval)
    if not call.flag("no_check"):
        repositories.check(ctx.git, repo, branch)
    with ctx.db.transaction() as session:
        project = projects.add(
            session,
            ctx.clock,
            slug,
            repo,
            branch=branch,
            path=path,
            interval=interval,
            vault=ctx.vault,
        )
        data = views.project(project)
        text = f"Registered {slug}: {data['repo']} ({branch}, {path})"
        call.audit(session, AdminAction.PROJECT_ADD, f"project {slug}", text, project)
    call.wake()
    return {"project": data}


def set_project(call: Call) -> Document:
    rights.require_admin(call.who, "change project settings")
    slug, key, value = call.param("slug"), call.text("key"), call.text("value")
    ctx = call.ctx
    with ctx.db.transaction() as session:
        project = projects.get(session, slug)
        projects.set_value(session, ctx.vault, project, key, value)
        shown = value
        if key == "webhook_secret":
            shown = "***" if value else "(none: unsigned notifications are accepted)"
        elif key == "repo":
            shown = projects.shown_repo(project)  # a URL may carry a token: never echo it
        call.audit(session, AdminAction.PROJECT_SET, f"project {slug}", f"{key} = {shown}", project)
    call.wake()
    return {"project": slug, "key": key, "value": shown}


def remove_project(call: Call) -> Document:
    slug = call.param("slug")
    with call.ctx.db.transaction() as session:
        removing.request(session, call.ctx, slug, call.who)
    removal = removing.finish(call.ctx, slug)
    return {
        "project": slug,
        "forgotten": removal.forgotten,
        "pending_teardown": list(removal.waiting),
    }


def reconcile(call: Call) -> Document:
    """One pass: expire, poll (``poll``), advance, finish removals, check drift."""
    rights.require_acting(call.who, "reconcile")
    project = call.maybe("project")
    if project is not None:
        with call.ctx.db.reading() as session:
            projects.get(session, project)  # an unknown slug is an error, not a no-op
    report = reconciling.run_once(call.ctx, project, poll=call.flag("poll"))
    return {
        "polled": report.poll.polled,
        "staged_changesets": [str(i) for i in report.poll.staged],
        "blocked": report.poll.blocked,
        "expired_approvals": report.expired,
        "steps": report.moved,
        "busy": report.busy,
    }


def _simulated(call: Call) -> None:
    rights.require_admin(call.who, "change the simulated cluster")
    cluster = call.ctx.settings.cluster
    if cluster != "simulated":
        raise ConflictError(
            f"nebula simulated changes the simulated cluster only; NEBULA_CLUSTER is {cluster}",
            hint="change a real cluster with kubectl",
        )


def simulated_edit(call: Call) -> Document:
    _simulated(call)
    namespace, target, path = call.text("namespace"), call.text("object"), call.text("path")
    text = call.text("value")
    try:
        value = yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        value = text  # not YAML: the text itself
    tampering.edit(call.ctx.clusters.simulated(), namespace, target, path, value)
    return {"namespace": namespace, "object": target, "path": path, "value": text}


def simulated_delete(call: Call) -> Document:
    _simulated(call)
    namespace, target = call.text("namespace"), call.text("object")
    tampering.delete(call.ctx.clusters.simulated(), namespace, target)
    return {"namespace": namespace, "object": target, "deleted": True}
