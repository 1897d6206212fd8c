"""Saved contexts: which Nebula servers this person signed in to, with which token, and which
one is in use, like ``kubectl config`` contexts.

One TOML file, ``$NEBULA_CONFIG_HOME/config.toml`` (default ``~/.config/nebula``), written
atomically (a new file beside it, flushed, then renamed over it) with mode 0600 in a 0700
directory, since it holds tokens. A file that others may read is refused rather than used:
its tokens must be taken as seen, and the person told how to fix it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from reconciler.errors import ConfigurationError, NotFoundError
from reconciler.lazy import TOML

FILE = "config.toml"


@dataclass(frozen=True)
class Saved:
    """One context: a server, and the token (and who it signs in as) to use there."""

    name: str
    server: str
    token: str | None = None
    member: str | None = None


@dataclass
class Contexts:
    path: Path
    current: str | None = None
    saved: dict[str, Saved] = field(default_factory=dict)

    def get(self, name: str) -> Saved:
        found = self.saved.get(name)
        if found is None:
            known = ", ".join(sorted(self.saved)) or "none yet"
            raise NotFoundError(
                f"No context named {name!r} in {self.path} (contexts: {known})",
                hint="sign in with: nebula login URL --name NAME",
            )
        return found

    def in_use(self) -> Saved | None:
        return self.saved.get(self.current) if self.current else None

    def for_server(self, server: str) -> Saved | None:
        """The context saved for ``server`` (the one in use first), for ``--server URL``."""
        wanted = normal(server)
        ordered = [self.in_use(), *self.saved.values()]
        return next((s for s in ordered if s is not None and normal(s.server) == wanted), None)


def home(environ: Mapping[str, str]) -> Path:
    explicit = environ.get("NEBULA_CONFIG_HOME")
    if explicit:
        return Path(explicit)
    base = environ.get("XDG_CONFIG_HOME")
    if not base:
        try:
            base = str(Path.home() / ".config")
        except RuntimeError:  # no home directory to be found (a bare container's user)
            base = ".config"
    return Path(base) / "nebula"


def normal(server: str) -> str:
    """A server URL as contexts compare it: no trailing slash."""
    return server.rstrip("/")


def check_url(server: str) -> str:
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{server!r} is not a server URL", hint="e.g. https://nebula.example.com"
        )
    if parts.username or parts.password:
        raise ConfigurationError(
            "a server URL carries no credentials: they would be saved and shown",
            hint="give the token at the prompt, or with --token-stdin",
        )
    # urlsplit reads the scheme in any case; the URL kept (and connected to) says it plainly.
    return normal(urlunsplit(parts._replace(netloc=parts.netloc.lower())))


def private_channel(server: str) -> bool:
    """Whether a token sent to ``server`` stays private on the way: https, or this machine."""
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    loopback = host == "localhost" or host.startswith("127.") or host == "::1"
    return parts.scheme == "https" or loopback


def load(environ: Mapping[str, str]) -> Contexts:
    path = home(environ) / FILE
    try:
        with path.open("rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            data = TOML.get()(file.read().decode("utf-8"))
    except FileNotFoundError:
        return Contexts(path)
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8 (a ValueError), not TOML
        raise ConfigurationError(
            f"{path}: cannot read it ({exc})", hint="fix it, or remove it and sign in again"
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            f"{path} may be read by others (mode {stat.S_IMODE(mode):04o}): the tokens in it "
            "are not used",
            hint=f"chmod 600 {path}, then revoke any token someone else may have read "
            "(nebula token list, nebula token revoke ID)",
        )
    contexts = Contexts(path, current=_text(data.get("current")))
    table = data.get("contexts")
    for name, entry in (table if isinstance(table, dict) else {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("server"), str):
            contexts.saved[name] = Saved(
                name, entry["server"], _text(entry.get("token")), _text(entry.get("member"))
            )
    return contexts


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _quoted(text: str) -> str:
    # A JSON string is a TOML basic string (the same escapes), once DEL, which TOML wants
    # escaped and JSON does not, is; characters outside the BMP stay themselves (TOML takes
    # no surrogate pair escapes).
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def dumps(contexts: Contexts) -> str:
    lines = ["# Nebula's saved contexts (nebula login, nebula context use). It holds tokens:",
             "# keep it readable by you only.", ""]  # fmt: skip
    if contexts.current:
        lines += [f"current = {_quoted(contexts.current)}", ""]
    for saved in sorted(contexts.saved.values(), key=lambda s: s.name):
        lines.append(f"[contexts.{_quoted(saved.name)}]")
        lines.append(f"server = {_quoted(saved.server)}")
        for key in ("token", "member"):
            value = getattr(saved, key)
            if value:
                lines.append(f"{key} = {_quoted(value)}")
        lines.append("")
    return "\n".join(lines)


def save(contexts: Contexts) -> None:
    """Written whole, atomically, readable by its owner only."""
    directory = contexts.path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = directory / f".{FILE}.{os.getpid()}.new"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)  # whatever the umask made of it
            file.write(dumps(contexts))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, contexts.path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    with_directory = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(with_directory)
    finally:
        os.close(with_directory)


def with_saved(contexts: Contexts, saved: Saved, *, use: bool = True) -> Contexts:
    updated = replace(contexts, saved={**contexts.saved, saved.name: saved})
    if use:
        updated.current = saved.name
    return updated
