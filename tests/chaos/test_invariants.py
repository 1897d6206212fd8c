"""The chaos run's checks, handed broken histories: each breakage is reported, a clean history
is not. (A check that could not fail would make the chaos run pass whatever happened.)"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from tests.chaos.invariants import Deployment, Notice, Rows, check

HAPPY = ["pending", "admitted", "starting", "qualifying", "activating", "draining", "healthy"]


def clean() -> Rows:
    """Two deployments of one unit (r-1 healthy, r-2 waiting for its approval) and the Slack
    message of that approval."""
    return Rows(
        deployments=[
            Deployment(1, unit_id=7, changeset_id=None, state="healthy"),
            Deployment(2, unit_id=7, changeset_id=30, state="awaiting-approval"),
        ],
        transitions=[(1, s) for s in HAPPY] + [(2, "awaiting-approval")],
        releases=[(7, 1), (7, 2)],
        pending_approvals={("changeset", 30)},
        notices=[
            Notice("approval-request:4", "approval-request", delivered=True, skipped=False),
            Notice("approval-update:3", "approval-update", delivered=True, skipped=False),
        ],
    )


POSTS = Counter({"approval-request:4": 1})


def test_a_clean_history_has_no_problem() -> None:
    found = check(clean(), POSTS, updates=1)
    assert found.problems == []
    assert found.counts["deployments by state"] == {"awaiting-approval": 1, "healthy": 1}
    assert found.counts["slack keys posted exactly once"] == 1


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [
        (
            lambda r: replace(r, pending_approvals=set()),
            "deployment 2 is awaiting-approval, neither final nor awaiting a pending approval",
        ),
        (
            lambda r: replace(
                r,
                deployments=[r.deployments[0], replace(r.deployments[1], state="starting")],
                transitions=[*r.transitions, (2, "pending"), (2, "admitted"), (2, "starting")],
            ),
            "deployment 2 is starting, neither final nor awaiting a pending approval",
        ),
        (
            lambda r: replace(r, releases=[(7, 1), (7, 3)]),
            "unit 7: release numbers [1, 3] (twice: [], skipped: [2])",
        ),
        (
            lambda r: replace(r, releases=[(7, 1), (7, 2), (7, 2)]),
            "unit 7: release numbers [1, 2, 2] (twice: [2], skipped: [])",
        ),
        (
            lambda r: replace(
                r, transitions=[*r.transitions[:3], (1, "admitted"), *r.transitions[3:]]
            ),
            "deployment 1 entered ['admitted'] more than once",
        ),
        (
            lambda r: replace(r, transitions=[t for t in r.transitions if t != (1, "qualifying")]),
            "deployment 1: starting -> activating is not in the transition table (an event is missing)",
        ),
        (
            lambda r: replace(r, transitions=[t for t in r.transitions if t != (1, "healthy")]),
            "deployment 1: the last event says draining but the deployment is healthy",
        ),
        (
            lambda r: replace(r, transitions=[t for t in r.transitions if t[0] != 2]),
            "deployment 2: no state event at all",
        ),
        (
            lambda r: replace(r, transitions=[t for t in r.transitions if t != (1, "pending")]),
            "deployment 1: the first event is admitted, not an initial state",
        ),
        (
            lambda r: replace(r, notices=[replace(r.notices[0], delivered=False), r.notices[1]]),
            "Slack: 1 not delivered: ['approval-request:4']",
        ),
    ],
)
def test_each_breakage_is_reported(breakage: object, problem: str) -> None:
    found = check(breakage(clean()), POSTS, updates=1)  # type: ignore[operator]
    assert [p for p in found.problems if p.startswith(problem)], found.problems


def test_an_approval_message_is_closed_with_its_approval() -> None:
    closed = replace(clean(), closed_approvals={4})
    assert check(closed, POSTS, updates=1, edited={"approval-request:4"}).problems == []
    assert check(closed, POSTS, updates=1, edited=set()).problems == [
        "Slack: closed approvals still asking for a decision: [4]"
    ]
    assert check(clean(), POSTS, updates=1, edited={"approval-request:4"}).problems == [
        "Slack: pending approvals whose message was closed: [4]"
    ]


@pytest.mark.parametrize(
    ("posts", "problem"),
    [
        (
            Counter({"approval-request:4": 2}),
            "Slack: 1 posted more than once: ['approval-request:4']",
        ),
        (Counter(), "Slack: 1 never posted: ['approval-request:4']"),
        (
            Counter({"approval-request:4": 1, "deployment-failed:9": 1}),
            "Slack: 1 posted without a notice: ['deployment-failed:9']",
        ),
    ],
)
def test_slack_posts_are_counted_per_key(posts: Counter[str], problem: str) -> None:
    assert check(clean(), posts, updates=1).problems == [problem]
