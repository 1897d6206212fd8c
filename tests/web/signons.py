"""Nebula signing people in with the test OpenID Provider: the app on a loopback port (its
public URL), members that match the provider's users, and a person's browser over HTTP."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from reconciler import logs
from reconciler.admin import members
from reconciler.clock import FakeClock
from reconciler.core.states import Role
from reconciler.sso import authorizing
from tests.infra.oidcprovider import ADMIN_GROUP, CLIENT_ID, CLIENT_SECRET, OpenIDProvider
from tests.plugins.nebula import Nebula, nebula_with
from tests.web.world import ThreadedServer


class RealTimeClock(FakeClock):
    """The real time (the provider's tokens carry real times, a device polls in real time),
    moved ahead when a test says so (a session that expires)."""

    def __init__(self) -> None:
        super().__init__()
        self._ahead = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._ahead

    def advance(self, seconds: float = 0, **delta: float) -> datetime:
        self._ahead += timedelta(seconds=seconds, **delta)
        return self.now()


@dataclass
class SignOn:
    nebula: Nebula
    provider: OpenIDProvider
    url: str  # the app's
    log: io.StringIO  # every line the server logged (scrubbed, as written)

    def browser(self) -> httpx.Client:
        """A person's browser: cookies kept, redirects seen one by one."""
        return httpx.Client(base_url=self.url, timeout=20, follow_redirects=False)

    def sign_in(self, browser: httpx.Client, user: str, next_path: str = "/") -> httpx.Response:
        """/login, the provider's form as ``user``, and Nebula's answer to the callback."""
        started = browser.get("/login", params={"next": next_path})
        assert started.status_code == 303, started.text
        back = self.provider.sign_in(browser, started.headers["location"], user)
        assert back.startswith(f"{self.url}/auth/callback?"), back
        return browser.get(back)

    def log_lines(self) -> list[str]:
        return self.log.getvalue().splitlines()


def settings(provider: OpenIDProvider, **overrides: Any) -> dict[str, Any]:
    return {
        "oidc_issuer": provider.issuer,
        "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": CLIENT_SECRET,
        "oidc_admin_groups": f"{ADMIN_GROUP},other-admins",
        **overrides,
    }


def add_people(nebula: Nebula) -> None:
    """bob and alice are members (alice is an admin only by her provider group)."""
    with nebula.ctx.db.transaction() as session:
        for name in ("alice", "bob"):
            identity = members.Identity(email=f"{name}@example.com")
            members.add(session, nebula.ctx.clock, name, Role.MEMBER, identity)


@contextmanager
def serving(tmp_path: Path, provider: OpenIDProvider, **overrides: Any) -> Iterator[SignOn]:
    """Nebula with single sign-on on ``provider``, on a ``RealTimeClock``, its logs written as
    ``nebula serve`` writes them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    for nebula in nebula_with(tmp_path, **settings(provider, **overrides)):
        logs.configure(stream=out, json_lines=True, secrets=[CLIENT_SECRET])
        clock = RealTimeClock()
        nebula.clock = nebula.ctx.clock = clock
        add_people(nebula)
        try:
            with ThreadedServer(nebula.ctx) as server:
                nebula.ctx.settings = nebula.ctx.settings.with_(public_url=server.url)
                yield SignOn(nebula, provider, server.url, out)
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)
            if nebula.ctx.signon is not None:
                nebula.ctx.signon.close()


def id_token(
    provider: OpenIDProvider,
    user: str,
    *,
    nonce: str,
    client: tuple[str, str] = (CLIENT_ID, CLIENT_SECRET),
) -> str:
    """A real ID token from ``provider`` for ``client``, as ``user`` signs in with ``nonce``."""
    metadata = httpx.get(f"{provider.issuer}/.well-known/openid-configuration").json()
    verifier = authorizing.secret()
    redirect = "http://127.0.0.1:5999/auth/callback"
    request = httpx.URL(
        metadata["authorization_endpoint"],
        params={
            "client_id": client[0], "response_type": "code", "scope": "openid email groups",
            "redirect_uri": redirect, "state": "s", "nonce": nonce,
            "code_challenge": authorizing.challenge(verifier), "code_challenge_method": "S256",
        },
    )  # fmt: skip
    with httpx.Client() as browser:
        back = httpx.URL(provider.sign_in(browser, str(request), user))
    answer = httpx.post(
        metadata["token_endpoint"],
        data={"grant_type": "authorization_code", "code": back.params["code"],
              "redirect_uri": redirect, "code_verifier": verifier},
        auth=client,
    )  # fmt: skip
    token: str = answer.json()["id_token"]
    return token
