"""``nebula demo``: the main job on embedded defaults, end to end, in under a minute.

A fixtures sample project is committed to a temporary git repository and registered; the
reconciler polls it, stages a change set per environment and walks every deployment through
its stages on the simulated cluster, printing each step. Production is protected and promotes
from staging: its change set waits until staging is healthy, then its approval (with what
staging proved) is shown waiting and decided by an admin. A second commit changes a variable
and an image.
Everything lives in a temporary directory that is removed at the end; nothing keeps running.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import TextIO

import pygit2
import uvicorn
from sqlalchemy import select

from reconciler import bootstrap, reconciling, views
from reconciler.admin import members, projects
from reconciler.context import Context
from reconciler.core.states import ApprovalState, ChangeSetState, DecisionChannel, GateState
from reconciler.requests import approvals, changesets, deciding
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.events import EventKind
from reconciler.web.app import create_app

PROJECT = "webapp"


def sample_file() -> str:
    """The demo's nebula.toml, shipped inside the package (``reconciler/samples/webapp``, the
    build's copy of fixtures/projects/webapp), so an installed wheel runs the demo anywhere."""
    sample = resources.files("reconciler") / "samples" / PROJECT / "nebula.toml"
    return sample.read_text(encoding="utf-8")


class Demo:
    def __init__(self, workdir: Path, delay: timedelta, out: TextIO) -> None:
        self.workdir = workdir
        self.out = out
        self.settings = Settings(
            state_dir=workdir / "state", simulated_delay=delay, cluster="simulated"
        )
        self.ctx: Context = bootstrap.open_context(self.settings)
        self.repo_path = workdir / f"{PROJECT}.git"
        self.repo = pygit2.init_repository(str(self.repo_path), bare=True, initial_head="main")
        self.seen_event = 0
        self.page: StatusPage | None = None

    # -- output -----------------------------------------------------------------------------
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def heading(self, text: str) -> None:
        self.say()
        self.say(f"== {text}")

    # -- git --------------------------------------------------------------------------------
    def commit(self, text: str, message: str) -> str:
        blob = self.repo.create_blob(text.encode())
        builder = self.repo.TreeBuilder()
        builder.insert("nebula.toml", blob, pygit2.GIT_FILEMODE_BLOB)
        tree = builder.write()
        author = pygit2.Signature("Demo Developer", "dev@example.com")
        parents = [self.repo.head.target] if not self.repo.head_is_unborn else []
        oid = self.repo.create_commit("refs/heads/main", author, author, message, tree, parents)
        return str(oid)

    # -- the reconciler ---------------------------------------------------------------------
    def run_until_idle(self, timeout: float = 40.0) -> None:
        """Reconcile, printing each deployment step, until nothing moves without a person."""
        deadline = time.monotonic() + timeout
        first = True
        while True:
            report = reconciling.run_once(self.ctx, PROJECT, poll=first)
            if first and report.poll.staged:
                staged = len(report.poll.staged)
                self.say(f"   polled: {staged} change set{'s' if staged != 1 else ''} staged")
            self.print_steps()
            if first:
                self.show_gates()
            first = False
            if not report.busy or time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def print_steps(self) -> None:
        with self.ctx.db.transaction() as session:
            rows = session.execute(
                select(schema.Event, schema.Deployment)
                .join(schema.Deployment, schema.Deployment.id == schema.Event.deployment_id)
                .where(schema.Event.id > self.seen_event, schema.Event.kind == EventKind.DEPLOYMENT)
                .order_by(schema.Event.id)
            ).all()
            for event, deployment in rows:
                self.seen_event = max(self.seen_event, event.id)
                line = (
                    f"   {deployment.environment.name:<11} {deployment.unit.name:<7} "
                    f"{deployment.release.name:<4} {event.state}"
                )
                if event.state in ("awaiting-approval", "failed") and event.message:
                    line += f"  ({event.message})"
                self.say(line)

    def show_gates(self) -> None:
        """Change sets held by a promotion gate: production waits for what staging proves."""
        with self.ctx.db.transaction() as session:
            for changeset in changesets.listing(session, state=ChangeSetState.DRAFT):
                if changeset.gate_state == GateState.WAITING.value:
                    self.say(
                        f"   {changeset.environment.name:<11} change set {changeset.id} waits: "
                        f"{changeset.gate_message}"
                    )

    def show_pending_approval(self) -> int:
        with self.ctx.db.transaction() as session:
            pending = approvals.listing(session, state=ApprovalState.PENDING)
            assert pending, "the demo expects a production approval to be waiting"
            approval = pending[-1]
            changeset = changesets.get(session, approval.target_id)
            self.say(
                f"   approval {approval.id}: {approval.environment.name} change set {changeset.id} "
                f"from {changeset.commit[:7] if changeset.commit else '?'} "
                f"requested by {views.approval(approval, changeset.author)['requested_by']}"
                + (f" (push by {changeset.author})" if changeset.author else "")
                + f", {approval.state}"
            )
            for evidence in approval.evidence or ():
                self.say(f"     {evidence}")
            for line in changeset.lines:
                self.say(
                    f"     {line.service:<7} {line.field:<28} "
                    f"{views.shown_value(line.before)} -> {views.shown_value(line.after)}"
                )
            return approval.id

    def approve(self, approval_id: int, who: str) -> None:
        with self.ctx.db.transaction() as session:
            deciding.decide(
                session, self.ctx, approval_id, who, approve=True, via=DecisionChannel.CLI
            )
        self.say(f"   {who} approved approval {approval_id}")

    def status_table(self) -> None:
        with self.ctx.db.transaction() as session:
            data = views.project_status(session, projects.get(session, PROJECT))
        self.say(f"   project {data['slug']} at {str(data['commit'])[:7]}")
        self.say(f"   {'ENVIRONMENT':<11} {'SERVICE':<7} {'KIND':<8} {'ACTIVE':<6} IMAGE")
        for env in data["environments"]:
            for unit in env["services"]:
                image = str(unit["image"] or "-")
                short = image if len(image) < 50 else image[: image.find("@") + 15] + "…"
                self.say(
                    f"   {env['name']:<11} {unit['name']:<7} {unit['kind']:<8} "
                    f"{unit['active_release'] or '-':<6} {short}"
                )

    # -- the story ----------------------------------------------------------------------------
    def run(self, port: int | None) -> None:
        source = sample_file()
        self.say(f"Nebula demo: the sample project {PROJECT} in a temporary git repository")
        self.say(
            f"   state: {self.settings.state_dir} (SQLite), simulated cluster "
            f"({self.settings.simulated_delay.total_seconds():g}s per stage)"
        )
        if port is not None:
            self.page = StatusPage(self.ctx, port).start()
            self.say(f"   status page: {self.page.url}/projects/{PROJECT} (while the demo runs)")
        with self.ctx.db.transaction() as session:
            members.add(session, self.ctx.clock, "alice", "owner")
            members.add(session, self.ctx.clock, "bob", "admin")
            projects.add(session, self.ctx.clock, PROJECT, str(self.repo_path))
        self.say("   members: alice (owner), bob (admin); project webapp registered")

        sha = self.commit(source, "Webapp: first version")
        self.heading(f"Push {sha[:7]}: the first version")
        self.run_until_idle()
        self.heading(
            "Staging proved it; production is protected: its change set waits for approval"
        )
        first = self.show_pending_approval()
        self.approve(first, "alice")
        self.run_until_idle()

        changed = source.replace('LOG_LEVEL = "info"', 'LOG_LEVEL = "debug"').replace(
            "web@sha256:98180510e6eb1c044d666a440442781c4fdb7ea393a734d264c011e3cef83f49",
            "web@sha256:5d41402abc4b2a76b9719d911017c592ae9e3d0b6c1b4c2d1a7e3f5a9b8c7d6e",
        )
        sha = self.commit(changed, "Debug logging and a new web image")
        self.heading(f"Push {sha[:7]}: LOG_LEVEL=debug and a new web image")
        self.run_until_idle()
        self.heading("The production change waits for approval")
        second = self.show_pending_approval()
        self.approve(second, "bob")  # a second admin this time: anyone but a requester may decide
        self.run_until_idle()
        self.heading("Status")
        self.status_table()

    def close(self) -> None:
        if self.page is not None:
            self.page.stop()
        self.ctx.db.dispose()
        if self.ctx.git is not None:
            self.ctx.git.close()


