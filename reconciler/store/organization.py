"""The organization's tables: members and their API tokens, policies and freeze windows
(``schema`` names them with the rest; grants, which name a project, live there)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
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
    member: Mapped[Member] = relationship()


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
