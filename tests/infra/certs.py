"""Self-signed TLS material for the loopback servers the tests run (fault proxy, test kubelet).

Generated in-process with `cryptography` so no test depends on an `openssl` binary's flags.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class KeyPair:
    cert_path: Path
    key_path: Path


def rsa_key_files(private_path: Path, public_path: Path) -> None:
    """Writes an RSA key pair as PEM (the API server's service-account signing keys)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    private_path.chmod(0o600)


def self_signed(directory: Path, name: str, ips: tuple[str, ...] = ("127.0.0.1",)) -> KeyPair:
    """A certificate valid for `localhost` and the given IPs, usable as its own CA."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pair = KeyPair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    pair.key_path.chmod(0o600)
    return pair
