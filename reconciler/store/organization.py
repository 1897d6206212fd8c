"""The organization's tables: members and their API tokens (and single sign-on sessions, which
are tokens too), sign-ins under way, policies and freeze windows (``schema`` names them with the
rest; grants, which name a project, live there)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from reconciler.store.base import Base


class Member(Base):
    __tablename__ = "members"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    slack_id: Mapped[str | None] = mapped_column(String(40), unique=True)
    email: Mapped[str | None] = mapped_column(String(254), unique=True)  # for single sign-on
    oidc_subject: Mapped[str | None] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime]


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"))
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    digest: Mapped[str] = mapped_column(String(64))  # sha256 of the whole token
    name: Mapped[str | None] = mapped_column(String(100))  # what it is for: "ci", "laptop"
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]  # refused from then on (401 "token expired")
    last_used_at: Mapped[datetime | None]
    via: Mapped[str | None] = mapped_column(String(10))  # "sso": a single sign-on session
    admin_for_session: Mapped[bool] = mapped_column(default=False)  # by the provider's groups
    member: Mapped[Member] = relationship()


class SignInRow(Base):
    """A single sign-on under way: what Nebula must remember between sending a person (or a
    device) to the provider and the provider's answer. The handle its browser or command line
    holds is stored as a digest; the nonce, PKCE verifier and device code are encrypted."""

    __tablename__ = "sign_ins"
    id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the handle
    kind: Mapped[str] = mapped_column(String(10))  # page, device, loopback
    state: Mapped[str | None] = mapped_column(String(100))
    secrets: Mapped[bytes] = mapped_column(LargeBinary)
    redirect_uri: Mapped[str | None] = mapped_column(String(2000))
    next_path: Mapped[str | None] = mapped_column(String(2000))  # the page to return to
    interval: Mapped[int] = mapped_column(default=5)  # seconds between device polls
    next_poll_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class Setting(Base):
    """Organization policies and server-side settings, as text."""

    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class FreezeWindowRow(Base):
    __tablename__ = "freeze_windows"
    id: Mapped[int] = mapped_column(primary_key=True)
    days: Mapped[str] = mapped_column(String(40))
    start: Mapped[str] = mapped_column(String(5))
    end: Mapped[str] = mapped_column(String(5))
    zone: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
