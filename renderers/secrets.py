"""Where the values of Secret objects come from: the server, or marked placeholders.

Only two objects ever carry secret values: the environment's ``nebula-secrets`` and each
database's ``<db>-credentials``. Every render of them takes an explicit source, and there is no
default: offline rendering (``nebula render``) passes ``PLACEHOLDERS``, the reconciler passes
``SecretValues`` read from its store. A value never shows in a repr, so it cannot leak into a
log line or an error message by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.errors import Blocker, ConfigurationError


@dataclass(frozen=True)
class Sensitive:
    """A secret value: compared and hashed by content, never shown."""

    value: str = field(repr=False)

    def __repr__(self) -> str:
        return "Sensitive(<hidden>)"

    def __str__(self) -> str:
        return "<hidden>"


@dataclass(frozen=True)
class Placeholders:
    """Offline rendering: Secret objects carry clearly marked placeholders, never values."""

    def secret(self, name: str) -> str:
        return f"<secret {name}: set on the server with nebula secret set>"

    def password(self) -> str:
        return "<generated on the server>"


PLACEHOLDERS = Placeholders()


@dataclass(frozen=True)
class SecretValues:
    """The server-side secrets of one project environment, as the reconciler holds them."""

    values: tuple[tuple[str, Sensitive], ...] = field(default=(), repr=False)
    where: str = ""  # "shop/production", for the message when one is missing

    @classmethod
    def of(cls, values: Mapping[str, str], where: str = "") -> SecretValues:
        return cls(tuple(sorted((k, Sensitive(v)) for k, v in values.items())), where)

    def secret(self, name: str) -> str:
        for key, value in self.values:
            if key == name:
                return value.value
        project, _, env = self.where.partition("/")
        raise ConfigurationError(
            f"Secret {name} is not set{f' for {self.where}' if self.where else ''}",
            code=Blocker.CONFIGURATION,
            hint=f"set it with: nebula secret set {project or 'PROJECT'} {env or 'ENV'} {name}",
        )

    def __repr__(self) -> str:
        return f"SecretValues({', '.join(k for k, _ in self.values)})"


SecretSource = SecretValues | Placeholders
PasswordSource = Sensitive | Placeholders
