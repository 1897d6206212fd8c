"""The stages on the cluster, each a small step: ``run(facts, cluster) -> Outcome``.

A step reads what it needs (``Facts``, gathered in a short transaction), talks to the cluster
(idempotent calls only), and returns a decision plus the stage marker to commit. The caller
commits the marker, the state change and its event together, so a reconciler killed at any
point replays at most one idempotent call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from reconciler.core import deciding, messages
from reconciler.core.deciding import Clocked, Decision
from reconciler.core.states import Blocker, DeploymentState, StageMarker
from reconciler.core.transitions import Trigger
from reconciler.runtimes.cluster import Cluster, JobPhase, ProbeKind, ReleaseObjects
from reconciler.settings import Settings

S = DeploymentState


@dataclass(frozen=True)
class Facts:
    id: int
    state: DeploymentState
    marker: StageMarker | None
    objects: ReleaseObjects
    previous: str | None  # the release serving before this deployment (what keeps serving)
    downtime: bool  # a volume release: drain the previous release before starting
    stage_started: datetime
    stabilization: timedelta
    now: datetime

    @property
    def drained(self) -> bool:
        """A volume release stopped the previous one before starting (it held the volume)."""
        started = self.state is not S.STARTING or self.marker is not None
        return (
            self.downtime
            and self.previous is not None
            and self.previous != self.objects.release
            and started
            and self.state in (S.STARTING, S.QUALIFYING, S.ACTIVATING)
        )

    @property
    def keeps(self) -> str:
        if self.drained:
            assert self.previous is not None
            return messages.stopped_for_volume(self.previous)
        return messages.keeps_serving(self.previous)

    def clocked(self, timeout: timedelta, settings: Settings) -> Clocked:
        """The stage's clock: failed at ``timeout``, stalled past half of it."""
        return Clocked(self.now, self.stage_started, timeout, timeout / 2)


@dataclass(frozen=True)
class Outcome:
    decision: Decision
    marker: StageMarker | None = None  # the new stage marker, if the step got further


def admitted(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    cluster.admit(f.objects)
    if f.objects.release_job is not None:
        return Outcome(Decision.move(Trigger.RELEASE))
    return Outcome(Decision.move(Trigger.START))


def releasing(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    marker = f.marker
    if marker != StageMarker.JOB_STARTED:
        cluster.start_release_job(f.objects)
        marker = StageMarker.JOB_STARTED
    status = cluster.release_job(f.objects)
    if status.phase is JobPhase.SUCCEEDED:
        return Outcome(Decision.move(Trigger.START), marker)
    if status.phase is JobPhase.FAILED:
        output = status.logs_tail.strip()[-300:]
        tail = f" Last output: {output.rstrip('.')}." if output else ""
        return Outcome(
            Decision.move(
                Trigger.FAIL,
                Blocker.RELEASE_COMMAND,
                f"Release command failed: {status.message}.{tail} {f.keeps}",
            ),
            marker,
        )
    timeout = timedelta(seconds=f.objects.release_command_timeout + 60)
    return Outcome(
        deciding.still_running(f.clocked(timeout, settings), "running the release command"), marker
    )


def starting(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    marker = f.marker
    if f.downtime and f.previous and f.previous != f.objects.release and marker is None:
        # The old pod must let go of the volume before the new one can mount it.
        cluster.drain(f.objects.namespace, f.objects.unit, f.previous)
        marker = StageMarker.PREVIOUS_DRAINED
    if marker in (None, StageMarker.PREVIOUS_DRAINED):
        cluster.start(f.objects)
        marker = StageMarker.APPLIED
    rollout = cluster.rollout(f.objects)
    keeps = replace(f, marker=marker).keeps
    decision = deciding.starting(
        f.clocked(settings.readiness_timeout, settings),
        rollout.started,
        rollout.blocker,
        rollout.message,
        keeps,
    )
    return Outcome(decision, marker)


def qualifying(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    rollout = cluster.rollout(f.objects)
    stable = (
        rollout.ready >= rollout.desired
        and rollout.ready_since is not None
        and f.now - rollout.ready_since >= f.stabilization
    )
    probe_ok: bool | None = None
    message = rollout.message
    if stable and f.objects.probe is not ProbeKind.NONE:
        result = cluster.probe(f.objects)
        probe_ok = result.ok
        if not result.ok:
            message = f"readiness check failed: {result.message}"
    return Outcome(
        deciding.qualifying(
            f.clocked(settings.readiness_timeout, settings),
            rollout.desired,
            rollout.ready,
            rollout.ready_since,
            f.stabilization,
            probe_ok,
            message,
            f.keeps,
        )
    )


def activating(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    cluster.activate(f.objects)
    return Outcome(Decision.move(Trigger.DRAIN))


def draining(f: Facts, cluster: Cluster, settings: Settings) -> Outcome:
    if (
        f.previous
        and f.previous != f.objects.release
        and not f.objects.is_database
        and not f.downtime
    ):
        cluster.drain(f.objects.namespace, f.objects.unit, f.previous)
    return Outcome(Decision.move(Trigger.FINISH))


STAGES = {
    S.ADMITTED: admitted,
    S.RELEASING: releasing,
    S.STARTING: starting,
    S.QUALIFYING: qualifying,
    S.ACTIVATING: activating,
    S.DRAINING: draining,
}

# The blocker a stage fails with when the API keeps failing past its retries.
RETRY_BLOCKER = {
    S.ADMITTED: Blocker.DELIVERY,
    S.RELEASING: Blocker.RELEASE_COMMAND,
    S.STARTING: Blocker.DELIVERY,
    S.QUALIFYING: Blocker.READINESS,
    S.ACTIVATING: Blocker.ROUTE_ACTIVATION,
    S.DRAINING: Blocker.DELIVERY,
}
