"""Server settings: environment variables, or the same keys in ``nebula-server.toml``.

Read once at the edge (CLI or server start) and passed down; nothing below reads
``os.environ`` itself, so tests set settings explicitly.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path

from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError

DEFAULT_STATE_DIR = Path(".nebula")


@dataclass(frozen=True)
class Settings:
    database_url: str = ""
    cluster: str = "simulated"
    # The kubeconfig for NEBULA_CLUSTER=kubernetes: "" reads $KUBECONFIG, then ~/.kube/config
    # (or the in-cluster service account when neither exists and Nebula runs in a pod).
    kubeconfig: str = ""
    slack_bot_token: str = field(default="", repr=False)
    slack_signing_secret: str = field(default="", repr=False)
    slack_api_url: str = "https://slack.com/api/"
    slack_channel: str = ""
    public_url: str = "http://127.0.0.1:8080"
    approval_ttl: timedelta = timedelta(hours=24)
    readiness_timeout: timedelta = timedelta(minutes=5)
    route_activation_timeout: timedelta = timedelta(minutes=2)
    poll_interval: timedelta = timedelta(seconds=60)
    simulated_delay: timedelta = timedelta(seconds=1)
    simulated_faults: str = ""
    secret_key: str = field(default="", repr=False)
    state_dir: Path = DEFAULT_STATE_DIR
    git_cache_dir: Path | None = None
    git_credentials: str = field(default="", repr=False)  # "host=token,host2=token2"
    git_ssh_key: str = ""  # path of a private key for ssh:// remotes
    git_ssh_key_passphrase: str = field(default="", repr=False)
    replica_id: str = ""

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state_dir / 'nebula.db'}"

    @property
    def resolved_git_cache_dir(self) -> Path:
        return self.git_cache_dir or (self.state_dir / "git")

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


_DURATIONS = {
    "approval_ttl",
    "readiness_timeout",
    "route_activation_timeout",
    "poll_interval",
    "simulated_delay",
}


def load(environ: Mapping[str, str] | None = None, config_file: str | None = None) -> Settings:
    """Settings from a config file (if given) overlaid with ``NEBULA_*`` environment variables."""
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    if config_file:
        try:
            data = tomllib.loads(Path(config_file).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"cannot read settings file {config_file}: {exc}") from exc
        for key, value in data.items():
            values[key.lower().removeprefix("nebula_")] = str(value)
    for key, value in env.items():
        if key.startswith("NEBULA_"):
            values[key[len("NEBULA_") :].lower()] = value
    known = {f.name: f for f in fields(Settings)}
    kwargs: dict[str, object] = {}
    for key, raw in values.items():
        if key not in known:
            continue
        if key in _DURATIONS:
            kwargs[key] = parse_duration(raw, setting=f"NEBULA_{key.upper()}")
        elif key in ("state_dir", "git_cache_dir"):
            kwargs[key] = Path(raw)
        else:
            kwargs[key] = raw
    settings = Settings(**kwargs)  # type: ignore[arg-type]
    if settings.cluster not in ("simulated", "kubernetes"):
        raise ConfigurationError(
            f"NEBULA_CLUSTER is {settings.cluster!r}", hint="use simulated or kubernetes"
        )
    return settings
