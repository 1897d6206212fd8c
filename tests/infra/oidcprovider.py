"""A real OpenID Provider on a free loopback port: panva's oidc-provider (the certified Node.js
implementation) run by ``node`` from ``tests/node/oidc-provider.mjs``, with Nebula's client,
another client (whose tokens Nebula must refuse) and the users below.

People sign in on the provider's development login form (any password); ``sign_in`` and
``approve_device`` fill it in over HTTP, as a person's browser would, for the tests that are
not about the browser (the browser tests click through the same forms in Chromium).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.infra.processes import Process, StartError, free_port

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
SCRIPT = NODE_DIR / "oidc-provider.mjs"
CLIENT_ID = "nebula"
CLIENT_SECRET = "nebula-test-client-secret-8d1f0c2a9b7e"
OTHER_CLIENT_ID = "other-app"
OTHER_CLIENT_SECRET = "other-app-secret-5c3e9a71"
KEY_ID = "provider-key-1"
ADMIN_GROUP = "platform-admins"

# alice is an admin by group, bob a developer, carol's address is not verified, dave is nobody
# Nebula knows.
USERS: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@example.com", "email_verified": True, "groups": [ADMIN_GROUP]},
    "bob": {"email": "bob@example.com", "email_verified": True, "groups": ["developers"]},
    "carol": {"email": "carol@example.com", "email_verified": False, "groups": []},
    "dave": {"email": "dave@example.com", "email_verified": True, "groups": ["developers"]},
}

_LOOPBACK_REDIRECTS = ["http://127.0.0.1/auth/callback", "http://127.0.0.1/callback"]
_GRANTS = ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code"]


def private_jwk(kid: str) -> tuple[dict[str, Any], rsa.RSAPrivateKey]:
    """A new RSA signing key as a private JWK (for the provider) and as a key (for tests that
    sign tokens of their own with it)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk.update(kid=kid, use="sig", alg="RS256")
    return jwk, key


class OpenIDProvider:
    def __init__(self, *, device_flow: bool = True) -> None:
        node = shutil.which("node")
        if node is None:
            raise StartError("node is not installed (Node.js 20 or later)")
        if not (NODE_DIR / "node_modules" / "oidc-provider").is_dir():
            raise StartError("oidc-provider is not installed: npm ci --prefix tests/node")
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.device_flow = device_flow
        self.workdir = Path(tempfile.mkdtemp(prefix="nebula-oidc-"))
        jwk, self.signing_key = private_jwk(KEY_ID)
        config = {
            "port": self.port,
            "device_flow": device_flow,
            "device_interval": 1,  # a test's device polls every second, not every five
            "jwks": {"keys": [jwk]},
            "users": USERS,
            "clients": [
                _client(CLIENT_ID, CLIENT_SECRET, device_flow),
                _client(OTHER_CLIENT_ID, OTHER_CLIENT_SECRET, device_flow),
            ],
        }
        config_path = self.workdir / "config.json"
        config_path.write_text(json.dumps(config), encoding="utf-8")
        self.log_path = self.workdir / "provider.log"
        self.process = Process(
            "oidc-provider", [node, str(SCRIPT), str(config_path)], self.log_path
        )

    def start(self) -> None:
        self.process.start()
        self.process.wait_ready(self._ready, timeout=30)

    def _ready(self) -> bool:
        try:
            answer = httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2)
        except httpx.TransportError:
            return False
        return answer.status_code == 200

    def close(self) -> None:
        self.process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    # -- a person at the provider, over HTTP ---------------------------------------------------

    def sign_in(self, browser: httpx.Client, url: str, user: str) -> str:
        """Follows ``url`` (an authorization request) through the provider's login form as
        ``user``; returns the URL the provider then redirects to (not followed: it is the
        relying party's, with ``code`` and ``state``)."""
        return self._walk(browser, url, user)

    def approve_device(self, browser: httpx.Client, url: str, user: str) -> None:
        """Opens the verification URL (with its code), confirms the device and signs in."""
        final = self._walk(browser, url, user)
        assert final == "", f"the device approval ended away from the provider: {final}"

    def _walk(self, browser: httpx.Client, url: str, user: str) -> str:
        """Follows redirects and submits the provider's forms (the login form as ``user``, a
        device's confirmation, the page that posts itself) until a redirect leaves the
        provider (its URL is returned) or the device flow's success page ("")."""
        for _ in range(20):
            if not url.startswith(self.issuer):
                return url
            answer = browser.get(url)
            while True:
                if answer.is_redirect:
                    url = urljoin(url, answer.headers["location"])
                    break
                if "Signed in" in answer.text:
                    return ""
                forms = _forms(answer.text)
                form = forms.get("op.deviceConfirmForm") or next(iter(forms.values()), None)
                if form is None:
                    raise AssertionError(f"provider page {answer.status_code}: {answer.text}")
                if "login" in form.fields:
                    form.fields.update(login=user, password="any password")
                answer = browser.post(urljoin(url, form.action), data=form.fields)
        raise AssertionError("the provider kept redirecting")


def _client(client_id: str, secret: str, device_flow: bool) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "client_secret": secret,
        "application_type": "native",  # loopback redirects on any port (RFC 8252)
        "redirect_uris": _LOOPBACK_REDIRECTS,
        "grant_types": _GRANTS if device_flow else _GRANTS[:1],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    }


class _Form:
    def __init__(self, action: str = "", form_id: str = "") -> None:
        self.action = action
        self.id = form_id
        self.fields: dict[str, str] = {}


class _Forms(HTMLParser):
    """Each form of a page by id (or action), with its named inputs' values."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, _Form] = {}
        self._current: _Form | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given: Mapping[str, str | None] = dict(attrs)
        if tag == "form":
            form = _Form(given.get("action") or "", given.get("id") or "")
            self.forms[form.id or form.action] = form
            self._current = form
        elif tag == "input" and given.get("name"):
            owner = self.forms.get(given.get("form") or "") or self._current
            if owner is not None:
                owner.fields[str(given["name"])] = given.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def _forms(html: str) -> dict[str, _Form]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
