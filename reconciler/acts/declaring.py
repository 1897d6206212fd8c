"""What a route of ``/api/v1`` is, as ``routes`` declares it: its path, its act (by name),
who may call it, its parameters. Plain data, apart from the acts themselves, so that what
only matches and checks a request (the command line's quick status read) loads none of the
store or the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Access(StrEnum):
    OPEN = "open"  # anyone: signing in (single sign-on)
    PAGE = "page"  # as public as the status page
    TOKEN = "token"  # a member, any role
    ACT = "act"  # a member; the act checks their rights


@dataclass(frozen=True)
class Param:
    """A path or query parameter, as ``/openapi.json`` documents it."""

    name: str
    in_path: bool = False
    pattern: str | None = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
    max_length: int = 100
    required: bool = False
    about: str = ""
    integer: tuple[int, int, int] | None = None  # (least, most, default) of a number


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # "/api/v1/approvals/{approval_id}/approve"
    act: str  # "reconciler.acts.deploying:approve", loaded on first use
    access: Access
    summary: str
    response: str  # the model of the answer, by name (``web.models``)
    body: str | None = None  # the model of the request's body, by name
    params: tuple[Param, ...] = ()
    statuses: tuple[int, ...] = (404, 422)
    git: bool = False  # the act polls: it needs the git cache

    @property
    def name(self) -> str:
        return self.act.rpartition(":")[2]
