"""The remote command line (issue 25): every command through ``/api/v1`` with the same output,
JSON and exit codes as local mode; ``wait`` and ``--watch`` remotely; a wrong token, an
unreachable server and a server without the route each one clear line.

In-process: the app serves the installation's store on a loopback port (its fake clock), and
the command line runs in this process with ``NEBULA_SERVER`` and a member's token."""

from __future__ import annotations

import http.server
import io
import json
import socket
import ssl
import threading
import time
import types
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from fixtures import loading
from reconciler.cli import main, waiting, watching
from reconciler.client import contexts
from reconciler.views import iso
from tests.infra import certs
from tests.plugins import people
from tests.plugins.doors import Remote, environment
from tests.plugins.git import GitRepo, free_port
from tests.plugins.nebula import Nebula, Result
from tests.web.world import ThreadedServer

SHOP = loading.project("storefront")


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    with nebula.ctx.db.transaction() as session:
        for name, role in (("olga", "owner"), ("alice", "admin"), ("carol", "member")):
            people.member(session, nebula.clock, name, role)
    git_repo.commit({"nebula.toml": SHOP}, "Shop: first version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    return nebula


@pytest.fixture
def remote(shop: Nebula) -> Iterator[Remote]:
    with ThreadedServer(shop.ctx) as server:
        yield Remote(shop, server.url)


READS = [
    "status",
    "status shop -o json",
    "status shop --env staging -o yaml",
    "status -o wide",
    "deployments",
    "deployments shop --env staging -o json",
    "deployment show 1",
    "deployment show 1 -o json",
    "changesets -o json",
    "changeset show 1",
    "approvals",
    "approvals --state pending -o json",
    "history shop api --env staging",
    "history shop api --env staging -o json",
    "project list",
    "diff shop --env staging",
    "audit",
    "audit -o json",
    "clusters",
    "clusters -o json",
    "member list -o json",
    "token list",
    "grant list",
    "policy list -o json",
    "freeze list",
    "secret list shop staging -o json",
    # Refusals and errors read the same too.
    "status nope",
    "deployment show 999",
    "deployment show x1",
    "history shop nope --env staging",
    "history shop apii --env staging",  # did you mean 'api'? (issue 29)
    "history shopp api --env stagin",
    "deployments shop --env prod",
]


@pytest.mark.parametrize("command", READS)
def test_every_read_prints_the_same_through_both_doors(
    shop: Nebula, remote: Remote, command: str
) -> None:
    shop.ok("freeze add --days sun --from 01:00 --to 02:00 --as olga")
    through_the_server = remote.cli(command, as_="olga")
    with_the_store = shop.cli(command)
    assert through_the_server == with_the_store
    assert "Traceback" not in through_the_server.err


def test_acts_answer_the_same_json_through_both_doors(shop: Nebula, remote: Remote) -> None:
    approval = next(a for a in shop.approvals() if a["state"] == "pending")
    decided = remote.cli(f"approve {approval['id']} -o json", as_="alice")
    assert decided.code == 0, decided.err
    assert decided.json["approval"]["decided_by"] == "alice"
    assert decided.json["approval"]["state"] == "approved"
    shop.settle()
    redeployed = remote.cli("redeploy shop api --env staging -o json", as_="carol")
    assert redeployed.code == 0, redeployed.err
    assert redeployed.json["deployment"]["requested_by"] == "carol"
    cancelled = remote.cli(f"cancel {redeployed.json['deployment']['id']}", as_="carol")
    assert cancelled.out == f"deployment {redeployed.json['deployment']['id']} cancelled\n"
    events = shop.json(f"deployment show {redeployed.json['deployment']['id']}")["deployment"]
    assert {e["actor"] for e in events["events"]} == {"carol"}


def test_as_is_refused_remotely(remote: Remote) -> None:
    remote.token("carol")
    refused = remote.cli("redeploy shop api --env staging --as alice", as_="carol")
    token = remote.cli("whoami -o json", as_="carol").json["token"]["id"]
    assert refused.code == 1
    assert refused.err.splitlines() == [
        f"error: --as is only for local administration; this command acts as carol (token {token})",
        "hint: leave --as out: the token's member acts (nebula whoami)",
    ]


def test_whoami_names_the_member_behind_the_token(remote: Remote, shop: Nebula) -> None:
    shop.ok("grant add carol deploy --project shop --env production --as olga")
    me = remote.cli("whoami -o json", as_="carol").json
    assert me["member"] == "carol" and me["role"] == "member" and me["mode"] == "remote"
    assert me["server"] == remote.url
    assert me["grants"] == [{"grant": "deploy", "project": "shop", "environment": "production"}]
    table = remote.cli("whoami", as_="carol").out.splitlines()
    assert table[:3] == ["member  carol", "role    member", "grants  deploy shop/production"]


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("nbl_00000000_" + "x" * 32, "Invalid bearer token"),
        ("", "Missing bearer token"),
    ],
)
def test_a_wrong_token_is_one_line_and_a_hint(remote: Remote, token: str, message: str) -> None:
    refused = remote.cli("redeploy shop api --env staging", token=token or None)
    said = "refused the token" if token else "wants a token"
    assert (refused.code, refused.err.splitlines()) == (
        1,
        [
            f"error: the server {said} (401): {message}",
            f"hint: sign in: nebula login {remote.url} (or set NEBULA_TOKEN)",
        ],
    )


