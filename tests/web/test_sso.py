"""Single sign-on on the status page, against a real OpenID Provider (panva's oidc-provider):
the authorization code flow with PKCE, state and nonce; who the person is among the members;
admin by group; the session cookie; and what is refused (behaviour.md "Single sign-on")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select

from reconciler.admin import auditing
from reconciler.store import schema
from tests.infra.oidcprovider import CLIENT_SECRET, OpenIDProvider
from tests.plugins.people import token as api_token
from tests.web.signons import SignOn, serving


@pytest.fixture
def sso(tmp_path: Path, oidc_provider: OpenIDProvider) -> Iterator[SignOn]:
    with serving(tmp_path, oidc_provider, page_auth="sso") as signon:
        yield signon


def _refusals(signon: SignOn) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in signon.log_lines()]
    return [line for line in lines if line.get("event") == "sign-in refused"]


def test_a_page_sends_a_stranger_to_sign_in_and_back_where_they_were(sso: SignOn) -> None:
    with sso.browser() as browser:
        first = browser.get("/deployments?state=healthy")
        assert first.status_code == 303
        assert first.headers["location"] == "/login?next=/deployments%3Fstate%3Dhealthy"
        started = browser.get(first.headers["location"])
        assert started.status_code == 303
        sent = urlsplit(started.headers["location"])
        query = parse_qs(sent.query)
        assert f"{sent.scheme}://{sent.netloc}" == sso.provider.issuer
        assert query["response_type"] == ["code"]
        assert query["code_challenge_method"] == ["S256"]
        assert query["redirect_uri"] == [f"{sso.url}/auth/callback"]
        assert len(query["state"][0]) >= 40 and len(query["nonce"][0]) >= 40
        assert "groups" in query["scope"][0].split()
        cookie = started.headers["set-cookie"]
        assert cookie.startswith("nebula_signin=")
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie
        assert "Secure" not in cookie  # the public URL is plain http on this machine

        back = sso.provider.sign_in(browser, started.headers["location"], "bob")
        done = browser.get(back)
        assert done.status_code == 303
        assert done.headers["location"] == "/deployments?state=healthy"
        session = next(c for c in done.headers.get_list("set-cookie") if "nebula_session=" in c)
        assert "HttpOnly" in session and "SameSite=lax" in session and "Max-Age=43200" in session

        page = browser.get("/deployments?state=healthy")
        assert page.status_code == 200
        assert 'Signed in as <strong id="signed-in-as">bob</strong> (member' in page.text
        assert "form-action 'self'" in page.headers["content-security-policy"]
        assert browser.get("/api/v1/status").status_code == 200  # the page's JSON too


def test_the_page_and_its_json_need_a_session_or_a_token(sso: SignOn) -> None:
    with httpx.Client(base_url=sso.url) as anyone:
        refused = anyone.get("/api/v1/status")
        assert refused.status_code == 401
        assert refused.json()["error"] == "this server's pages need a session: sign in first"
        assert anyone.get("/healthz").status_code == 200
        assert anyone.get("/api/v1/sso").json() == {
            "enabled": True, "issuer": sso.provider.issuer, "device": True,
        }  # fmt: skip
    with sso.nebula.ctx.db.transaction() as session:
        token = api_token(session, sso.nebula.clock, "bob")
    answer = httpx.get(f"{sso.url}/api/v1/status", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200


def test_a_group_makes_alice_an_admin_for_her_session_only(sso: SignOn) -> None:
    with sso.browser() as browser:
        assert sso.sign_in(browser, "alice").status_code == 303
        page = browser.get("/")
        assert '<strong id="signed-in-as">alice</strong> (admin' in page.text
        cookie = browser.cookies["nebula_session"]
    me = httpx.get(f"{sso.url}/api/v1/whoami", headers={"Authorization": f"Bearer {cookie}"})
    assert me.json()["role"] == "admin"
    assert me.json()["token"]["via"] == "sso"
    with sso.nebula.ctx.db.reading() as session:
        alice = session.scalars(select(schema.Member).where(schema.Member.name == "alice")).one()
        assert alice.role == "member"  # her role itself is unchanged


def test_someone_nebula_does_not_know_is_refused_plainly(sso: SignOn) -> None:
    with sso.browser() as browser:
        answer = sso.sign_in(browser, "dave")
        assert answer.status_code == 403
        assert "no member for dave@example.com: ask an admin to add you" in answer.text
        assert "nebula_session" not in browser.cookies
    assert [line["reason"] for line in _refusals(sso)] == [
        "no member for dave@example.com: ask an admin to add you"
    ]


def test_a_default_role_adds_a_stranger_as_a_member_and_says_so_in_the_audit(
    tmp_path: Path, oidc_provider: OpenIDProvider
) -> None:
    with serving(tmp_path, oidc_provider, oidc_default_role="viewer") as signon:
        with signon.browser() as browser:
            assert signon.sign_in(browser, "dave").status_code == 303
            assert '<strong id="signed-in-as">dave</strong> (viewer' in browser.get("/").text
        with signon.nebula.ctx.db.reading() as session:
            dave = session.scalars(select(schema.Member).where(schema.Member.name == "dave")).one()
            assert (dave.role, dave.email, dave.oidc_subject) == (
                "viewer", "dave@example.com", "dave",
            )  # fmt: skip
            entries = [e for e in auditing.listing(session) if e.target == "dave"]
        assert [(e.actor, e.action) for e in entries] == [("dave", "member.add")]
        assert "NEBULA_OIDC_DEFAULT_ROLE" in entries[0].message


def test_an_address_the_provider_did_not_verify_is_refused(sso: SignOn) -> None:
    with sso.browser() as browser:
        answer = sso.sign_in(browser, "carol")
    assert answer.status_code == 401
    assert "has not verified the e-mail address carol@example.com" in answer.text
    assert len(_refusals(sso)) == 1


def test_a_member_is_found_by_subject_when_the_address_is_not_theirs(sso: SignOn) -> None:
    with sso.nebula.ctx.db.transaction() as session:
        members = {m.name: m for m in session.scalars(select(schema.Member))}
        members["bob"].email = "robert@example.com"
        members["bob"].oidc_subject = "bob"
    with sso.browser() as browser:
        assert sso.sign_in(browser, "bob").status_code == 303
        assert '<strong id="signed-in-as">bob</strong>' in browser.get("/").text


def test_a_state_that_is_not_the_sign_ins_and_a_replayed_answer_are_refused(
    sso: SignOn,
) -> None:
    with sso.browser() as browser:
        started = browser.get("/login")
        back = sso.provider.sign_in(browser, started.headers["location"], "bob")
        forged = back.replace("state=", "state=x")
        refused = browser.get(forged)
        assert refused.status_code == 401
        assert "does not belong to this sign-in" in refused.text
        replayed = browser.get(back)  # the sign-in was ended by the refusal
        assert replayed.status_code == 409
        assert "This sign-in is over" in replayed.text
        assert "nebula_session" not in browser.cookies

    with sso.browser() as browser:
        done = sso.sign_in(browser, "bob")
        assert done.status_code == 303
        again = browser.get(str(done.request.url))  # the same answer, once more
        assert again.status_code == 409
    with sso.browser() as elsewhere:  # another browser, without the sign-in's cookie
        started = elsewhere.get("/login")
        back = sso.provider.sign_in(elsewhere, started.headers["location"], "bob")
        elsewhere.cookies.delete("nebula_signin")
        assert elsewhere.get(back).status_code == 409


def test_next_takes_only_a_path_of_this_server(sso: SignOn) -> None:
    for outside in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "evil"):
        with sso.browser() as browser:
            done = sso.sign_in(browser, "bob", next_path=outside)
            assert done.headers["location"] == "/", outside


def test_signing_out_ends_the_session_everywhere(sso: SignOn) -> None:
    with sso.browser() as browser:
        sso.sign_in(browser, "bob")
        cookie = browser.cookies["nebula_session"]
        out = browser.post("/logout")
        assert out.status_code == 303 and out.headers["location"] == "/signed-out"
        assert 'nebula_session=""' in out.headers["set-cookie"]
        assert "Sign in again" in browser.get("/signed-out").text
    copied = httpx.get(f"{sso.url}/api/v1/status", cookies={"nebula_session": cookie})
    assert copied.status_code == 401


def test_an_expired_session_sends_the_person_to_sign_in_again(sso: SignOn) -> None:
    with sso.browser() as browser:
        sso.sign_in(browser, "bob")
        sso.nebula.clock.advance(hours=12, seconds=1)
        assert browser.get("/").headers["location"] == "/login?next=/"
        answer = browser.get("/api/v1/whoami", headers={
            "Authorization": f"Bearer {browser.cookies['nebula_session']}"})  # fmt: skip
        assert answer.status_code == 401
        assert answer.json()["error"] == "session expired: sign in again"


def test_the_provider_down_fails_sign_in_clearly_and_sessions_keep_working(
    sso: SignOn,
) -> None:
    with sso.browser() as browser:
        sso.sign_in(browser, "bob")
        provider = sso.nebula.ctx.signon
        assert provider is not None
        sso.nebula.ctx.signon = None
        sso.nebula.ctx.settings = sso.nebula.ctx.settings.with_(oidc_issuer="http://127.0.0.1:9")
        try:
            with sso.browser() as another:
                down = another.get("/login", headers={"Accept": "text/html"})
                assert down.status_code == 503
                assert "the sign-in provider at http://127.0.0.1:9 cannot be reached" in down.text
                assert "connection refused" in down.text
            assert browser.get("/").status_code == 200  # the session needs no provider
        finally:
            assert sso.nebula.ctx.signon is not None
            sso.nebula.ctx.signon.close()
            sso.nebula.ctx.signon = provider


def test_no_code_token_or_secret_in_the_logs_the_page_or_metrics(sso: SignOn) -> None:
    with sso.browser() as browser:
        started = browser.get("/login")
        back = sso.provider.sign_in(browser, started.headers["location"], "alice")
        browser.get(back)
        session_cookie = browser.cookies["nebula_session"]
        page = browser.get("/").text
        metrics = browser.get("/metrics").text
    code = parse_qs(urlsplit(back).query)["code"][0]
    state = parse_qs(urlsplit(back).query)["state"][0]
    # The server's lines (the test's own browser logs its requests through httpx too).
    browsing = (f"{sso.provider.issuer}/auth", f"{sso.provider.issuer}/interaction", sso.url)
    logged = "\n".join(
        line
        for line in sso.log_lines()
        if not (json.loads(line)["logger"] == "httpx" and any(b in line for b in browsing))
    )
    assert "/auth/callback" in logged  # the access log saw it, scrubbed
    for secret in (code, state, session_cookie, CLIENT_SECRET, "eyJ"):
        assert secret not in logged
        assert secret not in page
        assert secret not in metrics


def test_a_device_signs_in_through_the_api_once_approved(sso: SignOn) -> None:
    with httpx.Client(base_url=sso.url) as cli:
        started = cli.post("/api/v1/sso/device")
        assert started.status_code == 200, started.text
        device = started.json()
        assert (
            device["interval"] == 1 and device["user_code"] in device["verification_uri_complete"]
        )
        poll = {"handle": device["handle"]}
        assert cli.post("/api/v1/sso/token", json=poll).json()["status"] == "pending"
        with httpx.Client() as browser:
            sso.provider.approve_device(browser, device["verification_uri_complete"], "alice")
        done = cli.post("/api/v1/sso/token", json=poll).json()
        for _ in range(30):  # every second at most: the provider's interval
            if done["status"] == "signed-in":
                break
            assert done["status"] == "pending" and done["interval"] == 1
            time.sleep(0.2)
            done = cli.post("/api/v1/sso/token", json=poll).json()
        assert (done["status"], done["member"], done["role"]) == ("signed-in", "alice", "admin")
        assert done["admin_for_session"] is True
        me = cli.get("/api/v1/whoami", headers={"Authorization": f"Bearer {done['token']}"})
        assert me.json()["token"]["via"] == "sso"
        again = cli.post("/api/v1/sso/token", json=poll)
        assert again.status_code == 409  # taken once
        refused = cli.post(
            "/api/v1/sso/authorize", json={"redirect_uri": "https://evil.example/cb"}
        )
        assert refused.status_code == 422
