"""``python -m tests.engine.crashing ARGS``: the ``nebula`` command, with two test-only hooks
read from the environment (never by production code):

- ``TEST_KILL_AT=unit:method:when``: the process sends itself SIGKILL on the first
  cluster call ``method`` for ``unit``, ``before`` or ``after`` the call (so "after" dies with
  the cluster changed and the engine's transaction not committed);
- ``TEST_CLOCK_OFFSET=SECONDS``: the process's clock runs that far ahead, as if it
  started that much later (so the lease of a process killed earlier has expired).
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from reconciler import clock
from reconciler.cli import main
from reconciler.runtimes import registry
from reconciler.runtimes.simulated import SimulatedCluster

# The unit each cluster call acts on: ``objects.unit``, or the ``unit`` argument.
_BY_ARGUMENT = {"drain", "remove", "teardown", "selected_release"}


class Killing:
    def __init__(self, inner: SimulatedCluster, unit: str, method: str, when: str) -> None:
        self._inner = inner
        self._target = (unit, method, when)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in _BY_ARGUMENT:
                unit = args[1] if len(args) > 1 else kwargs.get("unit")
            else:
                unit = getattr(args[0], "unit", None) if args else None
            if (unit, name, "before") == self._target:
                os.kill(os.getpid(), signal.SIGKILL)
            result = attribute(*args, **kwargs)
            if (unit, name, "after") == self._target:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return call


def _install() -> None:
    kill_at = os.environ.get("TEST_KILL_AT")
    if kill_at:
        unit, method, when = kill_at.split(":")
        simulated = registry.Clusters.simulated

        def killing(self: registry.Clusters) -> Any:
            return Killing(simulated(self), unit, method, when)

        registry.Clusters.simulated = killing  # type: ignore[method-assign]
    offset = timedelta(seconds=float(os.environ.get("TEST_CLOCK_OFFSET", "0")))
    if offset:

        def now(self: clock.SystemClock) -> datetime:
            return datetime.now(UTC) + offset

        clock.SystemClock.now = now  # type: ignore[method-assign]


if __name__ == "__main__":
    _install()
    raise SystemExit(main.main(sys.argv[1:]))