def test_a_revoked_or_demoted_members_token_loses_its_rights_at_once(
    remote: Remote, shop: Nebula
) -> None:
    approval = next(a for a in shop.approvals() if a["state"] == "pending")
    remote.token("alice")
    shop.ok("member set alice --role member --as olga")
    refused = remote.cli(f"approve {approval['id']}", as_="alice")
    assert refused.err.splitlines()[0] == (
        "error: alice may not approve in shop/production: needs the approve grant or the admin role"
    )
    token_id = remote.cli("whoami -o json", as_="alice").json["token"]["id"]
    shop.ok(f"token revoke {token_id} --as olga")
    revoked = remote.cli("status", as_="alice")
    assert (
        revoked.err.splitlines()[0]
        == "error: the server refused the token (401): Invalid bearer token"
    )


def test_an_expired_token_is_refused_with_401(remote: Remote, shop: Nebula) -> None:
    text = shop.ok("token create --as carol --expires 1h").out.strip()
    assert remote.cli("whoami", token=text).code == 0
    shop.clock.advance(3600)
    expired = remote.cli("whoami", token=text)
    assert expired.err.splitlines()[0] == "error: the server refused the token (401): token expired"


def test_a_token_makes_only_its_own_member_s_and_none_that_outlives_it(
    remote: Remote, shop: Nebula
) -> None:
    start = shop.clock.now()
    at = lambda minutes: iso(start + timedelta(minutes=minutes))  # noqa: E731
    hour = shop.ok("token create --as carol --expires 1h").out.strip()
    made = remote.cli("token create --expires 30m -o json", token=hour)
    assert made.code == 0, made.err
    assert (made.json["member"], made.json["expires_at"]) == ("carol", at(30))
    # No expiry asked for: the new one ends when the token that made it does.
    forever = remote.cli("token create -o json", token=hour).json
    assert forever["expires_at"] == at(60)
    refused = remote.cli("token create --expires 2h", token=hour)
    token_id = remote.cli("whoami -o json", token=hour).json["token"]["id"]
    assert refused.err.splitlines() == [
        f"error: a token cannot outlive the token that makes it: token {token_id} expires {at(60)}",
        "hint: ask for --expires 1h or less (or sign in with a token that does not expire)",
    ]
    # The API takes no member: a token for someone else is nobody's to make.
    api = httpx.post(
        f"{remote.url}/api/v1/tokens",
        json={"member": "olga"},
        headers={"Authorization": f"Bearer {remote.token('alice')}"},
    )
    assert api.status_code == 422 and "member" in api.text


def test_reads_of_the_page_need_no_token_and_the_rest_do(remote: Remote) -> None:
    assert remote.cli("status shop").code == 0
    for command in ("audit", "member list", "token list", "grant list", "policy list"):
        refused = remote.cli(command)
        assert refused.err.splitlines()[0] == (
            "error: the server wants a token (401): Missing bearer token"
        ), command


