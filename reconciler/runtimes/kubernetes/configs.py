"""Where a cluster's address and credentials come from: a kubeconfig context, or the pod's own
service account when Nebula runs inside the cluster.

Each environment of a project may name its own context (``nebula project set SLUG cluster.ENV
CONTEXT``), so this builds one client per context. No context and no kubeconfig inside a pod
means the in-cluster service account, as ``kubectl`` run in a pod would do.

A user whose credentials come from an ``exec`` plugin is not handed to the official client's
loader as is (it would run the plugin once, log its failure and go on without credentials):
Nebula runs the plugin itself (``credentials``), before any request that needs a token, through
the client's refresh hook.

Clients get short timeouts and at most one reconnect: retrying is the engine's job, with its
own count per stage, and a client that waits minutes on a dead API server would hold a
reconciler's lease for nothing.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigLoader
from urllib3 import BaseHTTPResponse
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import ReadTimeoutError
from urllib3.util.retry import Retry

from reconciler.clock import Clock, SystemClock
from reconciler.errors import ConfigurationError
from reconciler.runtimes.cluster import Credentials
from reconciler.runtimes.kubernetes.credentials import ExecCredentials, Plugin

IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"
DEFAULT_KUBECONFIG = Path("~/.kube/config")


@dataclass(frozen=True)
class Timeouts:
    connect: float = 5.0
    read: float = 20.0
    plugin: float = 30.0  # an exec credential plugin's run


@dataclass(frozen=True)
class Connection:
    api_client: client.ApiClient
    in_cluster: bool
    context: str | None  # the kubeconfig context asked for (None: the current one, or in-cluster)
    server: str
    timeouts: Timeouts = Timeouts()
    name: str | None = None  # the kubeconfig context used, by name (None in-cluster)
    credentials: Credentials | None = None  # what kind; None: the user has none
    plugin: ExecCredentials | None = None  # where the token comes from, for ``exec``

    def secrets(self) -> tuple[str, ...]:
        """What must never appear in a message: the bearer token (as loaded now: in-cluster
        tokens are refreshed), a basic-auth password."""
        cfg = self.api_client.configuration
        values = [str(v) for v in (cfg.api_key or {}).values()]
        values += [str(v).split(" ", 1)[-1] for v in (cfg.api_key or {}).values()]
        values += [str(cfg.password)] if cfg.password else []
        return tuple(values)


class ReconnectOnce(Retry):
    """Sends a request again once when the connection broke before any answer came: a
    kept-alive connection the server had just closed. Every request Nebula sends is idempotent
    (reads, server-side apply, deletes), so any verb may go again. A server too slow to answer
    is not asked twice: the engine counts those retries itself, per stage."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if isinstance(error, ReadTimeoutError):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


def streaming_client(connection: Connection, pool_size: int = 128) -> client.ApiClient:
    """A client of its own for watches, with the connection's address, credentials and
    headers: each watch holds a connection for minutes, and in the requests' pool they would
    take the connections that the checks' requests reuse."""
    cfg = copy.deepcopy(connection.api_client.configuration)
    cfg.connection_pool_maxsize = pool_size
    streams = client.ApiClient(cfg)
    # The same dict, so a header set on the connection later applies to watches too.
    streams.default_headers = connection.api_client.default_headers
    return streams


def close(api_client: client.ApiClient) -> None:
    """Closes a client and its pooled connections."""
    api_client.close()  # type: ignore[no-untyped-call]
    # Older releases of the client in our supported range leave the urllib3 pools (and
    # their sockets) open on close(); clearing them again is harmless.
    api_client.rest_client.pool_manager.clear()


def kubeconfig_path(kubeconfig: str | None, environ: Mapping[str, str]) -> Path:
    if kubeconfig:
        return Path(kubeconfig).expanduser()
    listed = environ.get("KUBECONFIG", "")
    first = next((p for p in listed.split(os.pathsep) if p), "")
    return Path(first).expanduser() if first else DEFAULT_KUBECONFIG.expanduser()


