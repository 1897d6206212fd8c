"""The promotion gate's decision (``reconciler.core.gates``), as a table: what the gating
environment knows about an image, and what the gate says at a given moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reconciler.core import gates
from reconciler.core.gates import Attempt, Evidence, Gate, Stretch, Verdict
from reconciler.core.states import DeploymentState, GateState

T0 = datetime(2026, 12, 1, 14, 2, tzinfo=UTC)
GATE = Gate("staging", timedelta(minutes=30))
S = DeploymentState


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


CASES = [
    pytest.param(
        Evidence("api"),
        0,
        GateState.WAITING,
        "Waiting for api to be healthy in staging",
        id="no release of the image there yet",
    ),
    pytest.param(
        Evidence("api", latest=Attempt("r-4", S.QUALIFYING)),
        0,
        GateState.WAITING,
        "Waiting for api to be healthy in staging",
        id="its deployment still in flight",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-4", T0),), Attempt("r-4", S.HEALTHY)),
        12,
        GateState.WAITING,
        "Waiting for api r-4 in staging: healthy for 12m of 30m",
        id="soaking",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-4", T0),), Attempt("r-4", S.HEALTHY)),
        125,
        GateState.PASSED,
        "Verified in staging: api r-4 healthy since 2026-12-01 14:02 UTC (2h 5m)",
        id="soaked",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-4", T0),), Attempt("r-4", S.HEALTHY)),
        30,
        GateState.PASSED,
        "Verified in staging: api r-4 healthy since 2026-12-01 14:02 UTC (30m)",
        id="exactly the soak",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-4", T0, at(40)),), Attempt("r-5", S.HEALTHY)),
        300,
        GateState.PASSED,
        "Verified in staging: api r-4 healthy since 2026-12-01 14:02 UTC (40m)",
        id="a newer release later does not undo the proof",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-4", T0, at(20)), Stretch("r-4", at(25), at(45)))),
        300,
        GateState.WAITING,
        "Waiting for api to be healthy in staging",
        id="two stretches of 20m are not one of 30m",
    ),
    pytest.param(
        Evidence("api", latest=Attempt("r-4", S.FAILED, "image-pull")),
        0,
        GateState.FAILED,
        "Not requested: api r-4 failed in staging (image-pull). Fix it in staging first.",
        id="failed there",
    ),
    pytest.param(
        Evidence("api", latest=Attempt("r-4", S.CANCELLED)),
        0,
        GateState.FAILED,
        "Not requested: api r-4 cancelled in staging. Fix it in staging first.",
        id="cancelled there",
    ),
    pytest.param(
        Evidence("api", latest=Attempt("r-4", S.REJECTED)),
        0,
        GateState.FAILED,
        "Not requested: api r-4 rejected in staging. Fix it in staging first.",
        id="rejected there",
    ),
    pytest.param(
        Evidence("api", latest=Attempt("r-4", S.SUPERSEDED)),
        0,
        GateState.WAITING,
        "Waiting for api to be healthy in staging",
        id="superseded there: not a failure",
    ),
    pytest.param(
        Evidence("api", (Stretch("r-2", T0),), Attempt("r-4", S.FAILED, "capacity")),
        10,
        GateState.WAITING,
        "Waiting for api r-2 in staging: healthy for 10m of 30m",
        id="a failed redeploy while the image still serves and soaks",
    ),
]


@pytest.mark.parametrize(("evidence", "minutes", "state", "message"), CASES)
def test_the_gate_decides_in_order(
    evidence: Evidence, minutes: float, state: GateState, message: str
) -> None:
    verdict = gates.decide(evidence, GATE, at(minutes))
    assert (verdict.state, verdict.message) == (state, message)


def test_no_soak_passes_once_healthy() -> None:
    evidence = Evidence("db", (Stretch("r-1", T0),), Attempt("r-1", S.HEALTHY))
    verdict = gates.decide(evidence, Gate("staging", timedelta(0)), T0)
    assert verdict.state is GateState.PASSED
    assert verdict.message == "Verified in staging: db r-1 healthy since 2026-12-01 14:02 UTC (0s)"


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([], GateState.PASSED),
        ([GateState.PASSED, GateState.PASSED], GateState.PASSED),
        ([GateState.PASSED, GateState.WAITING, GateState.WAITING], GateState.WAITING),
        ([GateState.WAITING, GateState.FAILED], GateState.FAILED),
    ],
)
def test_a_change_set_has_one_gate_speaking_of_its_first_such_line(
    states: list[GateState], expected: GateState
) -> None:
    verdicts = [Verdict(state, f"line {i}") for i, state in enumerate(states)]
    combined = gates.combine(verdicts)
    assert combined.state is expected
    if states:
        assert combined.message == f"line {states.index(expected)}"
    else:
        assert combined.message == gates.NOTHING_TO_VERIFY


def test_promote_says_how_long_it_has_soaked_and_what_is_needed() -> None:
    evidence = Evidence("api", (Stretch("r-4", T0),), Attempt("r-4", S.HEALTHY))
    assert gates.too_young("api", GATE, "production", evidence, at(12)) == (
        "api r-4 has been healthy in staging for 12m; production needs 30m"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (45, "45s"),
        (90, "1m"),
        (725, "12m"),
        (3605, "1h"),
        (7500, "2h 5m"),
        (97260, "1d 3h"),
    ],
)
def test_durations_are_shown_in_their_two_largest_units(seconds: int, shown: str) -> None:
    assert gates.human(timedelta(seconds=seconds)) == shown