def test_wait_and_watch_work_remotely(
    remote: Remote, shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    approval = next(a for a in shop.approvals() if a["state"] == "pending")
    remote.cli(f"approve {approval['id']}", as_="olga")

    def tick(_: float) -> None:
        shop.reconcile()
        shop.clock.advance(1)

    monkeypatch.setattr(waiting.time, "sleep", tick)
    api = next(
        d for d in shop.deployments() if d["environment"] == "production" and d["service"] == "api"
    )
    waited = remote.cli(f"wait {api['id']} --timeout 10m")
    assert waited.code == 0, waited.err
    assert waited.out.splitlines()[-1] == f"deployment {api['id']}: api r-1 healthy"
    changeset = remote.cli(f"wait --changeset {approval['target_id']}")
    assert changeset.code == 0, changeset.err

    looks: list[int] = []

    def stop_after_two(_: float) -> None:
        looks.append(1)
        if len(looks) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(watching.time, "sleep", stop_after_two)
    watched = remote.cli("status shop --watch -o json")
    assert watched.code == 0 and json.loads(watched.out)["projects"][0]["slug"] == "shop"


def test_an_unreachable_server_is_one_line(nebula: Nebula) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    refused = Remote(nebula, url).cli("status")
    assert refused.code == 1
    assert refused.err.splitlines() == [
        f"error: cannot reach the Nebula server at {url}: connection refused",
        "hint: check the URL and that nebula serve runs there (nebula context list)",
    ]


class _Older(http.server.BaseHTTPRequestHandler):
    """A server of 1.1: what it did not have is ``Nothing at ...`` with its old error body."""

    def do_GET(self) -> None:
        body = json.dumps(
            {"error": {"code": "not-found", "message": f"Nothing at {self.path.split('?')[0]}"}}
        ).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_without_the_route_is_named(nebula: Nebula) -> None:
    older = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Older)
    threading.Thread(target=older.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{older.server_address[1]}"
    try:
        refused = Remote(nebula, url).cli("whoami", token="nbl_00000000_" + "x" * 32)
    finally:
        older.shutdown()
        older.server_close()
    assert refused.code == 1
    assert refused.err.splitlines()[0] == (
        f"error: the server at {url} has no route GET /api/v1/whoami: it runs another version "
        "of Nebula"
    )


class _NotNebula(http.server.BaseHTTPRequestHandler):
    """Another service on the port: a 200 page that is no JSON."""

    def do_GET(self) -> None:
        body = b"<html>Welcome to nginx!</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_that_is_not_nebula_and_a_token_that_is_not_one(nebula: Nebula) -> None:
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotNebula)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{other.server_address[1]}"
    try:
        answered = Remote(nebula, url).cli("status")
    finally:
        other.shutdown()
        other.server_close()
    assert (answered.code, answered.err.splitlines()[0]) == (
        1,
        f"error: the server at {url} answered GET /api/v1/status with something that is not "
        "Nebula's JSON",
    )
    mangled = Remote(nebula, url).cli("status", token="nbl_x\nInjected: header")
    assert (mangled.code, mangled.err.splitlines()[0]) == (
        1,
        "error: the token given is not one (a token is one word of letters, digits, '_' and '-')",
    )


@pytest.mark.parametrize("scheme", ["https", "HTTPS", "hTtPs"])
def test_a_server_s_certificate_is_checked_however_https_is_spelled(
    nebula: Nebula, tmp_path: Path, scheme: str
) -> None:
    """A self-signed certificate is refused before the token is sent: in any case of the
    scheme (``HTTPS://`` once turned the checks off)."""
    pair = certs.self_signed(tmp_path, "nebula")
    served = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotNebula)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pair.cert_path, pair.key_path)
    served.socket = tls.wrap_socket(served.socket, server_side=True)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    url = f"{scheme}://127.0.0.1:{served.server_address[1]}"
    try:
        refused = Remote(nebula, url).cli("status", token="nbl_00000000_" + "x" * 32)
    finally:
        served.shutdown()
        served.server_close()
    assert refused.code == 1
    first = refused.err.splitlines()[0]
    assert first.startswith("error: cannot reach the Nebula server at https://127.0.0.1:"), first
    assert "CERTIFICATE_VERIFY_FAILED" in first or "certificate verify failed" in first, first


