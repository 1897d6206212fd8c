"""A kind's list and watch in one namespace, on the API server: the informer's ``Source``.

Lists are paged (500 objects a page) and carry the kind's label and field selectors. Watches
go through the official client's ``kubernetes.watch.Watch`` (its line splitting, ERROR events
raised as ``ApiException``, ``stop()`` cutting the socket), with ``allowWatchBookmarks`` so
a quiet namespace still moves the resourceVersion on (the API server sends a bookmark about
every minute, and one before it ends a watch). The watch's read timeout is longer than that
gap: a connection that says nothing for longer is dead, and the informer lists again.

Events come as plain JSON, as everything else in this runtime does: the watch is given no
model to deserialize into.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import urllib3.exceptions
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from reconciler.errors import NebulaError, TransientError
from reconciler.runtimes.kubernetes import failures
from reconciler.runtimes.kubernetes.discovery import Discovery, Resource
from reconciler.runtimes.kubernetes.kinds import Watched
from reconciler.runtimes.kubernetes.transport import JSON, Query, Transport
from reconciler.runtimes.kubernetes.watching import Expired, Source, Stopped

PAGE = 500
QUIET = 90.0  # seconds a watch may say nothing (bookmarks come about every 60 s)


class ApiSource:
    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        namespace: str,
        watched: Watched,
        *,
        quiet: float = QUIET,
    ) -> None:
        self._transport = transport
        self._path = resource.collection(namespace)
        self._namespace = namespace
        self._watched = watched
        self._quiet = quiet
        self._lock = threading.Lock()
        self._stopped = False
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._response: Any = None
        self._connected: Callable[[], None] = lambda: None

    def _selectors(self) -> Query:
        query = []
        if self._watched.label_selector:
            query.append(("labelSelector", self._watched.label_selector))
        if self._watched.field_selector:
            query.append(("fieldSelector", self._watched.field_selector))
        return query

    def list(self) -> tuple[list[JSON], str]:
        items: list[JSON] = []
        version, token = "", ""
        while True:
            query = [*self._selectors(), ("limit", str(PAGE))]
            if token:
                query.append(("continue", token))
            page = self._transport.get(
                self._path,
                what=f"list {self._watched.kind} objects in {self._namespace}",
                query=query,
            )
            items += list((page or {}).get("items") or [])
            metadata = (page or {}).get("metadata") or {}
            version = version or str(metadata.get("resourceVersion") or "")
            token = str(metadata.get("continue") or "")
            if not token:
                return items, version

    def watch(
        self, version: str, timeout_seconds: int, connected: Callable[[], None]
    ) -> Iterator[JSON]:
        what = f"watch {self._watched.kind} objects in {self._namespace}"
        self._connected = connected
        try:
            # A lambda: Watch reads the function's return annotation to pick a model.
            for event in self._watch.stream(  # type: ignore[no-untyped-call]
                lambda **options: self._open(**options),
                resource_version=version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=True,
            ):
                if isinstance(event, dict):
                    yield {"type": event.get("type"), "object": event.get("raw_object")}
        except ApiException as exc:  # an ERROR event in the stream
            if exc.status == 410:
                raise Expired(f"Kubernetes API no longer has version {version} to {what}") from exc
            raise failures.from_exception(
                exc, what=what, blocker=None, redact=self._transport.redactor()
            ) from exc
        except NebulaError as exc:  # the watch request itself was answered with an error
            if getattr(exc, "status", None) == 410:
                raise Expired(f"Kubernetes API no longer has version {version} to {what}") from exc
            raise
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            with self._lock:
                if self._stopped:
                    return
            raise failures.from_exception(
                exc, what=what, blocker=None, redact=self._transport.redactor()
            ) from exc
        except (KeyError, TypeError) as exc:  # an ERROR event without the fields of a Status
            raise TransientError(
                f"Kubernetes API answered a request to {what} with an unreadable error event"
            ) from exc
        finally:
            with self._lock:
                self._response = None

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            response = self._response
        self._watch.stop()  # type: ignore[no-untyped-call]
        if response is not None:
            _cut(response)

    def _open(self, **options: Any) -> Any:
        """What ``Watch.stream`` calls for each watch request: the raw streaming response."""
        query = [
            ("watch", "true"),
            ("resourceVersion", str(options.get("resource_version") or "")),
            ("timeoutSeconds", str(options.get("timeout_seconds") or 300)),
            ("allowWatchBookmarks", "true"),
            *self._selectors(),
        ]
        with self._lock:
            if self._stopped:
                raise Stopped("the watch cache was stopped")
        response = self._transport.stream(
            self._path,
            what=f"watch {self._watched.kind} objects in {self._namespace}",
            query=query,
            read_timeout=self._quiet,
        )
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._response = response
        if stopped:
            response.close()
            response.release_conn()
            raise Stopped("the watch cache was stopped")
        self._connected()
        return response


def sources(
    transport: Transport, discovery: Discovery
) -> Callable[[Watched, str], tuple[Source, str] | None]:
    """The cache's ``Sources``: a kind's source where discovery says it is served."""

    def source(watched: Watched, namespace: str) -> tuple[Source, str] | None:
        resource = discovery.preferred(watched.group, watched.kind)
        if resource is None:
            return None
        return ApiSource(transport, resource, namespace, watched), resource.api_version

    return source


def _cut(response: Any) -> None:
    """Unblocks a thread reading ``response`` by shutting its socket down."""
    sock = _socket_of(response)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _socket_of(response: Any) -> socket.socket | None:
    """The socket a streaming response reads from. A response that ends its connection (the
    server said ``Connection: close``, as some proxies and load balancers do) holds the socket
    alone: http.client hands it over and forgets it on the connection, so it is found through
    the response's file instead, or a stopped watch would wait for its read timeout."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is None:
        reader = getattr(getattr(response, "_fp", None), "fp", None)
        sock = getattr(getattr(reader, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None
