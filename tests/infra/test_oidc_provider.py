"""The test OpenID Provider (panva's oidc-provider under Node.js) signs people in and issues
the ID tokens Nebula's single sign-on is tested against: with the users' verified claims,
the nonce asked for, and the device authorization grant when it is on."""

from __future__ import annotations

import base64
import hashlib
import secrets

import httpx
import jwt

from tests.infra.oidcprovider import (
    ADMIN_GROUP,
    CLIENT_ID,
    CLIENT_SECRET,
    OpenIDProvider,
)

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def _metadata(provider: OpenIDProvider) -> dict[str, str]:
    answer = httpx.get(f"{provider.issuer}/.well-known/openid-configuration")
    assert answer.status_code == 200
    metadata: dict[str, str] = answer.json()
    return metadata


def _verified(provider: OpenIDProvider, id_token: str) -> dict[str, object]:
    keys = jwt.PyJWKClient(_metadata(provider)["jwks_uri"])
    key = keys.get_signing_key_from_jwt(id_token)
    claims: dict[str, object] = jwt.decode(
        id_token, key, algorithms=["RS256"], audience=CLIENT_ID, issuer=provider.issuer
    )
    return claims


def test_a_person_signs_in_with_the_code_flow_and_pkce(oidc_provider: OpenIDProvider) -> None:
    metadata = _metadata(oidc_provider)
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    redirect = "http://127.0.0.1:5999/auth/callback"
    request = httpx.URL(
        metadata["authorization_endpoint"],
        params={
            "client_id": CLIENT_ID,
            "response_type": "code",
            "scope": "openid email groups",
            "redirect_uri": redirect,
            "state": "the-state",
            "nonce": "the-nonce",
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
        },
    )
    with httpx.Client() as browser:
        back = httpx.URL(oidc_provider.sign_in(browser, str(request), "alice"))
    assert str(back).startswith(redirect)
    assert back.params["state"] == "the-state"
    answer = httpx.post(
        metadata["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": back.params["code"],
            "redirect_uri": redirect,
            "code_verifier": verifier,
        },
        auth=(CLIENT_ID, CLIENT_SECRET),
    )
    assert answer.status_code == 200, answer.text
    claims = _verified(oidc_provider, answer.json()["id_token"])
    assert claims["sub"] == "alice"
    assert claims["email"] == "alice@example.com"
    assert claims["email_verified"] is True
    assert claims["groups"] == [ADMIN_GROUP]
    assert claims["nonce"] == "the-nonce"


def test_a_device_is_approved_in_the_browser(oidc_provider: OpenIDProvider) -> None:
    metadata = _metadata(oidc_provider)
    started = httpx.post(
        metadata["device_authorization_endpoint"],
        data={"scope": "openid email groups"},
        auth=(CLIENT_ID, CLIENT_SECRET),
    ).json()
    assert started["interval"] == 1
    poll = {"grant_type": DEVICE_GRANT, "device_code": started["device_code"]}
    pending = httpx.post(metadata["token_endpoint"], data=poll, auth=(CLIENT_ID, CLIENT_SECRET))
    assert pending.json()["error"] == "authorization_pending"
    with httpx.Client() as browser:
        oidc_provider.approve_device(browser, started["verification_uri_complete"], "bob")
    answer = httpx.post(metadata["token_endpoint"], data=poll, auth=(CLIENT_ID, CLIENT_SECRET))
    assert answer.status_code == 200, answer.text
    assert _verified(oidc_provider, answer.json()["id_token"])["email"] == "bob@example.com"


def test_without_the_device_flow_no_device_endpoint_is_advertised(
    oidc_provider_without_device: OpenIDProvider,
) -> None:
    assert "device_authorization_endpoint" not in _metadata(oidc_provider_without_device)
