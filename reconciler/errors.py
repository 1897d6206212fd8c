"""Nebula's own errors.

Every error carries a ``code`` (a blocker name where one applies) and a message that says
what happened and what happens next. Third-party exceptions are wrapped at the edge with
``raise ... from exc`` so that callers above the edge only ever see this tree::

    NebulaError
    ├── ConfigurationError      a person must change a file or a setting; retrying won't help
    │   └── InvalidFileError    nebula.toml failed validation (carries every problem)
    ├── RefusedError            a request the rules refuse (freeze, concurrency, role, state)
    │   ├── NotFoundError       the thing named does not exist
    │   └── ForbiddenError      the member's role does not allow it
    ├── TransientError          may succeed if retried (API 5xx, timeouts, conflicts)
    └── PermanentError          will not succeed if retried (the cluster said no for good)
"""

from __future__ import annotations


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


class ConfigurationError(NebulaError):
    code = "configuration"


class InvalidFileError(ConfigurationError):
    """nebula.toml is invalid; ``problems`` holds every error found, not only the first."""

    def __init__(self, problems: list[object], message: str | None = None) -> None:
        self.problems = problems
        text = message or "\n".join(str(p) for p in problems)
        super().__init__(text, code="configuration")


class RefusedError(NebulaError):
    code = "refused"


class NotFoundError(RefusedError):
    code = "not-found"


class ForbiddenError(RefusedError):
    code = "forbidden"


class UnauthorizedError(NebulaError):
    code = "unauthorized"


class TransientError(NebulaError):
    """Worth retrying; ``status`` is the remote status code when there was one."""

    code = "transient"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message, code=code)
        self.status = status


class PermanentError(NebulaError):
    code = "permanent"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message, code=code)
        self.status = status
