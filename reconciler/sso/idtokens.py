"""ID tokens: verified before anything in them is believed (OpenID Connect Core 3.1.3.7).

The signature, with the provider's published key the token names (an asymmetric algorithm
only: never ``none``, never an HMAC keyed with something public); ``iss`` is the issuer;
``aud`` holds Nebula's client id (and ``azp`` names it when there are several audiences);
``exp`` is ahead and ``iat`` not ahead of Nebula's clock (a minute's leeway for clocks that
differ); ``nonce`` is the one this sign-in sent. PyJWT checks the signature, issuer and
audience; the times are checked here against the clock Nebula is given, so a test can move it.

Every refusal is a ``SignInRefusedError``: one plain sentence for the person, and the exact
reason for the server's log (never the token).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import jwt

from reconciler.errors import SignInRefusedError
from reconciler.sso.providers import Provider

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
              "EdDSA")  # fmt: skip
LEEWAY = timedelta(seconds=60)
NOT_TRUSTED = "Sign-in refused: the answer from the sign-in provider could not be verified"
NOT_TRUSTED_HINT = "sign in again; if it keeps failing, an admin can read why in Nebula's log"


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in, from a verified ID token."""

    subject: str
    email: str | None
    email_verified: bool
    groups: tuple[str, ...]


def _refused(reason: str) -> SignInRefusedError:
    return SignInRefusedError(NOT_TRUSTED, reason, hint=NOT_TRUSTED_HINT)


def verify(provider: Provider, token: str, *, nonce: str | None, now: datetime) -> Identity:
    """The identity in ``token``; ``nonce`` None for the device grant, which sends none (its
    device code, which only this server holds, ties the answer to the request)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        raise _refused("the ID token is not a signed JWT") from None
    algorithm = header.get("alg")
    if algorithm not in ALGORITHMS:
        raise _refused(f"the ID token is signed with {str(algorithm)[:20]!r}, not allowed")
    kid = header.get("kid")
    key = provider.key(kid if isinstance(kid, str) else None)
    if key is None:
        raise _refused(f"the ID token is signed by a key the provider does not publish "
                       f"(kid {str(kid)[:60]!r})")  # fmt: skip
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=[algorithm],
            audience=provider.client_id,
            issuer=provider.issuer,
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False,
                     "require": ["iss", "aud", "sub", "exp", "iat"]},
        )  # fmt: skip
    except jwt.InvalidSignatureError:
        raise _refused("the ID token's signature does not verify") from None
    except jwt.InvalidAudienceError:
        raise _refused(f"the ID token is for another client, not {provider.client_id!r}") from None
    except jwt.InvalidIssuerError:
        raise _refused(
            f"the ID token was issued by another issuer, not {provider.issuer}"
        ) from None
    except jwt.InvalidTokenError as exc:
        raise _refused(f"the ID token is not valid: {str(exc)[:200]}") from None
    _check_times(claims, now)
    _check_party(claims, provider.client_id)
    _check_nonce(claims, nonce)
    return _identity(claims)


def _check_times(claims: dict[str, Any], now: datetime) -> None:
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or not isinstance(iat, int | float):
        raise _refused("the ID token's exp or iat is not a number")
    stamp = now.timestamp()
    leeway = LEEWAY.total_seconds()
    if exp + leeway <= stamp:
        raise _refused(f"the ID token expired {int(stamp - exp)} s ago")
    if iat - leeway > stamp:
        raise _refused(f"the ID token was issued {int(iat - stamp)} s in the future")


def _check_party(claims: dict[str, Any], client_id: str) -> None:
    audience = claims.get("aud")
    several = isinstance(audience, list) and len(audience) > 1
    azp = claims.get("azp")
    if (several or azp is not None) and azp != client_id:
        raise _refused(f"the ID token's authorized party is {str(azp)[:100]!r}, not Nebula")


def _check_nonce(claims: dict[str, Any], nonce: str | None) -> None:
    if nonce is None:
        return
    given = claims.get("nonce")
    if not isinstance(given, str) or not hmac.compare_digest(given, nonce):
        raise _refused("the ID token's nonce is not the one this sign-in sent")


def _identity(claims: dict[str, Any]) -> Identity:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise _refused("the ID token has no subject")
    email = claims.get("email")
    groups = claims.get("groups")
    return Identity(
        subject=subject,
        email=email if isinstance(email, str) and email else None,
        email_verified=claims.get("email_verified") is True,
        groups=tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else (),
    )
