"""Sending an e-mail through ``NEBULA_SMTP_URL``: ``smtp://user:password@host:587`` (STARTTLS
whenever the server offers it, AUTH when the URL has credentials) or ``smtps://`` (TLS from
the first byte, port 465 by default). Certificates are verified as for any TLS client.

The URL's password never appears in an error (a failure names the host only), and is never
sent in the clear: a server that offers no STARTTLS gets no AUTH.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import parseaddr
from typing import Any
from urllib.parse import unquote, urlsplit

from reconciler.errors import ConfigurationError, PermanentError, TransientError

TIMEOUT = 10.0


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    implicit_tls: bool
    user: str | None = None
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Mail:
    server: Server
    sender: str
    recipients: tuple[str, ...]
    message: EmailMessage = field(repr=False)


def server(url: str) -> Server:
    """``NEBULA_SMTP_URL`` read; a ``ConfigurationError`` naming the setting (never its value)."""
    if not url:
        raise ConfigurationError(
            "e-mail cannot be sent: NEBULA_SMTP_URL is not set",
            hint="set it on the server, e.g. smtp://user:password@mail.example.com:587",
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        port, parts = None, urlsplit("")
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ConfigurationError(
            "NEBULA_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://...",
            hint="e.g. smtp://user:password@mail.example.com:587",
        )
    implicit = parts.scheme == "smtps"
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return Server(parts.hostname, port or (465 if implicit else 587), implicit, user, password)


def send(mail: Mail) -> dict[str, Any]:
    where = f"the SMTP server {mail.server.host}:{mail.server.port}"
    context = ssl.create_default_context()
    try:
        client: smtplib.SMTP = (
            smtplib.SMTP_SSL(mail.server.host, mail.server.port, timeout=TIMEOUT, context=context)
            if mail.server.implicit_tls
            else smtplib.SMTP(mail.server.host, mail.server.port, timeout=TIMEOUT)
        )
        with client:
            client.ehlo()
            secure = mail.server.implicit_tls
            if not secure and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
                secure = True
            if mail.server.user is not None and not secure:
                raise PermanentError(
                    f"{where} offers no STARTTLS: the password of NEBULA_SMTP_URL is not sent "
                    "in the clear",
                    code="smtp",
                )
            if mail.server.user is not None:
                client.login(mail.server.user, mail.server.password or "")
            envelope = parseaddr(mail.sender)[1] or mail.sender  # MAIL FROM takes the address
            refused = client.send_message(mail.message, envelope, list(mail.recipients))
    except smtplib.SMTPAuthenticationError as exc:
        raise PermanentError(
            f"{where} refused the login of NEBULA_SMTP_URL ({exc.smtp_code})", code="smtp"
        ) from exc
    except smtplib.SMTPNotSupportedError as exc:
        raise PermanentError(
            f"{where} offers no AUTH, but NEBULA_SMTP_URL has credentials", code="smtp"
        ) from exc
    except smtplib.SMTPRecipientsRefused as exc:
        raise PermanentError(f"{where} refused every recipient", code="smtp") from exc
    except smtplib.SMTPResponseException as exc:
        error = TransientError if 400 <= exc.smtp_code < 500 else PermanentError
        raise error(f"{where} answered {exc.smtp_code}", code="smtp") from exc
    except ssl.SSLError as exc:
        raise PermanentError(f"{where}: TLS failed ({exc.reason})", code="smtp") from exc
    except (smtplib.SMTPException, OSError) as exc:
        reason = type(exc).__name__ if not isinstance(exc, OSError) else (exc.strerror or "")
        raise TransientError(f"{where} cannot be reached ({reason or 'no answer'})") from exc
    return {"recipients": len(mail.recipients) - len(refused), "refused": sorted(refused)}