class _Restarting(http.server.BaseHTTPRequestHandler):
    """A server that answers 503 (a proxy while Nebula restarts) ``failures`` times, then with
    a healthy deployment."""

    failures = 0

    def do_GET(self) -> None:
        if type(self).failures > 0:
            type(self).failures -= 1
            status, document = (
                503,
                {"error": "the state store failed: restarting", "code": "database"},
            )
        else:
            deployment = {"id": 5, "service": "api", "release": "r-1", "state": "healthy",
                          "blocker": None, "message": None}  # fmt: skip
            status, document = 200, {"deployment": deployment}
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(("failures", "code"), [(3, 0), (1000, 3)])
def test_wait_looks_again_through_a_restart_until_its_timeout(
    nebula: Nebula, monkeypatch: pytest.MonkeyPatch, failures: int, code: int
) -> None:
    """A 503 is no ending (exit 1 is for a deployment that ended otherwise): wait looks again,
    saying so once, and gives up with exit 3 when --timeout passes."""
    now = [0.0]
    fake = types.SimpleNamespace(
        monotonic=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)
    )
    monkeypatch.setattr(waiting, "time", fake)
    _Restarting.failures = failures
    served = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Restarting)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{served.server_address[1]}"
    try:
        waited = Remote(nebula, url).cli("wait 5 --timeout 30s", token="nbl_00000000_" + "x" * 32)
    finally:
        served.shutdown()
        served.server_close()
    assert waited.code == code, waited.err
    said = (
        "warning: could not look at deployment 5 (the state store failed: restarting): trying again"
    )
    assert waited.err.splitlines()[0] == said
    assert waited.err.count(said) == 1, "said once, not at every look"
    if code == 0:
        assert waited.out == "deployment 5: api r-1 healthy\n"
    else:
        assert waited.err.splitlines()[1:] == [
            "error: timed out after 30s: could not look at deployment 5 (the state store failed: "
            "restarting)",
            "hint: wait again with a longer --timeout, or see: nebula deployments",
        ]


def test_wait_gives_a_hung_server_no_more_than_its_timeout(
    nebula: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that takes the connection and never answers: the look is cut at what is left
    of --timeout (a request may otherwise take minutes), then exit 3."""
    now = [0.0]
    fake = types.SimpleNamespace(
        monotonic=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)
    )
    monkeypatch.setattr(waiting, "time", fake)
    with socket.create_server(("127.0.0.1", 0)) as hung:  # listens, never accepts
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        started = time.monotonic()
        waited = Remote(nebula, url).cli("wait 5 --timeout 1s", token="nbl_00000000_" + "x" * 32)
        took = time.monotonic() - started
    assert waited.code == 3, waited.err
    assert waited.err.splitlines()[-2].startswith(
        "error: timed out after 1s: could not look at deployment 5"
    )
    assert took < 30, "cut at what was left of the timeout, not the client's own 300 s"


def test_a_server_is_never_sent_a_relative_path(remote: Remote, shop: Nebula) -> None:
    refused = remote.cli("project add other --repo ./other", as_="olga")
    assert refused.err.splitlines()[0] == (
        "error: ./other is a relative path: give an absolute one"
    )
    assert [p["slug"] for p in shop.json("project list")["projects"]] == ["shop"]


def _run(*argv: str, **env: str | None) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with environment(**env), redirect_stdout(out), redirect_stderr(err):
        try:
            code = main.main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


def test_a_named_context_s_token_goes_to_its_own_server_only(
    remote: Remote, tmp_path: Path
) -> None:
    home = str(tmp_path / "laptop")
    saved = contexts.load({"NEBULA_CONFIG_HOME": home})
    contexts.save(
        contexts.with_saved(saved, contexts.Saved("prod", remote.url, remote.token("carol")))
    )
    elsewhere = f"http://127.0.0.1:{free_port()}"  # nothing listens: were it asked, it fails
    me = _run("--context", "prod", "whoami", "-o", "json", NEBULA_CONFIG_HOME=home,
              NEBULA_SERVER=elsewhere, NEBULA_TOKEN=None)  # fmt: skip
    assert me.code == 0, me.err
    assert me.json["member"] == "carol", "NEBULA_SERVER does not redirect a named context"
    other = _run("--context", "prod", "--server", elsewhere, "status", NEBULA_CONFIG_HOME=home,
                 NEBULA_SERVER=None, NEBULA_TOKEN=None)  # fmt: skip
    assert other.err.splitlines()[0].startswith(
        f"error: cannot reach the Nebula server at {elsewhere}"
    )


def test_a_token_without_a_server_is_warned_about(nebula: Nebula, tmp_path: Path) -> None:
    ran = _run("status", NEBULA_CONFIG_HOME=str(tmp_path / "none"), NEBULA_SERVER=None,
               NEBULA_TOKEN="nbl_00000000_" + "x" * 32)  # fmt: skip
    assert ran.code == 0
    assert ran.err.splitlines() == [
        "warning: NEBULA_TOKEN is set but no server is: this command runs locally, on this "
        "machine's store",
        "hint: set NEBULA_SERVER (or nebula login URL) to act on a server",
    ]
