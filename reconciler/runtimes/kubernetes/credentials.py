"""Tokens from a kubeconfig user's ``exec`` credential plugin (``client.authentication.k8s.io``),
run by Nebula itself and kept in memory only.

Managed clusters (EKS, GKE, AKS) hand out short-lived tokens this way, so that nothing holds a
standing credential for them. The official client runs the plugin too, but when it fails it
logs the plugin's words and goes on without credentials, so the API server's answer (403 for
``system:anonymous``, or 401) is all a deployment would show. Here a plugin that fails (exits
non-zero, prints no ExecCredential, takes too long) is ``UnreachableError``, the ``delivery``
blocker, naming the plugin and the last line of its stderr, which is where plugins say why.

The plugin runs without a terminal, in the kubeconfig's directory, with Nebula's environment
but its ``NEBULA_*`` settings, plus the section's ``env``. The token is kept until shortly before its ``expirationTimestamp`` (``fresh_until``), then the
plugin runs again on the next request; one without an expiry is kept until the API server
refuses it (401: ``forget``). Nothing is written to disk: the plugin's answer lives in this
object. A plugin that gives a client certificate instead of a token is refused, since using one
would mean writing its key to a file for the TLS library. A failure is remembered for a few
seconds (``RETRY_AFTER``) so that the requests of one tick do not each run a broken plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reconciler.clock import Clock
from reconciler.errors import ConfigurationError, UnreachableError, shown

API_GROUP = "client.authentication.k8s.io"
API_VERSIONS = (f"{API_GROUP}/v1", f"{API_GROUP}/v1beta1")
MARGIN = timedelta(seconds=60)  # refreshed this long before expiry (at most half its life)
RETRY_AFTER = timedelta(seconds=5)  # a failure is answered again for this long
TIMEOUT = 30.0  # seconds a plugin may take
NEBULA_PREFIX = "NEBULA_"  # variables not passed on to a plugin


@dataclass(frozen=True)
class Plugin:
    """A kubeconfig user's ``exec`` section, checked."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = API_VERSIONS[0]
    cwd: Path | None = None  # relative commands are found from the kubeconfig's directory
    install_hint: str | None = None
    cluster: Mapping[str, Any] | None = field(default=None, compare=False)  # provideClusterInfo

    @classmethod
    def from_kubeconfig(
        cls, section: Mapping[str, Any], *, where: str, base: Path, cluster: Mapping[str, Any]
    ) -> Plugin:
        """The ``exec`` section of a user; ``where`` names it in errors."""
        command = section.get("command")
        version = section.get("apiVersion")
        if not isinstance(command, str) or not command:
            raise ConfigurationError(f"{where}: exec has no command")
        if version not in API_VERSIONS:
            raise ConfigurationError(
                f"{where}: exec apiVersion {shown(version)} is not one Nebula speaks",
                hint=f"use {API_VERSIONS[0]}",
            )
        args = section.get("args") or []
        env = section.get("env") or []
        try:
            pairs = tuple((str(e["name"]), str(e["value"])) for e in env)
        except (KeyError, TypeError) as exc:
            raise ConfigurationError(f"{where}: exec env entries need a name and a value") from exc
        if "/" in command and not os.path.isabs(command):
            command = str(base / command)  # relative to the kubeconfig, as kubectl does
        hint = section.get("installHint")
        return cls(
            command,
            tuple(str(a) for a in args),
            pairs,
            str(version),
            base,
            str(hint).strip() if hint else None,
            _cluster_info(cluster) if section.get("provideClusterInfo") else None,
        )

    @property
    def name(self) -> str:
        return os.path.basename(self.command)


def _cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """What ``provideClusterInfo`` passes: the server and how to trust it, never a credential."""
    info: dict[str, Any] = {"server": cluster.get("server")}
    for key, into in (
        ("certificate-authority-data", "certificate-authority-data"),
        ("insecure-skip-tls-verify", "insecure-skip-tls-verify"),
        ("tls-server-name", "tls-server-name"),
        ("proxy-url", "proxy-url"),
    ):
        if cluster.get(key) is not None:
            info[into] = cluster[key]
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == f"{API_GROUP}/exec":
            info["config"] = extension.get("extension")
    return info


@dataclass(frozen=True)
class _Token:
    value: str
    fresh_until: datetime | None  # None: until the API server refuses it


