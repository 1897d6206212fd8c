"""A real SMTP server for the e-mail channel (aiosmtpd): STARTTLS with a certificate made for
127.0.0.1 (trusted by the client through ``SSL_CERT_FILE``, as a private CA would be), AUTH
PLAIN and LOGIN for one user, only over TLS. It keeps every message it accepted, with whether
the session was encrypted and who signed in.

Fixture: ``mail_server``.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.infra.processes import free_port

USER, PASSWORD = "mailer", "smtp-pa55word"


@dataclass
class Accepted:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    encrypted: bool
    login: str | None


@dataclass
class _Handler:
    accepted: list[Accepted] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        login = session.auth_data.login.decode() if session.authenticated else None
        with self.lock:
            self.accepted.append(
                Accepted(
                    envelope.mail_from, list(envelope.rcpt_tos), message,
                    session.ssl is not None, login,
                )
            )  # fmt: skip
        return "250 OK"


def _authenticate(
    server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False, auth_data=auth_data)


def certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp.crt", directory / "smtp.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class MailServer:
    def __init__(self, directory: Path, *, starttls: bool = True) -> None:
        self.cert, key = certificate(directory)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, key)
        self.handler = _Handler()
        self.port = free_port()
        self._controller = Controller(
            self.handler,
            hostname="127.0.0.1",
            port=self.port,
            tls_context=context if starttls else None,
            require_starttls=starttls,
            authenticator=_authenticate,
            auth_require_tls=starttls,
        )
        self._controller.start()

    def url(self, user: str | None = USER, password: str = PASSWORD) -> str:
        who = f"{user}:{password}@" if user is not None else ""
        return f"smtp://{who}127.0.0.1:{self.port}"

    @property
    def accepted(self) -> list[Accepted]:
        with self.handler.lock:
            return list(self.handler.accepted)

    def stop(self) -> None:
        self._controller.stop()


@pytest.fixture
def mail_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MailServer]:
    server = MailServer(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(server.cert))  # the client trusts it, as a CA
    yield server
    server.stop()
