"""The longest test files first, so that the two xdist workers end together.

With ``--dist loadfile`` a file runs whole on one worker, and xdist hands files out in the
order collected (``--no-loadscope-reorder``; its default orders them by how many tests they
hold, which puts a file of one three-minute test last). A long file handed out last keeps one
worker busy after the other has run out of work (in one CI run, the last 2% of the tests
ran on one worker for about six minutes). These files, each a minute or more in CI's log
(``--durations``), are handed out first, longest first; the rest keep their order. The suite
stays CPU-bound on two cores, so this removes the idle tail, not the CPU the tests need.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = (
    "tests/chaos/test_chaos.py",
    "tests/robustness/test_stateful.py",
    "tests/web/test_openapi.py",
    "tests/engine/test_crash.py",
    "tests/core/test_planning.py",
    "tests/test_house.py",
    "tests/web/test_replicas.py",
    "tests/security/test_canaries.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.partition("::")[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: within a rank, the collected order stays
