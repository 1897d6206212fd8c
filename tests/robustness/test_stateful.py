"""The whole product under random sequences of what people and time do.

Each example is a fresh installation (SQLite, fake clock, simulated cluster with faults keyed
by image) watching a real git repository. Rules push generated nebula.toml changes (and now
and then an invalid file), reconcile, let time pass, ask for rollbacks, redeploys, promotions
and cancels, decide approvals (or let them expire), apply and discard drafts, and toggle
policies, a freeze, the concurrency limit and the cluster's reachability. Everything a person
does goes through the real CLI, in-process.

After every step the invariants in ``invariants.py`` hold, and every refusal a person got is
one of the spec's messages (``refusals.py``); where the model knows the answer (a member
deciding, a request during a freeze, an admin approving their own request) it is the one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)
from sqlalchemy import select

from reconciler import reconciling
from reconciler.core.states import DeploymentState
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, Result, nebula_with
from tests.robustness import invariants, refusals
from tests.robustness.documents import BROKEN, SERVICES, Document, documents, edits, faults_toml

APPROVAL_TTL = timedelta(hours=1)
PEOPLE = ("alice", "bob", "olga")  # admin, member, owner
ROLES = {"alice": "admin", "bob": "member", "olga": "owner"}
ENVIRONMENTS = ("staging", "production")
PICK = st.integers(min_value=0, max_value=1000)  # an index into whatever exists then
OPEN_FIRST = st.integers(0, 4).map(lambda n: n > 0)  # four times in five: something still open
FREEZE = "freeze add --days mon,tue,wed,thu,fri,sat,sun --from 00:00 --to 24:00 --tz UTC"


class NebulaMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory(prefix="nebula-stateful-")
        tmp = Path(self._tmp.name)
        faults = tmp / "faults.toml"
        faults.write_text(faults_toml(), encoding="utf-8")
        self._installation: Iterator[Nebula] = nebula_with(
            tmp,
            simulated_faults=str(faults),
            readiness_timeout=timedelta(seconds=30),
            route_activation_timeout=timedelta(seconds=20),
            approval_ttl=APPROVAL_TTL,
        )
        self.nebula = next(self._installation)
        self.repo = GitRepo(tmp / "repo", bare=False)
        self.history = invariants.History()
        self.document: Document | None = None
        self.frozen = False
        self.forbid_self = True
        self.limit: int | None = None
        self.refusals: list[tuple[str, str]] = []
        self.running_before = 0
        self.queued_before_freeze: set[int] = set()

    def teardown(self) -> None:
        for _ in self._installation:  # closes the store and the git cache
            pass
        self._tmp.cleanup()

    # -- helpers ------------------------------------------------------------------------

    def cli(self, command: str) -> Result:
        """A person's command: it succeeds, or is refused (exit 1) with a spec message."""
        result = self.nebula.cli(command)
        assert result.code in (0, 1), f"nebula {command} exited {result.code}: {result.err}"
        if result.code == 1:
            message = result.err.removeprefix("error: ").rstrip("\n")
            self.refusals.append((command, message))
            kind = refusals.classify(message)
            assert kind is not None, (
                f"nebula {command} was refused with a message the spec does not have: {message!r}"
            )
            event(f"refused: {kind}")
        return result

    def refused_with(self, result: Result, name: str) -> None:
        assert result.code == 1, f"expected a refusal ({name}), got success: {result.out}"
        assert refusals.classify(self.refusals[-1][1]) == name, self.refusals[-1]

    def rows(self, table: Any) -> list[Any]:
        with self.nebula.ctx.db.transaction() as session:
            query = select(table).order_by(table.id)
            if hasattr(table, "project_id"):
                query = query.where(table.project_id == self.project_id)
            found = list(session.scalars(query))
            session.expunge_all()
            return found

    def pick(self, table: Any, index: int, open_first: bool, is_open: Any) -> Any | None:
        """A row of ``table`` by ``index``: among the open ones when asked and there are any
        (deciding what is pending is what people do; an old one now and then tests refusals)."""
        found = self.rows(table)
        if open_first and any(is_open(r) for r in found):
            found = [r for r in found if is_open(r)]
        return found[index % len(found)] if found else None

    def running(self) -> int:
        with self.nebula.ctx.db.transaction() as session:
            return (
                session.query(schema.Deployment)
                .where(
                    schema.Deployment.project_id == self.project_id,
                    schema.Deployment.state.in_(invariants.OPEN - {"awaiting-approval"}),
                )
                .count()
            )

    def queued_in_production(self) -> set[int]:
        """Production deployments (but rollbacks) that have ever entered pending."""
        with self.nebula.ctx.db.transaction() as session:
            return set(
                session.scalars(
                    select(schema.Deployment.id)
                    .join(schema.Environment)
                    .where(
                        schema.Deployment.project_id == self.project_id,
                        schema.Environment.name == "production",
                        schema.Deployment.kind != "rollback",
                        schema.Deployment.queued_at.is_not(None),
                    )
                )
            )

    def cluster(self) -> SimulatedCluster:
        found: SimulatedCluster = self.nebula.ctx.clusters.simulated()
        return found

    # -- setup --------------------------------------------------------------------------

    @initialize(
        document=documents(),
        limit=st.sampled_from([None, None, 1, 2, 3]),
        frozen=st.sampled_from([False, False, False, True]),
    )
    def register(self, document: Document, limit: int | None, frozen: bool) -> None:
        for name, role in ROLES.items():
            self.nebula.ok(f"member add {name} --role {role}")
        self.repo.commit({"nebula.toml": document.render()}, "First version")
        self.nebula.ok(f"project add shop --repo {self.repo.url}")
        if limit is not None:
            self.nebula.ok(f"project set shop concurrency {limit}")
        self.limit = limit
        if frozen:
            self.nebula.ok(FREEZE)
            self.frozen = True
        self.document = document
        with self.nebula.ctx.db.transaction() as session:
            project = session.scalars(select(schema.Project)).one()
            self.project_id = project.id
        reconciling.run_once(self.nebula.ctx)

    # -- git ----------------------------------------------------------------------------

    @rule(data=st.data())
    def push(self, data: st.DataObject) -> None:
        assert self.document is not None
        self.document = data.draw(edits(self.document), label="pushed")
        self.repo.commit({"nebula.toml": self.document.render()}, "Change")
        if data.draw(st.booleans(), label="polled at once"):
            reconciling.run_once(self.nebula.ctx)

    @rule(data=st.data())
    def push_twice(self, data: st.DataObject) -> None:
        """Two pushes in quick succession, each polled: the second supersedes the first's
        deployments that have not taken traffic yet."""
        assert self.document is not None
        for n in range(2):
            self.document = data.draw(edits(self.document), label=f"push {n + 1}")
            self.repo.commit({"nebula.toml": self.document.render()}, f"Quick change {n + 1}")
            reconciling.run_once(self.nebula.ctx)

    @rule(kind=st.sampled_from(sorted(BROKEN)))
    def push_invalid(self, kind: str) -> None:
        text, expected = BROKEN[kind]
        self.repo.commit({"nebula.toml": text}, f"Broken: {kind}")
        reconciling.run_once(self.nebula.ctx)
        with self.nebula.ctx.db.transaction() as session:
            project = session.get(schema.Project, self.project_id)
            assert project is not None
            assert project.blocker == "configuration", project.blocker_message
            assert expected in (project.blocker_message or "")
            assert project.last_commit == self.repo.head()

    # -- time and the reconciler --------------------------------------------------------

    @rule()
    def reconcile(self) -> None:
        """``nebula reconcile``: one pass (poll, stage, apply, advance), no time passing."""
        self.nebula.ok("reconcile --project shop")

    @rule()
    def settle(self) -> None:
        """Time passes until nothing moves by itself (or a minute of passes went by)."""
        for _ in range(12):
            report = reconciling.run_once(self.nebula.ctx, poll=False)
            if not report.busy:
                return
            self.nebula.clock.advance(seconds=5)

    @rule(seconds=st.sampled_from([0, 1, 5, 15, 40, 130]), passes=st.integers(1, 10))
    def tick(self, seconds: int, passes: int) -> None:
        for _ in range(passes):
            self.nebula.clock.advance(seconds=seconds)
            reconciling.run_once(self.nebula.ctx, poll=False)

    @rule()
    def let_approvals_expire(self) -> None:
        self.nebula.clock.advance(APPROVAL_TTL.total_seconds() + 60)
        reconciling.run_once(self.nebula.ctx, poll=False)
        with self.nebula.ctx.db.transaction() as session:
            pending = session.query(schema.Approval).where(
                schema.Approval.project_id == self.project_id, schema.Approval.state == "pending"
            )
            created = [a.created_at for a in pending]
        assert all(self.nebula.clock.now() - c < APPROVAL_TTL for c in created), (
            "an approval older than its TTL is still pending"
        )

    @rule(reachable=st.booleans())
    def cluster_reachability(self, reachable: bool) -> None:
        self.cluster().set_reachable(reachable)

    # -- people -------------------------------------------------------------------------

    def service(self, data: st.DataObject) -> str:
        """Mostly a service of the file as pushed last; now and then any name at all."""
        assert self.document is not None
        present = [*self.document.names, *(["db"] if self.document.database else [])]
        if data.draw(st.integers(0, 9), label="any name") == 0:
            return data.draw(st.sampled_from([*SERVICES, "db"]), label="service")
        return data.draw(st.sampled_from(present), label="service")

    @rule(
        data=st.data(),
        env=st.sampled_from(ENVIRONMENTS),
        who=st.sampled_from(PEOPLE),
        to=st.none() | st.integers(1, 6),
    )
    def rollback(self, data: st.DataObject, env: str, who: str, to: int | None) -> None:
        target = f" --to r-{to}" if to is not None else ""
        result = self.cli(f"rollback shop {self.service(data)} --env {env}{target} --as {who}")
        self.deploys_only_with_the_grant(result, env, who)

    @rule(data=st.data(), env=st.sampled_from(ENVIRONMENTS), who=st.sampled_from(PEOPLE))
    def redeploy(self, data: st.DataObject, env: str, who: str) -> None:
        result = self.cli(f"redeploy shop {self.service(data)} --env {env} --as {who}")
        if self.frozen and env == "production" and result.code == 0:
            raise AssertionError("a redeploy to production was accepted during a freeze")
        self.deploys_only_with_the_grant(result, env, who)

    @rule(data=st.data(), who=st.sampled_from(PEOPLE))
    def promote(self, data: st.DataObject, who: str) -> None:
        service = self.service(data)
        result = self.cli(f"promote shop {service} --from staging --to production --as {who}")
        if self.frozen and result.code == 0:
            raise AssertionError("a promotion to production was accepted during a freeze")
        self.deploys_only_with_the_grant(result, "production", who)

    def deploys_only_with_the_grant(self, result: Result, env: str, who: str) -> None:
        """A member holds no deploy grant in production (behaviour.md "People, roles and
        grants"): refused there, whatever else would have been said."""
        if env == "production" and ROLES[who] == "member":
            assert result.code == 1, f"a member deployed in production: {result.out}"
            # (Before the first push there is no production to be refused in.)
            assert refusals.classify(self.refusals[-1][1]) in ("deploy-forbidden", "no-environment")

    @rule(index=PICK, who=st.sampled_from(PEOPLE), open_first=OPEN_FIRST)
    def cancel(self, index: int, who: str, open_first: bool) -> None:
        deployment = self.pick(
            schema.Deployment, index, open_first, lambda d: d.state in invariants.OPEN
        )
        if deployment is None:
            return
        result = self.cli(f"cancel {deployment.id} --as {who}")
        state = DeploymentState(deployment.state)
        with self.nebula.ctx.db.reading() as session:
            protected = session.get(schema.Environment, deployment.environment_id).protected
        if protected and ROLES[who] == "member" and deployment.requested_by != who:
            self.refused_with(result, "cancel-forbidden")
        elif state.is_final:
            self.refused_with(result, "cancel-ended")
        elif state.is_taking_traffic:
            self.refused_with(result, "cancel-taking-traffic")
        else:
            assert result.code == 0, result.err

    @rule(index=PICK, who=st.sampled_from(PEOPLE), approve=st.booleans(), open_first=OPEN_FIRST)
    def decide(self, index: int, who: str, approve: bool, open_first: bool) -> None:
        approval = self.pick(schema.Approval, index, open_first, lambda a: a.state == "pending")
        if approval is None:
            return
        verb = "approve" if approve else "reject"
        result = self.cli(f"{verb} {approval.id} --as {who}")
        expired = self.nebula.clock.now() >= approval.expires_at
        if approval.state != "pending" or expired:
            self.refused_with(result, "already-decided")
        elif ROLES[who] == "member":
            self.refused_with(result, "role")
        elif self.forbid_self and approval.requested_by == who:
            self.refused_with(result, "self-approval")
        elif approve and self.frozen and approval.kind != "rollback":
            self.refused_with(result, "freeze")
        elif not approve:
            assert result.code == 0, result.err

    @rule(index=PICK, who=st.sampled_from(PEOPLE), apply=st.booleans(), open_first=OPEN_FIRST)
    def draft(self, index: int, who: str, apply: bool, open_first: bool) -> None:
        changeset = self.pick(
            schema.ChangeSet, index, open_first, lambda c: c.state in ("draft", "pending-approval")
        )
        if changeset is None:
            return
        with self.nebula.ctx.db.reading() as session:
            env = session.get(schema.Environment, changeset.environment_id).name
        forbidden = env == "production" and ROLES[who] == "member"
        if apply:
            result = self.cli(f"changeset apply {changeset.id} --as {who}")
            if forbidden:
                self.refused_with(result, "deploy-forbidden")
            elif changeset.state != "draft":
                self.refused_with(result, "not-a-draft")
        else:
            result = self.cli(f"changeset discard {changeset.id} --as {who}")
            if forbidden:
                self.refused_with(result, "deploy-forbidden")
            elif changeset.state in ("draft", "pending-approval"):
                assert result.code == 0, result.err

    # -- policies -----------------------------------------------------------------------

    @rule(forbid=st.booleans(), rollbacks=st.booleans())
    def policy(self, forbid: bool, rollbacks: bool) -> None:
        self.nebula.ok(f"policy set forbid_self_approval {str(forbid).lower()}")
        self.nebula.ok(f"policy set rollbacks_skip_approval {str(rollbacks).lower()}")
        self.forbid_self = forbid

    @rule(on=st.booleans())
    def freeze(self, on: bool) -> None:
        if on and not self.frozen:
            self.nebula.ok(FREEZE)
            self.queued_before_freeze = self.queued_in_production()
        elif not on:
            for row in self.nebula.json("freeze list")["freezes"]:
                self.nebula.ok(f"freeze remove {row['id']}")
        self.frozen = on

    @rule(limit=st.sampled_from([None, 1, 2, 3]))
    def concurrency(self, limit: int | None) -> None:
        self.nebula.ok(f"project set shop concurrency {limit or 'unlimited'}")
        self.limit = limit

    @rule(service=st.sampled_from(SERVICES), on=st.booleans(), who=st.sampled_from(PEOPLE))
    def skip_production_approval(self, service: str, on: bool, who: str) -> None:
        command = f"service set shop {service} --env production skip_production_approval"
        result = self.nebula.cli(f"{command} {str(on).lower()} --as {who}")
        if ROLES[who] == "member":
            assert result.code == 1
            assert f"{who} may not change service settings: needs the admin role" in result.err

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def store_is_consistent(self) -> None:
        if not hasattr(self, "project_id"):
            return
        with self.nebula.ctx.db.transaction() as session:
            invariants.check(session, self.project_id, self.history)
        for state in {s for f in self.history.finals["deployment"].values() for s in [f]}:
            event(f"a deployment ended {state}")

    @invariant()
    def limits_hold(self) -> None:
        """Nothing new starts past the concurrency limit, or in production during a freeze."""
        if not hasattr(self, "project_id"):
            return
        running = self.running()
        if self.limit is not None and running > self.running_before:
            assert running <= self.limit, (
                f"{running} deployments running with a limit of {self.limit}"
            )
        self.running_before = running
        if self.frozen:
            started = self.queued_in_production() - self.queued_before_freeze
            assert not started, f"deployments {started} started in production during a freeze"

    @invariant()
    def refusals_are_the_specs(self) -> None:
        for command, message in self.refusals:
            assert refusals.classify(message) is not None, (command, message)
        self.refusals.clear()


TestNebula = NebulaMachine.TestCase
# Bounded for CI and derandomized, so every run tries the same sequences and a failure is
# reproducible; run with ``--hypothesis-seed=N`` and a profile of your own to explore. 20
# sequences of up to 40 steps: about 90 s in CI (40 sequences took 186 s of its 30 minutes).
TestNebula.settings = settings(
    max_examples=20,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
