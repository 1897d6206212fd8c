"""Fixtures for the engine's scenarios: an installation whose simulated cluster injects the
faults of ``projects.FAULTS_TOML``, with short timeouts so a blocker is reached in seconds of
fake time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.engine.projects import FAULTS_TOML
from tests.plugins.nebula import Nebula, nebula_with

READINESS_TIMEOUT = timedelta(seconds=30)
ROUTE_ACTIVATION_TIMEOUT = timedelta(seconds=20)


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Nebula]:
    faults = tmp_path / "faults.toml"
    faults.write_text(FAULTS_TOML, encoding="utf-8")
    yield from nebula_with(
        tmp_path,
        simulated_faults=str(faults),
        readiness_timeout=READINESS_TIMEOUT,
        route_activation_timeout=ROUTE_ACTIVATION_TIMEOUT,
    )
