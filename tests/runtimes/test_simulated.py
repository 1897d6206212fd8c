"""The simulated cluster's latency (``NEBULA_SIMULATED_LATENCY``): each call to its API waits
that long in real time, outside its transaction; with none set (the tests' and the default)
nothing sleeps at all."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from reconciler import bootstrap
from reconciler.clock import FakeClock
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.settings import Settings, load
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from tests.runtimes.releases import Service, image, release_objects
from tests.runtimes.test_contract import CALLS


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)
    return naps


def _cluster(tmp_path: Path, latency: timedelta) -> SimulatedCluster:
    db = Database(f"sqlite:///{tmp_path / 'nebula.db'}")
    vault = Vault(Fernet.generate_key())
    return SimulatedCluster(db, FakeClock(), timedelta(0), {}, vault, latency)


def test_every_call_to_the_api_waits_the_latency(tmp_path: Path, slept: list[float]) -> None:
    cluster = _cluster(tmp_path, timedelta(milliseconds=20))
    objects = release_objects("lat", 1, Service(image("api", "lat-1")))
    cluster.capabilities()  # what the server serves: read once, not a call per step
    assert slept == []
    for name, call in CALLS.items():
        call(cluster, objects)
        assert slept[-1:] == [0.02], name
    assert slept == [0.02] * len(CALLS)
    cluster.db.dispose()


def test_without_a_latency_nothing_sleeps(tmp_path: Path, slept: list[float]) -> None:
    cluster = _cluster(tmp_path, timedelta(0))
    objects = release_objects("lat", 1, Service(image("api", "lat-1")))
    for call in CALLS.values():
        call(cluster, objects)
    assert slept == []
    cluster.db.dispose()


def test_the_latency_is_a_setting_the_registry_passes_on(tmp_path: Path) -> None:
    assert load(environ={"NEBULA_SIMULATED_LATENCY": "20ms"}).simulated_latency == timedelta(
        milliseconds=20
    )
    settings = Settings(state_dir=tmp_path, secret_key="", simulated_latency=timedelta(seconds=1))
    ctx = bootstrap.open_context(settings, git=False)
    assert ctx.clusters.simulated().latency == timedelta(seconds=1)
    ctx.db.dispose()
