"""The status page's single sign-on in headless Chromium against the real OpenID Provider: a
page sends the browser to the provider, back to where it was once signed in, with a cookie no
script can read; the header says who is signed in; signing out (the one form, allowed by the
Content-Security-Policy) ends it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler import settings
from reconciler.errors import ConfigurationError
from reconciler.web import sessions
from tests.infra.oidcprovider import OpenIDProvider
from tests.web.signons import serving


@pytest.mark.browser
def test_signing_in_to_the_page_and_out_again_in_chromium(
    tmp_path: Path, oidc_provider: OpenIDProvider, browser: Any
) -> None:
    with serving(tmp_path, oidc_provider, page_auth="sso") as sso:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{sso.url}/approvals")
            assert page.url.startswith(f"{sso.provider.issuer}/interaction/")
            page.fill("input[name=login]", "alice")
            page.fill("input[name=password]", "any password")
            page.click("button.login-submit")
            page.wait_for_url(f"{sso.url}/approvals")
            assert page.text_content("#signed-in-as") == "alice"
            assert "(admin, until" in (page.text_content("#signed-in") or "")
            cookie = next(c for c in context.cookies() if c["name"] == sessions.SESSION_COOKIE)
            assert (cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (
                True,
                "Lax",
                False,
            )
            assert "nebula_session" not in page.evaluate("document.cookie")

            page.click("text=Sign out")
            page.wait_for_url(f"{sso.url}/signed-out")
            assert page.text_content("h1") == "Signed out"
            assert [c for c in context.cookies() if c["name"] == sessions.SESSION_COOKIE] == []
        finally:
            context.close()


@pytest.mark.parametrize(
    ("public_url", "secure"),
    [
        ("http://127.0.0.1:8080", False),
        ("http://localhost:8080", False),
        ("https://nebula.example.com", True),
        ("http://nebula.internal:8080", True),  # plain http elsewhere: the browser keeps it off
    ],
)
def test_the_cookie_is_secure_unless_the_page_is_plain_http_on_this_machine(
    public_url: str, secure: bool
) -> None:
    assert sessions.secure(public_url) is secure


def test_a_page_behind_single_sign_on_needs_single_sign_on_set_up() -> None:
    with pytest.raises(ConfigurationError) as refused:
        settings.load({"NEBULA_PAGE_AUTH": "sso"})
    assert refused.value.message == (
        "NEBULA_PAGE_AUTH=sso needs single sign-on: NEBULA_OIDC_ISSUER and "
        "NEBULA_OIDC_CLIENT_ID are not both set"
    )
    loaded = settings.load({"NEBULA_PAGE_AUTH": "sso", "NEBULA_OIDC_ISSUER": "https://id.example",
                            "NEBULA_OIDC_CLIENT_ID": "nebula", "NEBULA_SESSION_TTL": "8h"})  # fmt: skip
    assert (loaded.page_auth, loaded.session_ttl.total_seconds()) == ("sso", 8 * 3600)