def connect(
    context: str | None = None,
    kubeconfig: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    timeouts: Timeouts | None = None,
    clock: Clock | None = None,
) -> Connection:
    env = os.environ if environ is None else environ
    timeouts = timeouts or Timeouts()
    cfg = client.Configuration()
    in_cluster = context is None and kubeconfig is None and bool(env.get(IN_CLUSTER_HOST))
    name: str | None = None
    kind: Credentials | None = Credentials.IN_CLUSTER
    plugin: ExecCredentials | None = None
    if in_cluster:
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise ConfigurationError(
                f"Nebula runs in a cluster but cannot read its service account: {_first_line(exc)}",
                hint="mount the service account token, or set a kubeconfig context",
            ) from exc
    else:
        path = kubeconfig_path(kubeconfig, env)
        which = f"context '{context}'" if context else "the current context"
        try:
            loaded = _load(path, context)
            name, kind = loaded.name, loaded.credentials
            loaded.loader.load_and_set(cfg)
        except (ConfigException, OSError, ValueError, TypeError, KeyError, yaml.YAMLError) as exc:
            # The library's messages quote sections of the file; name the problem, not them.
            raise ConfigurationError(
                f"cannot use {which} of the kubeconfig {path}: {_first_line(exc)}",
                hint="check the context name with `kubectl config get-contexts`",
            ) from exc
        if loaded.plugin is not None:
            plugin = ExecCredentials(
                loaded.plugin,
                clock or SystemClock(),
                context=name or "",
                timeout=timeouts.plugin,
            )
            _use_plugin(cfg, plugin)
    cfg.retries = ReconnectOnce(
        total=1, connect=1, read=1, redirect=0, status=0, other=0, allowed_methods=None
    )
    api_client = client.ApiClient(cfg)
    api_client.user_agent = "nebula"
    return Connection(
        api_client,
        in_cluster,
        None if in_cluster else context,
        cfg.host,
        timeouts,
        name,
        kind,
        plugin,
    )


@dataclass(frozen=True)
class _Loaded:
    loader: Any  # the official client's KubeConfigLoader, without the user's ``exec``
    name: str | None
    credentials: Credentials | None
    plugin: Plugin | None


def _load(path: Path, context: str | None) -> _Loaded:
    """The kubeconfig's context, as the official loader reads it, except that a user's ``exec``
    section is taken out and returned as a ``Plugin`` for Nebula to run itself."""
    if not path.is_file():
        raise ConfigurationError(
            f"no kubeconfig at {path}, and Nebula is not running inside a cluster",
            hint="set KUBECONFIG, or run Nebula in the cluster with a service account",
        )
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ConfigException("Invalid kube-config file. No configuration found.")
    name = context or raw.get("current-context") or None
    entry = _named(raw.get("contexts"), name).get("context") or {}
    user_entry = _named(raw.get("users"), entry.get("user"))
    user = user_entry.get("user") or {}
    cluster = _named(raw.get("clusters"), entry.get("cluster")).get("cluster") or {}
    kind = _credentials(user)
    plugin = None
    if kind is Credentials.EXEC:
        plugin = Plugin.from_kubeconfig(
            user["exec"], where=f"user '{user_entry.get('name')}'", base=path.parent,
            cluster=cluster,
        )  # fmt: skip
        user_entry["user"] = {k: v for k, v in user.items() if k != "exec"}
    loader = KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=raw, active_context=context, config_base_path=str(path.parent)
    )
    return _Loaded(loader, name, kind, plugin)


def _named(entries: Any, name: Any) -> dict[str, Any]:
    """The entry of a kubeconfig list with this name ({} if none: the loader says why)."""
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return {}


def _credentials(user: Mapping[str, Any]) -> Credentials | None:
    """What the official client would sign in with, in its order: an auth provider's or the
    user's token, then ``exec``, then a client certificate (basic auth counts as a token)."""
    if user.get("auth-provider") or user.get("token") or user.get("tokenFile"):
        return Credentials.TOKEN
    if user.get("exec"):
        return Credentials.EXEC
    if user.get("client-certificate") or user.get("client-certificate-data"):
        return Credentials.CLIENT_CERTIFICATE
    if user.get("username") and user.get("password"):
        return Credentials.TOKEN
    return None


def _use_plugin(cfg: client.Configuration, plugin: ExecCredentials) -> None:
    """Each request asks ``plugin`` for its token through the client's refresh hook (called
    while the request's headers are made). A plain function, not a bound method: copying the
    configuration for the watches' client copies the hook, and both must share one plugin."""

    def refresh(configuration: client.Configuration) -> None:
        configuration.api_key["BearerToken"] = f"Bearer {plugin.token()}"

    cfg.api_key["BearerToken"] = ""  # the client sends a token only when this key exists
    cfg.refresh_api_key_hook = refresh  # type: ignore[assignment]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    # "Invalid kube-config file. Expected key token in {...}" quotes the section: cut it.
    return line.split(" in {", 1)[0].split(": {", 1)[0][:200]
