"""The installation the canary flow runs against: its servers, its store, and what it records.

Two git servers that want credentials (one a token from ``NEBULA_GIT_CREDENTIALS``, one the
password in the project's URL), a local Slack, the settings and the ``nebula serve``
environment carrying every canary, and the ``nebula.toml`` texts the flow pushes. Both phases
of the flow (``flow.py`` in-process, ``served.py`` as a process) share one ``Installation``
and write into one ``Recorded``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixtures import loading
from reconciler import settings
from reconciler.settings import Settings
from tests.plugins.git import GitHttpServer, GitRepo, free_port
from tests.plugins.nebula import DIGEST_A, DIGEST_B, DIGEST_C, image
from tests.plugins.slack import CHANNEL_ID, SlackServer
from tests.security.world import Canaries, Outputs

API_GOOD = image("api", DIGEST_A)
API_NEXT = image("api", DIGEST_B)
API_LATER = image("api", DIGEST_C)
API_BROKEN = image("api", "sha256:" + "e" * 64)
FAULTS_TOML = f'[images."{API_BROKEN}"]\nfail = "image-pull"\n'
PUBLIC_URL = "https://nebula.example.com"


def shop_toml(api_image: str = API_GOOD, level: str = "info") -> str:
    """fixtures/projects/checkout, whose api also reads the database's password."""
    return loading.project(
        "checkout",
        {
            API_GOOD: api_image,
            'LOG_LEVEL = "info"': f'LOG_LEVEL = "{level}"',
            "STRIPE_KEY =": 'PGPASSWORD = "${{ db.PGPASSWORD }}"\nSTRIPE_KEY =',
        },
    )


def blog_toml(level: str = "info") -> str:
    return loading.project("blog", {'LOG_LEVEL = "info"': f'LOG_LEVEL = "{level}"'})


@dataclass
class Recorded:
    canaries: Canaries
    outputs: Outputs
    store_dump: list[tuple[str, str]] = field(default_factory=list)  # (table.column#id, text)
    raw_files: list[tuple[str, bytes]] = field(default_factory=list)  # (file @ moment, bytes)
    api_token_rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    slack_calls: int = 0
    pages: int = 0
    api_documents: int = 0
    serve_polled: bool = False
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug -> project JSON


class Installation:
    """The servers and the store the flow runs against."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.canaries = Canaries()
        self.outputs = Outputs()
        self.state = tmp / "state"
        self.faults = tmp / "faults.toml"
        self.faults.write_text(FAULTS_TOML, encoding="utf-8")
        self.served = tmp / "served"
        self.served.mkdir()
        # Two git servers: one wants the token from NEBULA_GIT_CREDENTIALS, the other the
        # password written in the project's URL.
        self.git_token_server = GitHttpServer(self.served, token=self.canaries.git_token).start()
        self.git_url_server = GitHttpServer(self.served, token=self.canaries.url_password).start()
        self.shop = GitRepo(self.served / "shop.git", bare=True)
        self.blog = GitRepo(self.served / "blog.git", bare=True)
        self.slack = SlackServer(token=self.canaries.slack_token)
        self.dead_port = free_port()  # nothing listens here

    def close(self) -> None:
        self.slack.stop()
        self.git_token_server.stop()
        self.git_url_server.stop()

    @property
    def shop_url(self) -> str:
        return self.git_token_server.url("shop.git")

    @property
    def blog_url(self) -> str:
        return self.git_url_server.url("blog.git", userinfo=f"deploy:{self.canaries.url_password}")

    @property
    def ghost_url(self) -> str:
        return (
            f"https://deploy:{self.canaries.dead_url_password}@127.0.0.1:{self.dead_port}/ghost.git"
        )

    @property
    def locked_url(self) -> str:
        wrong = self.canaries.wrong_url_password
        return self.git_url_server.url("blog.git", userinfo=f"deploy:{wrong}")

    @property
    def git_credentials(self) -> str:
        return f"127.0.0.1:{self.git_token_server.port}={self.canaries.git_token}"

    def settings(self) -> Settings:
        """What the in-process phase runs on: the same settings ``nebula serve`` reads."""
        return settings.load(environ=self.serve_env())

    def serve_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
        env.update(
            NEBULA_DATABASE_URL=f"sqlite:///{self.state / 'nebula.db'}",
            NEBULA_STATE_DIR=str(self.state),
            NEBULA_SECRET_KEY=self.canaries.secret_key,
            NEBULA_SLACK_BOT_TOKEN=self.canaries.slack_token,
            NEBULA_SLACK_SIGNING_SECRET=self.canaries.slack_signing_secret,
            NEBULA_SLACK_API_URL=self.slack.base_url,
            NEBULA_SLACK_CHANNEL=CHANNEL_ID,
            NEBULA_PUBLIC_URL=PUBLIC_URL,
            NEBULA_GIT_CREDENTIALS=self.git_credentials,
            NEBULA_CLUSTER="simulated",
            NEBULA_SIMULATED_DELAY="0s",
            NEBULA_SIMULATED_FAULTS=str(self.faults),
        )
        return env
