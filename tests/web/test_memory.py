"""``nebula serve`` caps glibc's malloc arenas (issue 32, item 5: RSS under 200 MB with 1,000
projects, measured by bench/latency.py), unless the operator set ``MALLOC_ARENA_MAX``."""

from __future__ import annotations

import platform

import pytest

from reconciler import serving

GLIBC = platform.libc_ver()[0] == "glibc"


def test_an_operators_malloc_arena_max_is_left_alone() -> None:
    assert serving.fewer_malloc_arenas({"MALLOC_ARENA_MAX": "4"}) is False


@pytest.mark.skipif(not GLIBC, reason="mallopt(M_ARENA_MAX) is glibc's")
def test_a_server_caps_its_malloc_arenas_on_glibc() -> None:
    # Here, in the test process: two arenas change how much memory it keeps, nothing else.
    assert serving.fewer_malloc_arenas({}) is True
