"""What the security tests share: canary values, a record of everything a person can see, and
an installation wired to a local Slack and to git servers that want credentials.

A canary is a secret value unique enough that finding it anywhere is proof it leaked. The
flow in ``flow.py`` seeds one of each kind Nebula holds and records every output; the tests
grep those outputs for every canary.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import secrets
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fastapi.routing
from cryptography.fernet import Fernet
from fastapi import FastAPI

from tests.plugins.nebula import Nebula, Result


def _canary(kind: str) -> str:
    return f"cnry-{kind}-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Canaries:
    """One value per kind of secret; the generated ones (API tokens, the database password)
    are learnt during the flow and added with ``learn``."""

    server_secret: str = field(default_factory=lambda: _canary("stripe"))
    slack_token: str = field(default_factory=lambda: "xoxb-" + _canary("bot"))
    slack_signing_secret: str = field(default_factory=lambda: _canary("signing"))
    git_token: str = field(default_factory=lambda: _canary("gittoken"))
    url_password: str = field(default_factory=lambda: _canary("urlpass"))
    dead_url_password: str = field(default_factory=lambda: _canary("deadpass"))
    wrong_url_password: str = field(default_factory=lambda: _canary("wrongpass"))
    webhook_secret: str = field(default_factory=lambda: _canary("hook"))
    secret_key: str = field(default_factory=lambda: Fernet.generate_key().decode())
    learnt: dict[str, str] = field(default_factory=dict)

    def learn(self, name: str, value: str) -> None:
        assert len(value) >= 16, f"{name} is too short to be a canary: {value!r}"
        self.learnt[name] = value

    def all(self) -> dict[str, str]:
        fixed = {k: v for k, v in vars(self).items() if isinstance(v, str)}
        return {**fixed, **self.learnt}

    def needles(self) -> dict[str, str]:
        """Every canary, and each as base64 (how a Kubernetes Secret's ``data`` holds it)."""
        out = {}
        for name, value in self.all().items():
            out[name] = value
            out[f"{name} (base64)"] = base64.b64encode(value.encode()).decode()
        return out


@dataclass
class Seen:
    """One thing a user or an operator can see: where it came from, and its text."""

    where: str
    text: str


@dataclass
class Outputs:
    """Everything recorded, by kind (cli, log, http, slack, store, render, serve-log)."""

    items: dict[str, list[Seen]] = field(default_factory=dict)

    def add(self, kind: str, where: str, text: str) -> None:
        self.items.setdefault(kind, []).append(Seen(where, text))

    def of(self, *kinds: str) -> list[Seen]:
        return [s for k in kinds for s in self.items.get(k, [])]


def leaks(seen: list[Seen], needles: dict[str, str]) -> list[str]:
    """``"<canary> in <where>: ...excerpt..."`` for every canary found."""
    found = []
    for item in seen:
        for name, needle in needles.items():
            at = item.text.find(needle)
            if at >= 0:
                excerpt = item.text[max(0, at - 80) : at + len(needle) + 40].replace("\n", " ")
                found.append(f"{name} in {item.where}: ...{excerpt}...")
    return found


# -- logs ------------------------------------------------------------------------------------

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()) | {
    "message",
    "asctime",
    "taskName",
}


class RecordingHandler(logging.Handler):
    """Keeps every record as it was logged, before any formatter could scrub it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a library's bad format string is not our concern here
            message = f"{record.msg!r} % {record.args!r}"
        extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        line = f"{record.name} {record.levelname} {message} {extras!r}"
        if record.exc_info and record.exc_info[1] is not None:
            line += "\n" + "".join(traceback.format_exception(*record.exc_info))
        self.lines.append(line)


@contextmanager
def recording_logs() -> Iterator[RecordingHandler]:
    """Every logger at DEBUG, into one handler, for as long as the block runs."""
    root = logging.getLogger()
    handler = RecordingHandler()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


# -- the CLI ---------------------------------------------------------------------------------


class Operator:
    """Runs ``nebula`` commands in-process and records what each printed."""

    def __init__(self, nebula: Nebula, outputs: Outputs) -> None:
        self.nebula = nebula
        self.outputs = outputs

    def run(self, command: str, *, stdin: str | None = None, ok: bool = True) -> Result:
        saved = sys.stdin
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        try:
            result = self.nebula.cli(command)
        finally:
            sys.stdin = saved
        self.outputs.add("cli", f"nebula {command} (stdout)", result.out)
        self.outputs.add("cli", f"nebula {command} (stderr)", result.err)
        if ok:
            assert result.code == 0, f"nebula {command} exited {result.code}: {result.err}"
        return result

    def json(self, command: str) -> Any:
        return json.loads(self.run(f"{command} --json").out)


# -- the app on loopback ---------------------------------------------------------------------


def app_routes(app: FastAPI) -> list[tuple[str, frozenset[str]]]:
    """Every route the app serves, flattened through included routers: (path, methods).

    FastAPI 0.165 includes routers lazily; ``iter_route_contexts`` is its public way to see
    the effective routes. Older versions list them flat in ``app.routes``. A mount (static
    files) answers GET and HEAD only.
    """
    flatten = getattr(fastapi.routing, "iter_route_contexts", None)
    routes = list(flatten(app.routes)) if flatten is not None else list(app.routes)
    out = []
    for route in routes:
        path = getattr(route, "path", None)
        if path is None:
            continue
        methods = getattr(route, "methods", None)
        out.append((str(path), frozenset(methods) if methods else frozenset({"GET", "HEAD"})))
    return out
