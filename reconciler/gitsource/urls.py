"""Remote URLs: which transport they use, where they are cached, and how they are shown.

A URL may carry a token (``https://user:token@host/x``). It is used as given when talking to
the remote, but every text a person can see (errors, logs, the cache's ``description`` file)
goes through ``sanitize_url`` or ``scrub`` first, and the cache directory is named after the
URL *without* its credentials so that rotating a token keeps the cache.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

from reconciler.errors import Blocker, PermanentError

MASK = "***"

# ``user@host:path`` (scp-like ssh): no scheme, a colon before the first slash.
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^/:]+):(?P<path>(?!//).*)$")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# ``ext::sh -c ...``, ``fd::17``: git's ``<transport>::<address>`` (not ``git@[::1]:repo``).
_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")


class Transport(StrEnum):
    LOCAL = "local"
    FILE = "file"
    GIT = "git"
    HTTP = "http"
    HTTPS = "https"
    SSH = "ssh"

    @property
    def supports_shallow(self) -> bool:
        # libgit2's local transport refuses depth: "shallow fetch is not supported by the
        # local transport"; a full fetch of a path on this machine costs no network anyway.
        return self not in (Transport.LOCAL, Transport.FILE)


_SCHEMES = {
    "file": Transport.FILE,
    "git": Transport.GIT,
    "http": Transport.HTTP,
    "https": Transport.HTTPS,
    "ssh": Transport.SSH,
    "git+ssh": Transport.SSH,
    "ssh+git": Transport.SSH,
}


ACCEPTED = (
    "an absolute path, file://, git://, http(s):// or ssh:// (or user@host:path), with no "
    "part that starts with '-'"
)


def refusal(url: str) -> str | None:
    """Why ``url`` may not be registered as a repository, or None. Checked at ``project add``
    and ``project set repo``, so that what git would take as an option (``--upload-pack=...``,
    a host ``-oProxyCommand=...``) or as a remote helper (``ext::sh -c ...``, ``fd::17``) is
    refused before anything hands it to libgit2."""
    text = url.strip()
    if not text:
        return "the repository URL is empty"
    if text.startswith("-"):
        return "a repository URL cannot start with '-' (git would read it as an option)"
    helper = _HELPER.match(text)
    if helper is not None:
        return f"{sanitize_url(text)} names a git remote helper ('{helper.group(0)}')"
    scheme = unsupported_scheme(text)
    if scheme is not None:
        return f"The repository URL {sanitize_url(text)} uses the unsupported scheme '{scheme}'"
    try:
        remote = parse(text)
    except PermanentError as exc:
        return exc.message.rstrip(".")
    if is_relative_path(text):
        return f"{sanitize_url(text)} is a relative path: give an absolute one"
    # Only ssh hands the URL's parts to a command line (``ssh -oProxyCommand=...``).
    parts = _segments(text) if remote.transport is Transport.SSH else []
    if (remote.host or "").startswith("-") or any(part.startswith("-") for part in parts):
        return f"{sanitize_url(text)} has a part that starts with '-' (git would read an option)"
    return None


def is_relative_path(url: str) -> bool:
    """A path on this machine, relative to where it is read: the command line makes it
    absolute in local mode (a server's working directory is nobody's business)."""
    text = url.strip()
    if text.startswith("-") or _HELPER.match(text):
        return False  # refused, and never made a path of
    try:
        remote = parse(text)
    except PermanentError:
        return False
    absolute = text.startswith(("/", "~")) or _WINDOWS_DRIVE.match(text) is not None
    return remote.transport is Transport.LOCAL and not absolute


def _segments(text: str) -> list[str]:
    """What follows the scheme and the host of a remote URL, as git splits it: its user, its
    host, and the first segment of its path (what a transport's command line may be given)."""
    if "://" in text:
        parts = urlsplit(text)
        return [parts.username or "", parts.hostname or "", parts.path.lstrip("/")]
    scp = _SCP_LIKE.match(text)
    if scp is None:
        return []
    return [scp.group("user") or "", scp.group("host"), scp.group("path")]


def unsupported_scheme(url: str) -> str | None:
    """The scheme of ``url`` when Nebula cannot fetch over it (``ftp``), else None: checked
    when a project is registered, so a typo is refused then rather than found by polling."""
    text = url.strip()
    if "://" not in text:
        return None
    scheme = text.split("://", 1)[0].lower()
    return None if scheme in _SCHEMES else scheme


@dataclass(frozen=True)
class RemoteUrl:
    """A parsed remote URL; ``raw`` (possibly with credentials) is what libgit2 is given."""

    raw: str
    transport: Transport
    host: str | None  # lower-cased, with ``:port`` when one is given; None for local paths
    userinfo_secrets: tuple[str, ...] = ()  # kept only to scrub them from messages

    def __repr__(self) -> str:
        return f"RemoteUrl({self.safe!r}, {self.transport.value})"

    @functools.cached_property
    def safe(self) -> str:
        return sanitize_url(self.raw)

    @property
    def has_userinfo(self) -> bool:
        """True when the URL itself carries credentials (scp-like ``git@`` is a user name)."""
        return "://" in self.raw and "@" in urlsplit(self.raw).netloc

    @functools.cached_property
    def cache_key(self) -> str:
        return hashlib.sha256(_without_userinfo(self.raw).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4096)
def parse(url: str) -> RemoteUrl:
    """Classify ``url``; raises ``PermanentError`` (code ``delivery``) when it cannot be used.

    Cached: a poll parses the same thousand URLs every minute.
    """
    text = url.strip()
    if not text:
        raise PermanentError("The repository URL is empty.", code=Blocker.DELIVERY)
    if "://" in text:
        return _parse_with_scheme(text)
    if _WINDOWS_DRIVE.match(text) or text.startswith(("/", ".", "~")):
        return RemoteUrl(text, Transport.LOCAL, None)
    scp = _SCP_LIKE.match(text)
    if scp is not None:
        return RemoteUrl(text, Transport.SSH, scp.group("host").lower())
    return RemoteUrl(text, Transport.LOCAL, None)


def _parse_with_scheme(text: str) -> RemoteUrl:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise PermanentError(
            f"The repository URL {sanitize_url(text)} cannot be parsed: {exc}.",
            code=Blocker.DELIVERY,
        ) from exc
    transport = _SCHEMES.get(parts.scheme.lower())
    if transport is None:
        raise PermanentError(
            f"The repository URL {sanitize_url(text)} uses the unsupported scheme "
            f"{parts.scheme!r}; use a local path, file://, git://, http(s):// or ssh://.",
            code=Blocker.DELIVERY,
        )
    if transport is Transport.FILE:
        return RemoteUrl(text, transport, None)
    if not parts.hostname:
        raise PermanentError(
            f"The repository URL {sanitize_url(text)} names no host.", code=Blocker.DELIVERY
        )
    host = parts.hostname.lower() + (f":{port}" if port is not None else "")
    return RemoteUrl(text, transport, host, _userinfo_secrets(parts, transport))


def _userinfo_secrets(parts: SplitResult, transport: Transport) -> tuple[str, ...]:
    secrets = [parts.password] if parts.password else []
    # A token is often given as the user name (``https://TOKEN@host/x``). Only long names are
    # masked inside messages: a short one (``git``) is no secret and masking it garbles text.
    username = parts.username or ""
    if transport in (Transport.HTTP, Transport.HTTPS) and len(username) >= 8:
        secrets.append(username)
    return tuple(secrets)


def sanitize_url(url: str) -> str:
    """``url`` with any userinfo and query replaced by ``***``: safe to log or show."""
    if "://" in url:
        try:
            parts = urlsplit(url)
        except ValueError:
            return _mask_userinfo_roughly(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
        query = MASK if parts.query else ""
        return SplitResult(parts.scheme, netloc, parts.path, query, "").geturl()
    scp = _SCP_LIKE.match(url)
    if scp is not None and scp.group("user") and not _WINDOWS_DRIVE.match(url):
        return f"{MASK}@{scp.group('host')}:{scp.group('path')}"
    return url


def _mask_userinfo_roughly(url: str) -> str:
    """For a URL ``urlsplit`` rejects: mask everything between ``://`` and the last ``@``."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = f"{MASK}@{authority.rpartition('@')[2]}"
    return f"{scheme}://{authority}{slash}{path}"


def _without_userinfo(url: str) -> str:
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    return SplitResult(parts.scheme, netloc, parts.path, parts.query, "").geturl()


def scrub(text: str, url: str, secrets: Iterable[str] = ()) -> str:
    """``text`` (e.g. a libgit2 message) with ``url`` sanitized and every secret masked."""
    cleaned = text.replace(url, sanitize_url(url)) if url else text
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        cleaned = cleaned.replace(secret, MASK)
    return cleaned


def local_path(remote: RemoteUrl) -> Path | None:
    """The directory a local-path URL names, or None for any other transport."""
    if remote.transport is not Transport.LOCAL:
        return None
    return Path(remote.raw).expanduser()
