"""Secrets at rest: Fernet (AES-128-CBC + HMAC) with a key from the environment or a key file.

Several replicas must share one key: set ``NEBULA_SECRET_KEY`` on all of them. With none set,
a key is generated once into ``<state dir>/secret.key`` (mode 0600), which suits one server.
Back it up apart from the database: every secret the database holds is encrypted with it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from reconciler.errors import ConfigurationError
from reconciler.store import private


class Vault:
    def __init__(self, key: bytes) -> None:
        try:
            self._fernet = Fernet(key)
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(
                "NEBULA_SECRET_KEY is not a valid key",
                hint="generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'",
            ) from exc

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def decrypt(self, ciphertext: bytes) -> str:
        try:
            return self._fernet.decrypt(ciphertext).decode("utf-8")
        except InvalidToken as exc:
            raise ConfigurationError(
                "a stored secret cannot be decrypted with this server's key",
                hint="every replica must use the same NEBULA_SECRET_KEY",
            ) from exc


def open_vault(secret_key: str, state_dir: Path) -> Vault:
    if secret_key:
        return Vault(secret_key.encode())
    path = state_dir / "secret.key"
    if path.exists():
        private.tighten(path)
        return Vault(path.read_bytes().strip())
    private.make_dir(state_dir)
    return Vault(_create_key(path))


def _create_key(path: Path) -> bytes:
    """A new key in ``path``, which appears whole or not at all (written aside, then linked
    in place); when another process starting at the same moment linked its key first, that
    one is the key, so both encrypt with the same."""
    key = Fernet.generate_key()
    aside = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    try:
        os.link(aside, path)
    except FileExistsError:
        key = path.read_bytes().strip()
    finally:
        os.unlink(aside)
    return key
