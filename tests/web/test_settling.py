"""``bootstrap.settle``, what ``nebula serve`` does once started: the garbage of starting up
is collected, and what is left is out of the cyclic collector's view from then on."""

from __future__ import annotations

import gc
import weakref

from reconciler import bootstrap


class _Node:
    me: _Node


def test_settling_collects_the_garbage_then_freezes_the_rest() -> None:
    garbage, kept = _Node(), _Node()
    garbage.me, kept.me = garbage, kept  # cycles: only the cyclic collector frees them
    gone = weakref.ref(garbage)
    del garbage
    try:
        bootstrap.settle()
        assert gone() is None, "collected before the freeze, not kept for ever"
        frozen = gc.get_freeze_count()
        assert frozen > 1000  # this process's modules and what the tests made so far
    finally:
        gc.unfreeze()  # (the rest of the test session collects as before)
    assert gc.get_freeze_count() == 0
    assert kept.me is kept
