"""Single sign-on, as the page and the command line go through it: send a person (or a device)
to the provider, take its answer, verify the ID token, find the member, give a session.

The server does every exchange with the provider: it alone holds the client secret, the PKCE
verifier and the device code. The command line holds a handle to its sign-in and polls
``POST /api/v1/sso/token`` until it is done (the device grant), or hands over the code its
loopback listener received (no device endpoint). No provider call happens inside a store
transaction, and a refused sign-in is one line in the log (why, never a token) and one plain
sentence for the person.
"""

from __future__ import annotations

import hmac
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from reconciler.acts.calls import Call, Document
from reconciler.admin import signins
from reconciler.context import Context
from reconciler.core.states import Role, SignInKind
from reconciler.errors import (
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RefusedError,
    SignInRefusedError,
)
from reconciler.sso import authorizing, idtokens
from reconciler.sso.providers import Provider
from reconciler.views import iso

log = logging.getLogger("nebula.sso")

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
LOOPBACK = re.compile(r"^http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}/callback$")
NOT_SET_UP = "single sign-on is not set up on this server"
NOT_SET_UP_HINT = "its operator sets NEBULA_OIDC_ISSUER and NEBULA_OIDC_CLIENT_ID"
START_AGAIN = "This sign-in is over (finished, expired or never begun): start again"


@dataclass(frozen=True)
class SignedIn:
    token: str
    member: str
    role: Role
    expires_at: datetime
    admin_for_session: bool
    next_path: str | None = None

    def document(self) -> Document:
        return {
            "status": "signed-in",
            "token": self.token,
            "member": self.member,
            "role": self.role.value,
            "expires_at": iso(self.expires_at),
            "admin_for_session": self.admin_for_session,
            "interval": None,
        }


def enabled(ctx: Context) -> bool:
    return bool(ctx.settings.oidc_issuer and ctx.settings.oidc_client_id)


def provider(ctx: Context) -> Provider:
    """The provider this server signs people in with (built on first use, kept on ``ctx``)."""
    if not enabled(ctx):
        raise NotFoundError(NOT_SET_UP, hint=NOT_SET_UP_HINT)
    if ctx.signon is None:
        settings = ctx.settings
        ctx.signon = Provider(
            settings.oidc_issuer, settings.oidc_client_id, settings.oidc_client_secret
        )
    found: Provider = ctx.signon
    return found


# -- the code flow: the page, and the command line's loopback ---------------------------------


def start_redirect(
    ctx: Context, kind: SignInKind, redirect_uri: str, next_path: str | None = None
) -> tuple[str, str]:
    """A new sign-in that sends the person to the provider: (its handle, the URL to open)."""
    metadata = provider(ctx).metadata()  # the provider down: said before anything is stored
    state, nonce, verifier = (authorizing.secret() for _ in range(3))
    with ctx.db.transaction() as session:
        handle = signins.remember(
            session, ctx.clock, ctx.vault, kind, state=state, nonce=nonce, verifier=verifier,
            redirect_uri=redirect_uri, next_path=next_path,
        )  # fmt: skip
    url = authorizing.url(metadata, ctx.settings.oidc_client_id, redirect_uri, state, nonce,
                          verifier)  # fmt: skip
    return handle, url


def finish_redirect(
    ctx: Context,
    kind: SignInKind,
    handle: str | None,
    code: str,
    state: str,
    issuer: str | None = None,
) -> SignedIn:
    """The provider's answer to a redirect sign-in of ``kind``, taken once."""
    with ctx.db.transaction() as session:
        pending = signins.find(session, ctx.clock, ctx.vault, handle)
        taken = pending is not None and pending.kind is kind and signins.forget(session, pending)
    if pending is None or not taken:
        raise _logged(ConflictError(START_AGAIN), "no such sign-in under way (or a replay)")
    # An answer that is not this sign-in's ends it all the same: it is under attack.
    if pending.state is None or not hmac.compare_digest(pending.state, state):
        raise _logged(
            SignInRefusedError(
                "Sign-in refused: the answer does not belong to this sign-in (state)",
                "the state in the answer is not this sign-in's",
                hint="start again from the beginning",
            ),
        )
    the_provider = provider(ctx)
    if issuer is not None and issuer != the_provider.issuer:  # RFC 9207: a mix-up
        raise _logged(
            SignInRefusedError(idtokens.NOT_TRUSTED, f"the answer came from {issuer[:200]!r}")
        )
    answer = the_provider.token(
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri or "",
            "code_verifier": pending.verifier or "",
        }
    )
    return _signed_in(ctx, answer, pending.nonce, pending.next_path)


# -- the device grant (RFC 8628) ----------------------------------------------------------------


def start_device(ctx: Context) -> Document:
    the_provider = provider(ctx)
    metadata = the_provider.metadata()
    if metadata.device_authorization_endpoint is None:
        raise ConflictError(
            "the sign-in provider offers no device authorization",
            hint="nebula login --sso then signs in through a browser on this machine",
        )
    answer = the_provider.device_authorization({"scope": authorizing.scope(metadata)})
    if "device_code" not in answer or "user_code" not in answer:
        raise RefusedError(
            f"the sign-in provider refused to start a device sign-in: {_oauth_error(answer)}"
        )
    interval = _seconds(answer.get("interval"), 5)
    lifetime = timedelta(seconds=min(_seconds(answer.get("expires_in"), 600), 1800))
    with ctx.db.transaction() as session:
        handle = signins.remember(
            session, ctx.clock, ctx.vault, SignInKind.DEVICE,
            device_code=str(answer["device_code"]), interval=interval, lifetime=lifetime,
        )  # fmt: skip
    return {
        "handle": handle,
        "user_code": str(answer["user_code"]),
        "verification_uri": str(answer.get("verification_uri", "")),
        "verification_uri_complete": answer.get("verification_uri_complete"),
        "interval": interval,
        "expires_in": int(lifetime.total_seconds()),
    }


