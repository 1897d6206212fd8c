"""ID tokens are believed only once verified (signature from the issuer's published keys,
``iss``, ``aud``, ``exp``, ``iat``, ``nonce``), and the keys follow the provider's rotation:
real tokens from the test OpenID Provider, and tokens signed by keys of the test's own."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from reconciler.errors import SignInRefusedError
from reconciler.sso import idtokens
from reconciler.sso.providers import REFETCH_FLOOR, Provider
from tests.infra.oidcprovider import (
    CLIENT_ID,
    CLIENT_SECRET,
    KEY_ID,
    OTHER_CLIENT_ID,
    OTHER_CLIENT_SECRET,
    OpenIDProvider,
    private_jwk,
)
from tests.infra.quiet import QuietHandler
from tests.web.signons import id_token


@pytest.fixture
def provider(oidc_provider: OpenIDProvider) -> Iterator[Provider]:
    found = Provider(oidc_provider.issuer, CLIENT_ID, CLIENT_SECRET)
    yield found
    found.close()


def _refusal(
    provider: Provider, token: str, *, nonce: str | None = "n1", now: datetime | None = None
) -> str:
    with pytest.raises(SignInRefusedError) as refused:
        idtokens.verify(provider, token, nonce=nonce, now=now or datetime.now(UTC))
    assert refused.value.message == idtokens.NOT_TRUSTED  # the person reads one plain sentence
    return refused.value.reason  # the log, why


def test_a_real_token_verifies_to_the_person(
    provider: Provider, oidc_provider: OpenIDProvider
) -> None:
    identity = idtokens.verify(
        provider, id_token(oidc_provider, "alice", nonce="n1"), nonce="n1", now=datetime.now(UTC)
    )
    assert identity == idtokens.Identity("alice", "alice@example.com", True, ("platform-admins",))


def test_a_token_for_another_client_is_refused(
    provider: Provider, oidc_provider: OpenIDProvider
) -> None:
    other = id_token(oidc_provider, "alice", nonce="n1",
                     client=(OTHER_CLIENT_ID, OTHER_CLIENT_SECRET))  # fmt: skip
    assert _refusal(provider, other) == "the ID token is for another client, not 'nebula'"


def test_an_expired_token_and_one_from_the_future_are_refused(
    provider: Provider, oidc_provider: OpenIDProvider
) -> None:
    token = id_token(oidc_provider, "bob", nonce="n1")
    assert _refusal(provider, token, now=datetime.now(UTC) + timedelta(hours=2)).startswith(
        "the ID token expired"
    )
    assert "in the future" in _refusal(
        provider, token, now=datetime.now(UTC) - timedelta(minutes=5)
    )
    idtokens.verify(
        provider, token, nonce="n1", now=datetime.now(UTC) + timedelta(seconds=30)
    )  # leeway


def test_a_token_with_another_nonce_is_refused(
    provider: Provider, oidc_provider: OpenIDProvider
) -> None:
    token = id_token(oidc_provider, "bob", nonce="the-nonce-sent")
    assert _refusal(provider, token, nonce="another") == (
        "the ID token's nonce is not the one this sign-in sent"
    )


def _claims(issuer: str, **changes: Any) -> dict[str, Any]:
    stamp = int(datetime.now(UTC).timestamp())
    return {"iss": issuer, "aud": CLIENT_ID, "sub": "alice", "email": "alice@example.com",
            "email_verified": True, "iat": stamp, "exp": stamp + 300, "nonce": "n1",
            **changes}  # fmt: skip


def test_a_token_signed_by_another_key_is_refused(
    provider: Provider, oidc_provider: OpenIDProvider
) -> None:
    _, stranger = private_jwk("x")
    claims = _claims(oidc_provider.issuer)
    # Another key under the provider's key id: the signature does not verify.
    forged = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": KEY_ID})
    assert _refusal(provider, forged) == "the ID token's signature does not verify"
    # A key id the provider does not publish.
    unknown = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "attacker"})
    assert "a key the provider does not publish" in _refusal(provider, unknown)
    # The provider's own key signs, but for another issuer.
    elsewhere = jwt.encode(_claims("https://evil.example"), oidc_provider.signing_key,
                           algorithm="RS256", headers={"kid": KEY_ID})  # fmt: skip
    assert "another issuer" in _refusal(provider, elsewhere)
    # No signature at all, or an HMAC keyed with something public.
    unsigned = jwt.encode(claims, None, algorithm="none")
    assert "'none', not allowed" in _refusal(provider, unsigned)
    hmac = jwt.encode(claims, CLIENT_SECRET + "-" * 20, algorithm="HS256", headers={"kid": KEY_ID})
    assert "'HS256', not allowed" in _refusal(provider, hmac)
    assert _refusal(provider, "not.a.jwt") == "the ID token is not a signed JWT"


# -- key rotation, against a provider of the test's own that counts its fetches ---------------


def _public(jwk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in jwk.items() if k not in {"d", "p", "q", "dp", "dq", "qi"}}


class _Keys:
    def __init__(self) -> None:
        self.published: list[dict[str, Any]] = []
        self.fetches = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self) -> type[QuietHandler]:
        keys = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": keys.issuer, "authorization_endpoint": f"{keys.issuer}/a",
                            "token_endpoint": f"{keys.issuer}/t",
                            "jwks_uri": f"{keys.issuer}/jwks"}  # fmt: skip
                else:
                    keys.fetches += 1
                    body = {"keys": [_public(key) for key in keys.published]}
                self.answer(200, json.dumps(body).encode(), [("Content-Type", "application/json")])

        return Handler

    def new_key(self, kid: str) -> rsa.RSAPrivateKey:
        jwk, key = private_jwk(kid)
        self.published.append(jwk)
        return key


def test_keys_are_fetched_once_and_again_only_for_a_key_id_not_seen() -> None:
    keys = _Keys()
    old = keys.new_key("k1")
    ticks = [1000.0]
    provider = Provider(keys.issuer, CLIENT_ID, monotonic=lambda: ticks[0])
    try:

        def signed(key: rsa.RSAPrivateKey, kid: str) -> str:
            return jwt.encode(_claims(keys.issuer), key, algorithm="RS256", headers={"kid": kid})

        for _ in range(3):
            idtokens.verify(provider, signed(old, "k1"), nonce="n1", now=datetime.now(UTC))
        assert keys.fetches == 1  # kept

        new = keys.new_key("k2")  # the provider rotates: tokens name the new key
        ticks[0] += REFETCH_FLOOR
        idtokens.verify(provider, signed(new, "k2"), nonce="n1", now=datetime.now(UTC))
        assert keys.fetches == 2  # fetched again, once
        idtokens.verify(provider, signed(old, "k1"), nonce="n1", now=datetime.now(UTC))
        assert keys.fetches == 2

        _, stranger = private_jwk("k9")
        for _ in range(5):  # made-up key ids do not make Nebula hammer the provider
            _refusal(provider, signed(stranger, "k9"))
        assert keys.fetches == 2  # the keys were fetched less than REFETCH_FLOOR ago
        ticks[0] += REFETCH_FLOOR
        for _ in range(5):
            _refusal(provider, signed(stranger, "k9"))
        assert keys.fetches == 3
    finally:
        provider.close()
        keys.server.shutdown()
        keys.server.server_close()
