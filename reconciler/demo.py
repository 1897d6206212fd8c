"""``nebula demo``: the main job on embedded defaults, end to end, in under a minute.

A fixtures sample project is committed to a temporary git repository and registered; the
reconciler polls it, stages a change set per environment and walks every deployment through
its stages on the simulated cluster, printing each step. Production is protected and promotes
from staging: its change set waits until staging is healthy, then its approval (with what
staging proved) is shown waiting and decided by an admin. A second commit changes a variable
and an image.
Then web is scaled behind Nebula's back in both environments: staging (``self_heal = true``)
is put back at its next drift check, production is shown drifted (``nebula diff``).
Everything lives in a temporary directory that is removed at the end; nothing keeps running.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
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
from sqlalchemy import func, select

from reconciler import bootstrap, reconciling, statusviews, views
from reconciler.admin import members, principals, projects
from reconciler.context import Context
from reconciler.core import lines
from reconciler.core.states import (
    ApprovalState,
    ChangeSetState,
    DecisionChannel,
    GateState,
    Role,
)
from reconciler.engine import drifting
from reconciler.requests import deciding, records
from reconciler.runtimes import tampering
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.events import EventKind
from reconciler.web.app import create_app

PROJECT = "webapp"
DRIFT_INTERVAL = timedelta(seconds=1)  # 3m by default: the demo checks every second


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
            state_dir=workdir / "state",
            simulated_delay=delay,
            cluster="simulated",
            drift_interval=DRIFT_INTERVAL,
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
            for changeset in records.changesets(session, state=ChangeSetState.DRAFT):
                if changeset.gate_state == GateState.WAITING.value:
                    self.say(
                        f"   {changeset.environment.name:<11} change set {changeset.id} waits: "
                        f"{changeset.gate_message}"
                    )

    def show_pending_approval(self) -> int:
        with self.ctx.db.transaction() as session:
            pending = records.approvals(session, state=ApprovalState.PENDING)
            assert pending, "the demo expects a production approval to be waiting"
            approval = pending[-1]
            changeset = records.changeset(session, approval.target_id)
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
                    f"{lines.shown_value(line.before)} -> {lines.shown_value(line.after)}"
                )
            return approval.id

    def approve(self, approval_id: int, who: str) -> None:
        with self.ctx.db.transaction() as session:
            decider = principals.by_name(session, who, local=True)
            deciding.decide(
                session, self.ctx, approval_id, decider, approve=True, via=DecisionChannel.CLI
            )
        self.say(f"   {who} approved approval {approval_id}")

    def drift(self) -> None:
        """web scaled behind Nebula's back in both environments; the next checks find it."""
        cluster = self.ctx.clusters.simulated()
        with self.ctx.db.transaction() as session:
            web = {
                env.name: projects.unit(session, env, "web").active_release
                for env in projects.get(session, PROJECT).environments
            }
        for env, release in web.items():
            assert release is not None
            ref = f"Deployment/web-r{release.number}"
            tampering.edit(cluster, f"{PROJECT}-{env}", ref, "spec.replicas", 5)
            self.say(f"   nebula simulated edit {PROJECT}-{env} {ref} spec.replicas 5")
        with self.ctx.db.transaction() as session:
            seen = session.scalar(select(func.max(schema.Event.id))) or 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.drift_seen(seen, len(web)):
            time.sleep(0.2)
            reconciling.run_once(self.ctx, PROJECT, poll=False)
        for env, message in self.unit_events(seen):
            self.say(f"   {env:<11} {message}")
        self.say("   production has no self_heal: it stays drifted, as nebula diff shows")
        for inspection in drifting.inspect(self.ctx, PROJECT, "production", "web"):
            for text in inspection.diffs:
                for line in text.splitlines():
                    if line.startswith(("---", "+++")) or line[:1] in "+-":
                        self.say(f"     {line}")

    def drift_seen(self, after: int, environments: int) -> bool:
        """Each environment's drift found, and staging's put back."""
        messages = [message for _, message in self.unit_events(after)]
        found = sum(message.startswith("Drift: ") for message in messages)
        return found >= environments and "Drift cleared" in messages

    def unit_events(self, after: int) -> list[tuple[str, str]]:
        """(environment, message) of the drift and self-heal events after event ``after``."""
        with self.ctx.db.transaction() as session:
            rows = session.execute(
                select(schema.Event, schema.Environment.name)
                .join(schema.Environment, schema.Environment.id == schema.Event.environment_id)
                .where(
                    schema.Event.id > after,
                    schema.Event.kind.in_([EventKind.DRIFT, EventKind.SELF_HEAL]),
                )
                .order_by(schema.Event.id)
            ).all()
        return [(env, str(event.message)) for event, env in rows]

    def status_table(self) -> None:
        with self.ctx.db.transaction() as session:
            data = statusviews.project_status(session, projects.get(session, PROJECT))
        self.say(f"   project {data['slug']} at {str(data['commit'])[:7]}")
        self.say(
            f"   {'ENVIRONMENT':<11} {'SERVICE':<7} {'KIND':<8} {'ACTIVE':<6} {'SYNC':<8} IMAGE"
        )
        for env in data["environments"]:
            for unit in env["services"]:
                image = str(unit["image"] or "-")
                short = image if len(image) < 50 else image[: image.find("@") + 15] + "…"
                self.say(
                    f"   {env['name']:<11} {unit['name']:<7} {unit['kind']:<8} "
                    f"{unit['active_release'] or '-':<6} {unit['sync']:<8} {short}"
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
            members.add(session, self.ctx.clock, "alice", Role.OWNER)
            members.add(session, self.ctx.clock, "bob", Role.ADMIN)
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
        self.heading("Drift: web scaled to 5 replicas behind Nebula's back")
        self.drift()
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(
    delay: timedelta,
    keep: Path | None,
    out: TextIO = sys.stdout,
    *,
    port: int | None = None,
    stay: bool = False,
) -> int:
    """``port``: the status page's (0: a free one; None: no page)."""
    if port == 0:
        port = free_port()
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
