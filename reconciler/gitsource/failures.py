"""libgit2's failures turned into Nebula's errors, with every URL and secret scrubbed.

libgit2 reports network trouble as a bare ``GitError`` whose text is the only clue, so the
split below goes by that text. Everything is a ``delivery`` problem for the project; the class
says whether waiting can fix it: an unreachable host or a missing repository may come back
(``TransientError``), a URL that cannot be parsed or refused credentials will not until a
person changes something (``PermanentError``).
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.errors import Blocker, NebulaError, PermanentError, TransientError
from reconciler.gitsource import urls

RETRIED = " The next poll tries again."  # ends a transient failure's message
_UNUSABLE_URL = (
    "unsupported url protocol",
    "invalid argument",
    "malformed url",
    "invalid url",
    "cannot set empty url",
)
_REFUSED_CREDENTIALS = (
    "authentication",
    "too many redirects or authentication replays",
    "status code: 401",
    "status code: 403",
)


def wrap(
    exc: Exception,
    remote: urls.RemoteUrl,
    doing: str,
    secrets: Iterable[str] = (),
) -> NebulaError:
    """Our error for ``exc``, raised by libgit2 while ``doing`` (e.g. "list the branches of")."""
    if isinstance(exc, NebulaError):  # raised by our own callbacks; already worded and safe
        return exc
    all_secrets = [*remote.userinfo_secrets, *secrets]
    detail = urls.scrub(str(exc).strip().rstrip("."), remote.raw, all_secrets)
    lowered = detail.lower()
    where = remote.safe
    if any(marker in lowered for marker in _UNUSABLE_URL):
        return PermanentError(
            f"Could not {doing} {where}: the URL cannot be used ({detail}). "
            "Fix the project's repository URL.",
            code=Blocker.DELIVERY,
        )
    if any(marker in lowered for marker in _REFUSED_CREDENTIALS):
        return PermanentError(
            f"Could not {doing} {where}: the credentials were refused ({detail}). "
            "Check the token for this host in NEBULA_GIT_CREDENTIALS.",
            code=Blocker.DELIVERY,
        )
    return TransientError(f"Could not {doing} {where}: {detail}.{RETRIED}", code=Blocker.DELIVERY)


def missing_path(remote: urls.RemoteUrl, doing: str) -> TransientError:
    """libgit2 calls a missing local path an "unsupported URL protocol"; say what it is."""
    return TransientError(
        f"Could not {doing} {remote.safe}: no repository at that path.{RETRIED}",
        code=Blocker.DELIVERY,
    )