class ExecCredentials:
    """The token of one plugin, shared by every client of one connection (thread-safe: one
    run at a time, and the others wait for its answer instead of running it again)."""

    def __init__(
        self, plugin: Plugin, clock: Clock, *, context: str, timeout: float = TIMEOUT
    ) -> None:
        self.plugin = plugin
        self.runs = 0
        self._clock = clock
        self._what = f"the credential plugin {plugin.name} of context '{context}'"
        self._timeout = timeout
        self._lock = threading.Lock()
        self._token: _Token | None = None
        self._failed: tuple[datetime, UnreachableError] | None = None

    def token(self) -> str:
        """A token fresh enough to send now: the one kept, or the plugin's new one."""
        with self._lock:
            now = self._clock.now()
            kept = self._token
            if kept is not None and (kept.fresh_until is None or now < kept.fresh_until):
                return kept.value
            self._token = None
            if self._failed is not None and now < self._failed[0] + RETRY_AFTER:
                raise self._failed[1]
            try:
                self._token = self._run(now)
            except UnreachableError as exc:
                self._failed = (now, exc)
                raise
            self._failed = None
            return self._token.value

    def forget(self, token: str) -> None:
        """The API server refused ``token`` (401): the next request runs the plugin again."""
        with self._lock:
            if self._token is not None and self._token.value == token:
                self._token = None

    def _run(self, now: datetime) -> _Token:
        self.runs += 1
        plugin = self.plugin
        info: dict[str, Any] = {"interactive": False}
        if plugin.cluster is not None:
            info["cluster"] = dict(plugin.cluster)
        request = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": info}
        # Nebula's own settings (the store's URL, its keys) are none of the plugin's business.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(NEBULA_PREFIX)}
        env = {**inherited, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(request)}
        try:
            done = subprocess.run(
                [plugin.command, *plugin.args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                cwd=plugin.cwd,
                env=env,
                timeout=self._timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            said = _last_line(exc.stderr)
            raise self._error(
                f"did not answer within {self._timeout:g}s" + (f": {said}" if said else "")
            ) from exc
        except OSError as exc:
            raise self._error(
                f"could not be run: {exc.strerror or exc}", hint=plugin.install_hint
            ) from exc
        if done.returncode != 0:
            said = _last_line(done.stderr)
            raise self._error(
                f"exited with status {done.returncode}"
                + (f": {said}" if said else " and said nothing on stderr")
            )
        return self._answer(done.stdout, now)

    def _answer(self, stdout: bytes, now: datetime) -> _Token:
        """The token and how long to keep it; never quotes stdout (it holds the token)."""
        try:
            answer = json.loads(stdout)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise self._error("printed no ExecCredential JSON")
        if answer.get("apiVersion") != self.plugin.api_version:
            raise self._error(
                f"answered apiVersion {shown(answer.get('apiVersion'))}, "
                f"not {self.plugin.api_version}"
            )
        found = answer.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        token = status.get("token")
        if not token and status.get("clientCertificateData"):
            raise self._error(
                "gave a client certificate: Nebula takes only tokens from credential plugins, "
                "as it writes no credential to disk"
            )
        if not isinstance(token, str) or not token:
            raise self._error("gave an ExecCredential without a token")
        expiry = status.get("expirationTimestamp")
        if not expiry:
            return _Token(token, None)
        try:
            expires = datetime.fromisoformat(str(expiry).replace("Z", "+00:00"))
        except ValueError:
            raise self._error(
                f"gave an expirationTimestamp that is not a time: {shown(expiry)}"
            ) from None
        if expires.tzinfo is None:
            raise self._error(f"gave an expirationTimestamp without a zone: {shown(expiry)}")
        margin = min(MARGIN, max(expires - now, timedelta(0)) / 2)
        return _Token(token, expires - margin)

    def _error(self, what: str, hint: str | None = None) -> UnreachableError:
        return UnreachableError(f"{self._what} {what}", hint=hint)


def _last_line(output: bytes | str | None) -> str:
    """The last line a plugin wrote on stderr, escaped and cut: where plugins say why."""
    if not output:
        return ""
    text = output.decode(errors="replace") if isinstance(output, bytes) else output
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return shown(lines[-1], 200, quote=False) if lines else ""
