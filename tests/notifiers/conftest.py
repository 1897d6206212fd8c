"""A Nebula wired to the local Slack: a temporary store, a fake clock, the simulated cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from reconciler import bootstrap
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.settings import Settings
from reconciler.web import slack as interactions
from tests.notifiers.flows import Flow
from tests.plugins.git import GitRepo
from tests.plugins.slack import CHANNEL_ID, SLACK_SIGNING_SECRET, SLACK_TOKEN, SlackServer
from tests.web.world import AppServer

PUBLIC_URL = "https://nebula.example.com"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings(tmp_path: Path, slack_server: SlackServer) -> Settings:
    return Settings(
        state_dir=tmp_path / "state",
        slack_bot_token=SLACK_TOKEN,
        slack_signing_secret=SLACK_SIGNING_SECRET,
        slack_api_url=slack_server.base_url,
        slack_channel=CHANNEL_ID,
        public_url=PUBLIC_URL,
        simulated_delay=timedelta(0),
    )


@pytest.fixture
def ctx(settings: Settings, clock: FakeClock, slack_server: SlackServer) -> Iterator[Context]:
    slack_server.use_clock(lambda: clock.now().timestamp())
    context = bootstrap.open_context(settings, clock)
    yield context
    context.db.dispose()
    if context.git is not None:
        context.git.close()


@pytest.fixture
def flow(ctx: Context, clock: FakeClock, git_repo: GitRepo, slack_server: SlackServer) -> Flow:
    return Flow(ctx, clock, git_repo, slack_server)


@pytest.fixture
def web(ctx: Context) -> Iterator[httpx.Client]:
    """A tiny app with only the Slack router, as the server mounts it, served by uvicorn."""
    app = FastAPI()
    app.include_router(interactions.router(ctx))
    with AppServer(app) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield client
