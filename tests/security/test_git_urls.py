"""A repository URL with credentials in it never shows them: not in the project's blocker
message (CLI, API, page, Slack notice, events), not in a log line, not in a CLI error.

Each case is a project whose remote fails in its own way, with a canary where the
credentials go; one reconcile pass polls them all.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins.git import GitHttpServer, GitRepo, free_port
from tests.plugins.nebula import Nebula, nebula_with
from tests.security.world import Outputs, leaks, recording_logs
from tests.web.world import AppServer

SERVER_TOKEN = "cnry-server-" + secrets.token_hex(8)  # what the live git server wants
WRONG_TOKEN = "cnry-wrongtoken-" + secrets.token_hex(8)  # NEBULA_GIT_CREDENTIALS for host B


@dataclass(frozen=True)
class Case:
    slug: str
    secret: str
    url: str  # with {dead}, {live} and {other} for ports, {secret} for the canary
    shown: str  # what the message shows in the URL's place
    refused: bool = False  # refused by ``project add`` (its error shows it), so never polled


def _secret(kind: str) -> str:
    return f"cnry-{kind}-{secrets.token_hex(8)}"


CASES = [
    Case(
        "unreachable",
        _secret("pass"),
        "https://deploy:{secret}@127.0.0.1:{dead}/x.git",
        "https://***@127.0.0.1:{dead}/x.git",
    ),
    Case(
        "token-as-user",
        _secret("user"),
        "https://{secret}@127.0.0.1:{dead}/x.git",
        "https://***@127.0.0.1:{dead}/x.git",
    ),
    Case(
        "ssh",
        _secret("sshpass"),
        "ssh://deploy:{secret}@127.0.0.1:{dead}/x.git",
        "ssh://***@127.0.0.1:{dead}/x.git",
    ),
    Case(
        "query-token",
        _secret("query"),
        "https://127.0.0.1:{dead}/x.git?private_token={secret}",
        "https://127.0.0.1:{dead}/x.git?***",
    ),
    Case(
        "wrong-password",
        _secret("wrong"),
        "http://deploy:{secret}@127.0.0.1:{live}/app.git",
        "http://***@127.0.0.1:{live}/app.git",
    ),
    Case(
        "missing-repo",
        SERVER_TOKEN,
        "http://deploy:{secret}@127.0.0.1:{live}/missing.git",
        "http://***@127.0.0.1:{live}/missing.git",
    ),
    Case(
        "missing-branch",
        SERVER_TOKEN,
        "http://deploy:{secret}@127.0.0.1:{live}/app.git",
        "Branch nowhere does not exist",
    ),
    Case(
        "bad-port",
        _secret("port"),
        "https://deploy:{secret}@127.0.0.1:99999/x.git",
        "https://***@127.0.0.1:99999/x.git",
        refused=True,
    ),
    Case(
        "bad-scheme",
        _secret("scheme"),
        "ftp://deploy:{secret}@127.0.0.1/x.git",
        "ftp://***@127.0.0.1/x.git",
        refused=True,
    ),
    Case(
        "unparsable",
        _secret("ipv6"),
        "https://deploy:{secret}@[::1/x.git",
        "https://***@[::1/x.git",
        refused=True,
    ),
    Case(
        "refused-setting",
        WRONG_TOKEN,
        "http://127.0.0.1:{other}/app.git",
        "http://127.0.0.1:{other}/app.git refused the credentials Nebula sent",
    ),
]


@dataclass
class Polled:
    nebula: Nebula
    outputs: Outputs
    ports: dict[str, int]
    projects: dict[str, dict[str, object]]


@pytest.fixture(scope="module")
def polled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Polled]:
    tmp: Path = tmp_path_factory.mktemp("git-urls")
    served = tmp / "served"
    repo = GitRepo(served / "app.git", bare=True)
    repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    live = GitHttpServer(served, token=SERVER_TOKEN).start()
    other = GitHttpServer(served, token=SERVER_TOKEN).start()
    ports = {"dead": free_port(), "live": live.port, "other": other.port}
    outputs = Outputs()
    try:
        for nebula in nebula_with(tmp, git_credentials=f"127.0.0.1:{other.port}={WRONG_TOKEN}"):
            with recording_logs() as logs:
                for case in CASES:
                    url = case.url.format(secret=case.secret, **ports)
                    branch = "nowhere" if case.slug == "missing-branch" else "main"
                    add = f"project add {case.slug} --repo {url} --branch {branch}"
                    _cli(nebula, outputs, add)  # checked first: its refusal leaks nothing either
                    _cli(nebula, outputs, f"{add} --no-check")  # then polled, as before
                for command in (
                    "reconcile",
                    "reconcile --json",
                    "status --json",
                    "status",
                    "project list",
                    "project list --json",
                ):
                    _cli(nebula, outputs, command)
                for case in CASES:
                    _cli(nebula, outputs, f"reconcile --project {case.slug}")
                    _cli(nebula, outputs, f"status {case.slug}")
                with AppServer(create_app(nebula.ctx)) as app:
                    for case in CASES:
                        for path in (f"/api/v1/projects/{case.slug}", f"/projects/{case.slug}"):
                            body = httpx.get(app.url + path, timeout=10).text
                            outputs.add("http", path, body)
            for n, line in enumerate(logs.lines):
                outputs.add("log", f"log record {n}", line)
            with nebula.ctx.db.transaction() as session:
                for e in session.scalars(select(schema.Event)):
                    outputs.add("store", f"event {e.id}", f"{e.message} {e.actor}")
                for o in session.scalars(select(schema.OutboxMessage)):
                    outputs.add("slack", f"outbox {o.key}", json.dumps(o.payload))
            projects = {p["slug"]: p for p in nebula.json("project list")["projects"]}
            yield Polled(nebula, outputs, ports, projects)
    finally:
        live.stop()
        other.stop()


def _cli(nebula: Nebula, outputs: Outputs, command: str) -> None:
    result = nebula.cli(command)
    outputs.add("cli", f"nebula {command}", result.out + result.err)


POLLED = [c for c in CASES if not c.refused]


@pytest.mark.parametrize("case", POLLED, ids=[c.slug for c in POLLED])
def test_the_blocker_message_names_the_remote_without_its_credentials(
    polled: Polled, case: Case
) -> None:
    project = polled.projects[case.slug]
    message = str(project["message"])
    assert project["blocker"] == "delivery", message
    assert case.shown.format(**polled.ports) in message
    assert case.secret not in message
    assert case.secret not in str(project["repo"])


@pytest.mark.parametrize("kind", ["cli", "http", "log", "store", "slack"])
def test_no_credential_reaches_any_output(polled: Polled, kind: str) -> None:
    seen = polled.outputs.of(kind)
    assert seen, f"nothing recorded as {kind}"
    needles = {c.slug: c.secret for c in CASES}
    found = leaks(seen, needles)
    assert not found, "\n".join(found[:10])


def test_every_failure_was_reported_to_a_person(polled: Polled) -> None:
    """The cases above reached the places they were checked in (a test that cannot fail
    would prove nothing): each blocker is in the CLI's output and queued as a Slack notice."""
    cli = "\n".join(s.text for s in polled.outputs.of("cli"))
    slack = "\n".join(s.text for s in polled.outputs.of("slack"))
    for case in CASES:
        shown = case.shown.format(**polled.ports)
        assert shown in cli, case.slug
        if case.refused:
            assert case.slug not in polled.projects
            assert f"error: The repository URL {shown} " in cli
        else:
            assert f'"project": "{case.slug}", "blocker": "delivery"' in slack, case.slug