def poll_device(ctx: Context, handle: str) -> SignedIn | int:
    """The session, once the person approved the device; else the seconds to wait."""
    now = ctx.clock.now()
    with ctx.db.reading() as session:
        pending = signins.find(session, ctx.clock, ctx.vault, handle)
    if pending is None or pending.kind is not SignInKind.DEVICE:
        raise ConflictError(START_AGAIN, hint="nebula login URL --sso")
    if pending.next_poll_at is not None and now < pending.next_poll_at:
        return pending.interval  # the command line polls us sooner than we may poll the provider
    answer = provider(ctx).token(
        {"grant_type": DEVICE_GRANT, "device_code": pending.device_code or ""}
    )
    error = answer.get("error")
    if error in ("authorization_pending", "slow_down"):
        interval = pending.interval + (5 if error == "slow_down" else 0)
        with ctx.db.transaction() as session:
            signins.postpone(session, pending, now + timedelta(seconds=interval), interval)
        return interval
    with ctx.db.transaction() as session:
        if not signins.forget(session, pending):
            raise ConflictError(START_AGAIN)
    if error == "access_denied":
        raise _logged(ForbiddenError("Sign-in refused: the device was not approved"))
    if error == "expired_token":
        raise _logged(ConflictError("The code expired before it was entered: start again"))
    return _signed_in(ctx, answer, None, None)


# -- the end of every sign-in -----------------------------------------------------------------


def _signed_in(
    ctx: Context, answer: dict[str, Any], nonce: str | None, next_path: str | None
) -> SignedIn:
    id_token = answer.get("id_token")
    if not isinstance(id_token, str):
        raise _logged(
            SignInRefusedError(
                "Sign-in refused: the sign-in provider did not sign you in",
                f"the token endpoint answered without an ID token ({_oauth_error(answer)})",
                hint="start again from the beginning",
            )
        )
    settings = ctx.settings
    try:
        identity = idtokens.verify(provider(ctx), id_token, nonce=nonce, now=ctx.clock.now())
        default = Role(settings.oidc_default_role) if settings.oidc_default_role else None
        admin = signins.admin_by_groups(identity, settings.oidc_admin_groups)
        with ctx.db.transaction() as session:
            member = signins.member_for(session, ctx.clock, identity, default)
            row, token = signins.open_session(
                session, ctx.clock, member, settings.session_ttl, admin=admin
            )
            name, role, expires = member.name, Role(member.role), row.expires_at
    except (SignInRefusedError, ForbiddenError) as exc:
        raise _logged(exc) from None
    log.info("signed in", extra={"member": name, "admin_for_session": admin})
    assert expires is not None
    shown_role = Role.ADMIN if admin and not role.can_decide else role
    return SignedIn(token, name, shown_role, expires, admin, next_path)


def _logged(error: Exception, reason: str | None = None) -> Exception:
    """``error``, once its one line is in the log."""
    why = reason or getattr(error, "reason", None) or str(error)
    log.warning("sign-in refused", extra={"reason": why})
    return error


def _oauth_error(answer: dict[str, Any]) -> str:
    return str(answer.get("error") or "no error given")[:100]


def _seconds(value: object, default: int) -> int:
    return int(value) if isinstance(value, int) and 0 < value <= 3600 else default


# -- the routes ------------------------------------------------------------------------------


def info(call: Call) -> Document:
    """Whether this server signs people in, and how the command line should."""
    if not enabled(call.ctx):
        return {"enabled": False, "issuer": None, "device": False}
    metadata = provider(call.ctx).metadata()
    return {
        "enabled": True,
        "issuer": metadata.issuer,
        "device": metadata.device_authorization_endpoint is not None,
    }


def device(call: Call) -> Document:
    return start_device(call.ctx)


def authorize(call: Call) -> Document:
    redirect_uri = call.text("redirect_uri")
    if not LOOPBACK.match(redirect_uri):
        raise ConfigurationError(
            "body: redirect_uri must be http://127.0.0.1:PORT/callback (the command line's "
            "loopback listener)"
        )
    handle, url = start_redirect(call.ctx, SignInKind.LOOPBACK, redirect_uri)
    return {"handle": handle, "authorization_url": url, "expires_in": 600}


def token(call: Call) -> Document:
    handle = call.text("handle")
    code = call.maybe("code")
    if code is not None:
        state = call.maybe("state") or ""  # none: refused like another sign-in's
        return finish_redirect(call.ctx, SignInKind.LOOPBACK, handle, code, state).document()
    polled = poll_device(call.ctx, handle)
    if isinstance(polled, SignedIn):
        return polled.document()
    return {"status": "pending", "interval": polled, "token": None, "member": None,
            "role": None, "expires_at": None, "admin_for_session": False}  # fmt: skip
