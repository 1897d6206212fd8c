"""Promotion gates, decided (behaviour.md "Promotion gates"): may a new image (or database
version) enter an environment that promotes from another?

Pure: the caller reads, from the gating environment, every stretch during which a release of
that exact image was the active one there (``Stretch``) and the newest deployment of such a
release (``Attempt``); ``decide`` says passed, waiting or failed, with the exact message, as
of ``now``. A stretch counts when it lasted ``soak`` in one piece; once one has, a newer
release there later does not undo the proof.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from reconciler.clock import utc
from reconciler.core.states import DeploymentState, GateState
from reconciler.durations import format_duration

ENDED_BADLY = frozenset(
    {DeploymentState.FAILED, DeploymentState.CANCELLED, DeploymentState.REJECTED}
)
NOTHING_TO_VERIFY = "No new image or database version to verify"


@dataclass(frozen=True)
class Stretch:
    """A release of the image being the active one in the gating environment."""

    release: str  # r-4
    since: datetime  # when its deployment went healthy
    until: datetime | None = None  # when another release took over; None: it still serves

    def lasted(self, now: datetime) -> timedelta:
        return (self.until or now) - self.since


@dataclass(frozen=True)
class Attempt:
    """The newest deployment, in the gating environment, of a release of the image."""

    release: str
    state: DeploymentState
    blocker: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What the gating environment knows about one unit's image."""

    unit: str
    stretches: tuple[Stretch, ...] = ()
    latest: Attempt | None = None


@dataclass(frozen=True)
class Gate:
    environment: str  # where an image must prove itself first
    soak: timedelta


@dataclass(frozen=True)
class Verdict:
    state: GateState
    message: str
    proof: Stretch | None = None  # the stretch that passed it


def decide(evidence: Evidence, gate: Gate, now: datetime) -> Verdict:
    """The first condition that holds, in order."""
    where, unit = gate.environment, evidence.unit
    # Proven: one stretch as the active release lasted the soak (the newest such counts).
    proven = [s for s in evidence.stretches if s.lasted(now) >= gate.soak]
    if proven:
        return Verdict(GateState.PASSED, verified(unit, where, proven[-1], now), proven[-1])
    # Soaking: it serves there now and the time is not up yet.
    serving = next((s for s in evidence.stretches if s.until is None), None)
    if serving is not None:
        return Verdict(
            GateState.WAITING,
            f"Waiting for {unit} {serving.release} in {where}: healthy for "
            f"{human(serving.lasted(now))} of {format_duration(gate.soak)}",
        )
    # Failed there: its newest deployment ended failed, cancelled or rejected.
    latest = evidence.latest
    if latest is not None and latest.state in ENDED_BADLY:
        return Verdict(GateState.FAILED, failed(unit, where, latest))
    # Not there yet, or its deployment is still in flight (or was replaced before it soaked).
    return Verdict(GateState.WAITING, f"Waiting for {unit} to be healthy in {where}")


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    """One change set's gate from its lines' verdicts, in dependency order: failed once one
    fails, waiting while one waits, else passed; the message is the first such line's."""
    found = list(verdicts)
    for state in (GateState.FAILED, GateState.WAITING):
        first = next((v for v in found if v.state is state), None)
        if first is not None:
            return first
    return found[0] if found else Verdict(GateState.PASSED, NOTHING_TO_VERIFY)


def failed(unit: str, where: str, attempt: Attempt) -> str:
    blocker = f" ({attempt.blocker})" if attempt.blocker else ""
    return (
        f"Not requested: {unit} {attempt.release} {attempt.state.value} in {where}{blocker}. "
        f"Fix it in {where} first."
    )


def verified(unit: str, where: str, stretch: Stretch, now: datetime) -> str:
    """The evidence an approval request in a gated environment shows."""
    since = utc(stretch.since).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Verified in {where}: {unit} {stretch.release} healthy since {since} "
        f"({human(stretch.lasted(now))})"
    )


def too_young(unit: str, gate: Gate, target: str, evidence: Evidence, now: datetime) -> str:
    """Why ``nebula promote`` is refused while the image has not soaked in the gate."""
    serving = next((s for s in evidence.stretches if s.until is None), None)
    if serving is not None:
        return (
            f"{unit} {serving.release} has been healthy in {gate.environment} for "
            f"{human(serving.lasted(now))}; {target} needs {format_duration(gate.soak)}"
        )
    return (
        f"{unit} has not been healthy in {gate.environment} with that image; {target} needs "
        f"{format_duration(gate.soak)} there first"
    )


def human(value: timedelta) -> str:
    """``2h 5m``, ``12m``, ``45s``, ``1d 3h``: the largest unit, and the next one unless it is
    zero or seconds (a soak is counted in minutes)."""
    seconds = max(0, int(value.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    units = ((86400, "d"), (3600, "h"), (60, "m"))
    size, name = next((size, name) for size, name in units if seconds >= size)
    text = f"{seconds // size}{name}"
    smaller = {86400: (3600, "h"), 3600: (60, "m")}.get(size)
    if smaller is not None and (rest := (seconds % size) // smaller[0]):
        text += f" {rest}{smaller[1]}"
    return text
