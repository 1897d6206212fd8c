"""The OpenID Provider as Nebula's client sees it: its metadata (OpenID Connect Discovery), its
signing keys (JWKS), and the two requests Nebula makes of it (the token endpoint, the device
authorization endpoint), with our errors for everything that can go wrong on the way.

Nothing is fetched before someone signs in, and nothing else of Nebula waits on the provider:
a provider that is down fails sign-ins with a message naming it, while sessions already given
(Nebula's own tokens) never ask it anything. The metadata is kept for an hour; the keys until
a token names one that is not among them, which fetches them again (the provider rotated its
keys) at most once every ``REFETCH_FLOOR``, so tokens with made-up key ids cannot make Nebula
hammer the provider.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from reconciler.errors import PermanentError, UnansweredError, UnreachableError

TIMEOUT = httpx.Timeout(10.0, connect=5.0)
METADATA_TTL = 3600.0  # seconds
REFETCH_FLOOR = 10.0  # seconds between two fetches of the keys for an unknown key id
DOWN_HINT = "try again in a while; people already signed in (and API tokens) are not affected"


@dataclass(frozen=True)
class Metadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    device_authorization_endpoint: str | None
    scopes_supported: tuple[str, ...]

    @classmethod
    def of(cls, document: Mapping[str, Any], expected_issuer: str) -> Metadata:
        """Discovery 1.0 section 4.3: the issuer in the document is exactly the one asked for
        (else an attacker's document could name other endpoints)."""
        if document.get("issuer") != expected_issuer:
            raise PermanentError(
                f"the sign-in provider's discovery document names the issuer "
                f"{str(document.get('issuer'))[:200]!r}, not {expected_issuer!r}",
                hint="set NEBULA_OIDC_ISSUER to the issuer exactly as the provider writes it",
            )
        try:
            return cls(
                issuer=expected_issuer,
                authorization_endpoint=str(document["authorization_endpoint"]),
                token_endpoint=str(document["token_endpoint"]),
                jwks_uri=str(document["jwks_uri"]),
                device_authorization_endpoint=document.get("device_authorization_endpoint"),
                scopes_supported=tuple(document.get("scopes_supported") or ()),
            )
        except KeyError as exc:
            raise PermanentError(
                f"the sign-in provider's discovery document has no {exc.args[0]}"
            ) from None


class Provider:
    """One OpenID Provider and Nebula's client there. ``monotonic`` is the clock the caches
    read (tests pass their own)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str = "",
        *,
        http: httpx.Client | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer  # exactly as the provider writes it: ID tokens are checked on it
        self.client_id = client_id
        self._secret = client_secret
        self._http = http or httpx.Client(timeout=TIMEOUT, follow_redirects=False)
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._metadata: tuple[float, Metadata] | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._keys_fetched_at: float | None = None

    def __repr__(self) -> str:  # never the secret
        return f"Provider({self.issuer!r}, client_id={self.client_id!r})"

    def close(self) -> None:
        self._http.close()

    # -- discovery and keys --------------------------------------------------------------------

    def metadata(self) -> Metadata:
        with self._lock:
            now = self._monotonic()
            if self._metadata is not None and now - self._metadata[0] < METADATA_TTL:
                return self._metadata[1]
        url = f"{self.issuer.rstrip('/')}/.well-known/openid-configuration"
        found = Metadata.of(self._json("GET", url), self.issuer)
        with self._lock:
            self._metadata = (self._monotonic(), found)
        return found

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The provider's signing key ``kid`` (or its only key, for a token that names none);
        None when the provider does not publish it, even after fetching the keys again."""
        with self._lock:
            found = self._pick(kid)
            fetched = self._keys_fetched_at
        if found is not None:
            return found
        if fetched is not None and self._monotonic() - fetched < REFETCH_FLOOR:
            return None
        keys = self._fetch_keys()
        with self._lock:
            self._keys, self._keys_fetched_at = keys, self._monotonic()
            return self._pick(kid)

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return self._keys.get(kid)
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    def _fetch_keys(self) -> dict[str, jwt.PyJWK]:
        document = self._json("GET", self.metadata().jwks_uri)
        keys: dict[str, jwt.PyJWK] = {}
        for entry in document.get("keys") or ():
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWKError, jwt.InvalidKeyError):
                continue  # a key type or algorithm PyJWT cannot use: tokens it signs fail
            keys[str(entry.get("kid", ""))] = key
        return keys

    # -- requests ------------------------------------------------------------------------------

    def token(self, form: Mapping[str, str]) -> dict[str, Any]:
        """The token endpoint's answer to ``form`` (a grant): a JSON object, which may be an
        OAuth error (``{"error": "authorization_pending"}``) for the caller to read."""
        return self._post(self.metadata().token_endpoint, form)

    def device_authorization(self, form: Mapping[str, str]) -> dict[str, Any]:
        endpoint = self.metadata().device_authorization_endpoint
        if endpoint is None:
            raise PermanentError("the sign-in provider offers no device authorization")
        return self._post(endpoint, form)

    def _post(self, url: str, form: Mapping[str, str]) -> dict[str, Any]:
        data = dict(form)
        auth: tuple[str, str] | None = None
        if self._secret:
            auth = (self.client_id, self._secret)  # client_secret_basic
        else:
            data["client_id"] = self.client_id  # a public client names itself
        return self._json("POST", url, data=data, auth=auth, errors_answered=True)

    def _json(
        self,
        method: str,
        url: str,
        *,
        data: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        errors_answered: bool = False,
    ) -> dict[str, Any]:
        try:
            answer = self._http.request(method, url, data=data, auth=auth)
        except httpx.TimeoutException:
            raise UnansweredError(
                f"the sign-in provider at {self.issuer} did not answer in time", hint=DOWN_HINT
            ) from None
        except httpx.TransportError as exc:
            raise UnreachableError(
                f"the sign-in provider at {self.issuer} cannot be reached ({_reason(exc)})",
                hint=DOWN_HINT,
            ) from None
        if answer.status_code >= 500 or (answer.status_code >= 400 and not errors_answered):
            raise UnreachableError(
                f"the sign-in provider at {self.issuer} answered {answer.status_code} "
                f"{answer.reason_phrase}",
                status=answer.status_code,
                hint=DOWN_HINT,
            )
        try:
            document = answer.json()
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise PermanentError(
                f"the sign-in provider at {self.issuer} answered {method} "
                f"{httpx.URL(url).path} with something that is not JSON"
            )
        return document


def _reason(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    return text.splitlines()[0][:200]