class StatusPage:
    """The read-only status page on loopback, in a thread, for the demo's duration."""

    def __init__(self, ctx: Context, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(
            create_app(ctx),
            host="127.0.0.1",
            port=port,
            log_config=None,
            log_level="warning",
            ws="none",
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="status-page", daemon=True)

    def start(self) -> StatusPage:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def wait(self) -> None:
        with contextlib.suppress(KeyboardInterrupt):
            while self.thread.is_alive():
                self.thread.join(0.5)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def main(
    delay: timedelta,
    keep: Path | None,
    out: TextIO = sys.stdout,
    *,
    port: int | None = None,
    stay: bool = False,
) -> int:
    workdir = keep or Path(tempfile.mkdtemp(prefix="nebula-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    demo = Demo(workdir, delay, out)
    started = time.monotonic()
    cleanup: Callable[[], None] = (
        (lambda: None) if keep else (lambda: shutil.rmtree(workdir, ignore_errors=True))
    )
    try:
        demo.run(port)
        demo.say()
        demo.say(
            f"Done in {time.monotonic() - started:.1f}s."
            + (f" State kept in {workdir}." if keep else "")
        )
        if stay and demo.page is not None:
            demo.say(f"The status page stays up at {demo.page.url}/ until Ctrl-C.")
            demo.page.wait()
        return 0
    finally:
        demo.close()
        cleanup()
