"""Nebula's own errors, and the blockers they name.

Every error carries a ``code`` (a ``Blocker`` where one applies, so the engine can name what
a deployment or project stopped on) and a message that says what happened and what happens
next; ``hint`` says what to do, when there is something to do. Third-party exceptions are
wrapped at the edge with ``raise ... from exc`` so that callers above the edge only ever see
this tree::

    NebulaError
    ├── ConfigurationError      a person must change a file or a setting; retrying won't help
    │   └── InvalidFileError    nebula.toml failed validation (carries every problem)
    ├── RefusedError            a request the rules refuse
    │   ├── NotFoundError       the thing named does not exist
    │   ├── ForbiddenError      the member's role (or the self-approval policy) does not allow it
    │   ├── ConflictError       well formed, but not possible in the current state
    │   │   ├── AlreadyDecidedError   the approval was decided (or expired) before
    │   │   └── IllegalTransition     a state change the transition table does not allow
    │   ├── FrozenError         a deploy freeze is on
    │   ├── GateError           a promotion gate: the image has not proven itself yet
    │   ├── SuspendedError      the project or environment is suspended (nebula suspend)
    │   └── ConcurrencyError    the project runs its maximum number of deployments
    ├── UnauthorizedError       no token, or not a valid one
    │   └── SignInRefusedError  single sign-on: the provider's answer is not to be trusted
    ├── StoreError              the state store could not do it (``code`` "database")
    │   ├── StoreUnreachableError   the database server cannot be reached (restarting, down)
    │   ├── StoreReadOnlyError      the store can be read but not written
    │   └── StoreFullError          the disk under the store is full
    └── RemoteError             a remote said no (``status``: its status code)
        ├── TransientError      may succeed if retried (API 5xx, timeouts, conflicts)
        │   ├── UnreachableError    the cluster's API cannot be reached (``delivery``)
        │   ├── RateLimitedError    the remote said 429: wait ``retry_after`` seconds
        │   └── UnansweredError     the request went out, no answer came back
        └── PermanentError      will not succeed if retried (the cluster said no for good)
            └── ManifestError   a rendered object is not what it should be (a bug in Nebula)
"""

from __future__ import annotations

from enum import StrEnum


class Blocker(StrEnum):
    """Why a deployment (or a project) cannot move; a failed deployment names the one it stopped on.

    Defined with the errors because an error's code is how a blocker is reported from the
    edges (a refused image, an unreachable API) to the engine that records it.
    """

    CONFIGURATION = "configuration"
    DELIVERY = "delivery"
    STALLED = "stalled"
    WAITING = "waiting"
    RELEASE_COMMAND = "release-command"
    IMAGE_PULL = "image-pull"
    CAPACITY = "capacity"
    READINESS = "readiness"
    ROUTE_ACTIVATION = "route-activation"


class NebulaError(Exception):
    """Base of every error Nebula raises on purpose."""

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    @property
    def blocker(self) -> Blocker | None:
        """The blocker this error names, when its code is one."""
        try:
            return Blocker(self.code)
        except ValueError:
            return None


class ConfigurationError(NebulaError):
    code = Blocker.CONFIGURATION


class InvalidFileError(ConfigurationError):
    """nebula.toml is invalid; ``problems`` holds every error found, not only the first."""

    def __init__(self, problems: list[object], message: str | None = None) -> None:
        self.problems = problems
        text = message or "\n".join(str(p) for p in problems)
        super().__init__(text)


class RefusedError(NebulaError):
    code = "refused"


class NotFoundError(RefusedError):
    code = "not-found"


class ForbiddenError(RefusedError):
    code = "forbidden"


class ConflictError(RefusedError):
    """The request is well formed; what it asks is not possible now (HTTP 409)."""

    code = "conflict"


class AlreadyDecidedError(ConflictError):
    pass


class IllegalTransition(ConflictError):
    code = "illegal-transition"


class FrozenError(RefusedError):
    code = "frozen"


class GateError(RefusedError):
    """The target's promotion gate refuses the image: it has not stayed healthy long enough
    (``soak``) in the environment it promotes from."""

    code = "gate"


class SuspendedError(RefusedError):
    """Nothing is applied while a project or environment is suspended; rollbacks still are."""

    code = "suspended"


class ConcurrencyError(RefusedError):
    code = "concurrency"


class UnauthorizedError(NebulaError):
    code = "unauthorized"


class SignInRefusedError(UnauthorizedError):
    """A sign-in the server refuses: its message is for the person; ``reason`` (what exactly
    failed: the signature, the audience, the nonce...) is for the server's log alone."""

    code = "sign-in-refused"

    def __init__(self, message: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class StoreError(NebulaError):
    """The state store could not do what was asked: reads and writes are not possible now.

    Not a ``RemoteError``: the engine retries a remote's transient failure within a stage and
    fails the deployment after three, while a store that cannot be written records nothing at
    all; the scheduler waits for it instead (one warning per outage)."""

    code = "database"


class StoreUnreachableError(StoreError):
    """The database server does not answer (down, restarting, refusing connections)."""


class StoreReadOnlyError(StoreError):
    """The store can be read but not written (a read-only file, directory or database)."""


class StoreFullError(StoreError):
    """The disk (or the database's space) under the store is full."""


def shown(value: object, limit: int = 80, *, quote: bool = True) -> str:
    """A value someone gave, as a message shows it: quoted (unless ``quote`` is false, as in a
    command a hint suggests), on one line (newlines and other control characters escaped, as
    ``repr`` does), and cut after ``limit`` characters."""
    text = str(value)
    cut = len(text) > limit
    quoted = repr(text[:limit]) if quote else repr(text[:limit])[1:-1]
    return f"{quoted}…" if cut else quoted


class RemoteError(NebulaError):
    """A remote (the cluster's API, Slack, a git server) said no; ``status`` is its status
    code when there was one. Raised as one of its two kinds, never itself."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.status = status


class TransientError(RemoteError):
    """Worth retrying."""

    code = "transient"


class UnreachableError(TransientError):
    code = Blocker.DELIVERY


class RateLimitedError(TransientError):
    """The remote answered 429: nothing more should be sent before ``retry_after`` seconds."""

    code = "rate-limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, status=429)
        self.retry_after = retry_after


class UnansweredError(TransientError):
    """The request went out but no answer came back (timeout, connection dropped)."""

    code = "unanswered"


class PermanentError(RemoteError):
    """Will not succeed if retried, until someone changes something."""

    code = "permanent"


class ManifestError(PermanentError):
    """A rendered object is not what it should be: a bug in Nebula, not in nebula.toml."""

    code = "invalid-manifest"
