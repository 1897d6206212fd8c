"""Credentials for remotes, from server settings, handed to libgit2 one operation at a time.

Tokens come from ``NEBULA_GIT_CREDENTIALS`` (``host=token,host2=token2``), never from the
project's URL as stored, so a token can be rotated without editing projects. libgit2 asks
again when a credential is rejected; answering a second time with the same token would loop
until libgit2's replay limit, so each operation gets a fresh ``RemoteCallbacks`` that answers
once and then says plainly that the credential was refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import CredentialType

from reconciler.errors import Blocker, ConfigurationError, PermanentError
from reconciler.gitsource import urls

# GitHub and Gitea accept any user name with a token; GitHub documents this one.
DEFAULT_TOKEN_USERNAME = "x-access-token"


@dataclass(frozen=True)
class HostToken:
    token: str = field(repr=False)
    username: str = DEFAULT_TOKEN_USERNAME


@dataclass(frozen=True)
class SshKey:
    private_key: Path
    public_key: Path | None = None
    passphrase: str = field(default="", repr=False)


@dataclass(frozen=True)
class GitCredentials:
    """Tokens by host (``host`` or ``host:port``, lower case) and an optional ssh key."""

    tokens: Mapping[str, HostToken] = field(default_factory=dict, repr=False)
    ssh_key: SshKey | None = None

    @classmethod
    def parse(cls, text: str, *, ssh_key: SshKey | None = None) -> GitCredentials:
        """Read the ``host=token,host2=token2`` form of the ``git_credentials`` setting."""
        tokens: dict[str, HostToken] = {}
        for number, item in enumerate((part.strip() for part in text.split(",")), start=1):
            if not item:
                continue
            host, sep, token = item.partition("=")
            if not sep or not host.strip() or not token.strip():
                # The entry is not echoed: a pasted bare token would end up in the message.
                raise ConfigurationError(
                    f"NEBULA_GIT_CREDENTIALS entry {number} is not of the form host=token.",
                    hint="write host=token pairs separated by commas",
                )
            tokens[host.strip().lower()] = HostToken(token.strip())
        return cls(tokens, ssh_key)

    def token_for(self, host: str | None) -> HostToken | None:
        if host is None:
            return None
        found = self.tokens.get(host)
        if found is None and ":" in host:
            found = self.tokens.get(host.partition(":")[0])
        return found

    def secrets(self) -> list[str]:
        values = [t.token for t in self.tokens.values()]
        if self.ssh_key is not None and self.ssh_key.passphrase:
            values.append(self.ssh_key.passphrase)
        return values


NO_CREDENTIALS = GitCredentials()


class OneShotCallbacks(pygit2.RemoteCallbacks):
    """Answers libgit2's credential question at most once per operation."""

    def __init__(self, remote: urls.RemoteUrl, credentials: GitCredentials) -> None:
        super().__init__()
        self._remote = remote
        self._credentials = credentials
        self._answered = False

    def credentials(
        self,
        url: str,
        username_from_url: str | None,
        allowed_types: CredentialType,
    ) -> pygit2.Username | pygit2.UserPass | pygit2.Keypair:
        safe = self._remote.safe
        if self._answered:
            raise PermanentError(
                f"{safe} refused the credentials Nebula sent; check the token or key for "
                f"{self._remote.host or 'this host'} in NEBULA_GIT_CREDENTIALS.",
                code=Blocker.DELIVERY,
            )
        self._answered = True
        if allowed_types & CredentialType.USERPASS_PLAINTEXT:
            token = self._credentials.token_for(self._remote.host)
            if token is None and self._remote.has_userinfo:
                raise PermanentError(
                    f"{safe} refused the credentials in the URL; fix them, or remove them "
                    f"and add host=token for {self._remote.host} to NEBULA_GIT_CREDENTIALS.",
                    code=Blocker.DELIVERY,
                )
            if token is None:
                raise PermanentError(
                    f"{safe} asks for credentials and none are configured for "
                    f"{self._remote.host}; add host=token to NEBULA_GIT_CREDENTIALS.",
                    code=Blocker.DELIVERY,
                )
            return pygit2.UserPass(username_from_url or token.username, token.token)
        if allowed_types & CredentialType.SSH_KEY:
            key = self._credentials.ssh_key
            if key is None:
                raise PermanentError(
                    f"{safe} needs an ssh key and none is configured.", code=Blocker.DELIVERY
                )
            public = str(key.public_key) if key.public_key else None
            return pygit2.Keypair(
                username_from_url or "git", public, str(key.private_key), key.passphrase
            )
        if allowed_types & CredentialType.USERNAME:
            self._answered = False  # ssh asks for the user name first, then for the key
            return pygit2.Username(username_from_url or "git")
        raise PermanentError(
            f"{safe} asks for a kind of credential Nebula does not support.", code=Blocker.DELIVERY
        )
