"""The same installation through either door of the command line: local (the store itself,
``--as NAME``) or remote (its HTTP API on a loopback port, a member's token).

``door`` runs each test twice, once per door, so a scenario written once pins that both
modes print the same, refuse the same and record the same."""

from __future__ import annotations

import io
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field

import pytest

from reconciler.cli import main
from tests.plugins import people
from tests.plugins.nebula import Nebula, Result
from tests.web.world import ThreadedServer


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class Remote:
    """``nebula`` in this process against the installation's API served on ``url``."""

    nebula: Nebula
    url: str
    tokens: dict[str, str] = field(default_factory=dict)

    def token(self, name: str) -> str:
        if name not in self.tokens:
            with self.nebula.ctx.db.transaction() as session:
                self.tokens[name] = people.token(session, self.nebula.clock, name)
        return self.tokens[name]

    def cli(self, command: str, *, as_: str | None = None, token: str | None = None) -> Result:
        """``command`` as the member ``as_`` (their token), or with ``token``, or with none."""
        bearer = token if token is not None else (self.token(as_) if as_ is not None else None)
        out, err = io.StringIO(), io.StringIO()
        with (
            environment(NEBULA_SERVER=self.url, NEBULA_TOKEN=bearer),
            redirect_stdout(out),
            redirect_stderr(err),
        ):
            try:
                code = main.main(shlex.split(command))
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Result(code, out.getvalue(), err.getvalue())


@dataclass
class Door:
    """One door of the command line onto ``nebula``: ``act`` as a member, ``read`` as anyone."""

    nebula: Nebula
    remote: Remote | None = None

    @property
    def name(self) -> str:
        return "remote" if self.remote is not None else "local"

    def act(self, who: str | None, command: str) -> Result:
        if self.remote is not None:
            return self.remote.cli(command, as_=who)
        return self.nebula.cli(command + (f" --as {who}" if who is not None else ""))

    def read(self, command: str, who: str | None = None) -> Result:
        return self.act(who, command)


@pytest.fixture(params=["local", "remote"])
def door(request: pytest.FixtureRequest, nebula: Nebula) -> Iterator[Door]:
    if request.param == "local":
        yield Door(nebula)
        return
    with ThreadedServer(nebula.ctx) as server:
        yield Door(nebula, Remote(nebula, server.url))
