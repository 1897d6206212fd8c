"""What Nebula sends a person to the provider with (an authorization request: the code flow
with PKCE, RFC 7636, a ``state`` and a ``nonce``), and the secrets that make one."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import urlencode

from reconciler.sso.providers import Metadata

WANTED_SCOPES = ("openid", "email", "profile", "groups")


def secret() -> str:
    """An unguessable value: a state, a nonce, a PKCE verifier, a handle (256 bits)."""
    return secrets.token_urlsafe(32)


def challenge(verifier: str) -> str:
    """PKCE's S256 challenge of ``verifier``."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def scope(metadata: Metadata) -> str:
    """The scopes Nebula asks for: ``groups`` only where the provider lists it (or lists
    nothing), since some providers refuse a scope they do not know."""
    offered = set(metadata.scopes_supported)
    return " ".join(s for s in WANTED_SCOPES if not offered or s in offered or s == "openid")


def url(
    metadata: Metadata, client_id: str, redirect_uri: str, state: str, nonce: str, verifier: str
) -> str:
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": scope(metadata),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    separator = "&" if "?" in metadata.authorization_endpoint else "?"
    return f"{metadata.authorization_endpoint}{separator}{query}"
