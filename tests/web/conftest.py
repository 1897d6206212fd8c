"""Fixtures for the server's tests: the shop project pushed and deployed in-process (fake
clock, simulated cluster), and the app serving it on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, nebula_with
from tests.web.world import (
    FAULTS_TOML,
    SLUG,
    ThreadedServer,
    Tokens,
    add_members,
    set_canary,
    shop_toml,
)


@pytest.fixture
def nebula(tmp_path: Path) -> Iterator[Nebula]:
    """The in-process installation, with a simulated cluster that fails ``API_BROKEN``."""
    faults = tmp_path / "faults.toml"
    faults.write_text(FAULTS_TOML, encoding="utf-8")
    yield from nebula_with(tmp_path, simulated_faults=str(faults))


@dataclass
class Shop:
    nebula: Nebula
    repo: GitRepo
    tokens: Tokens

    def push(self, text: str, message: str = "Change") -> str:
        return self.repo.commit({"nebula.toml": text}, message)


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Shop:
    """Registered and settled: staging healthy, production's first deploy awaiting approval."""
    git_repo.commit({"nebula.toml": shop_toml()}, "First version")
    nebula.ok(f"project add {SLUG} --repo {git_repo.url}")
    tokens = add_members(nebula.ctx)
    set_canary(nebula.ctx)
    nebula.settle()
    return Shop(nebula, git_repo, tokens)


@pytest.fixture
def live(nebula: Nebula) -> Iterator[httpx.Client]:
    """An HTTP client for the app serving ``nebula``'s store on a loopback port."""
    with (
        ThreadedServer(nebula.ctx) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        yield client
