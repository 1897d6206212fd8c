"""The one place that sends requests to the API server, through the official client.

Only this module, ``configs``, ``failures`` and ``streams`` (the watch) import ``kubernetes``
(or urllib3) for I/O; ``quotas`` borrows its quantity parser. Watches get a client of their
own (``stream``), so the connections they hold open never starve the requests' pool.

Bodies go and come as plain JSON mappings, not the client's generated models: manifests are
already dicts, server-side apply needs the object exactly as rendered, and a CronJob served
only as ``batch/v1beta1`` has no model in a client generated for newer servers. Every answer
or failure is turned into our errors here (``failures``), so nothing above imports the client.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import urllib3
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from reconciler.core.states import Blocker
from reconciler.errors import TransientError
from reconciler.runtimes.kubernetes import configs, failures
from reconciler.runtimes.kubernetes.configs import Connection

JSON = dict[str, Any]
Query = Sequence[tuple[str, str]]
JSON_TYPE = "application/json"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Answer:
    """An answer whatever its status (the service proxy's, where a 503 is a finding)."""

    status: int
    body: bytes

    def text(self, limit: int = 200) -> str:
        return " ".join(self.body[:limit].decode(errors="replace").split())


class Transport:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._client = connection.api_client
        self._timeout = (connection.timeouts.connect, connection.timeouts.read)
        self._lock = threading.Lock()
        self._streams: Any = None  # the watches' own client, made on the first watch

    def close(self) -> None:
        """Closes both clients' connections (stop the watches first)."""
        configs.close(self._client)
        with self._lock:
            streams, self._streams = self._streams, None
        if streams is not None:
            configs.close(streams)

    def redactor(self) -> failures.Redactor:
        return failures.Redactor(self.connection.secrets())

    def call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON_TYPE,
        blocker: Blocker | None = None,
        missing_ok: bool = False,
        sensitive: bool = False,
    ) -> JSON | None:
        """The decoded answer; None for a 404 when ``missing_ok``, else our error.

        ``what`` completes "could not ..." in messages; ``blocker`` is the code of a definitive
        refusal that names no better one; ``sensitive`` keeps the server's words out of the
        message (they may quote a Secret's values back).
        """
        answer = self.raw(
            method,
            path,
            what=what,
            query=query,
            body=body,
            content_type=content_type,
            blocker=blocker,
        )
        if answer.status == 404 and missing_ok:
            return None
        if answer.status >= 400:
            raise failures.from_status(
                answer.status,
                answer.body,
                what=what,
                blocker=blocker,
                redact=self.redactor(),
                sensitive=sensitive,
            )
        if not answer.body:
            return {}
        try:
            decoded = json.loads(answer.body)
        except ValueError as exc:
            raise TransientError(
                f"Kubernetes API answered a request to {what} with something that is not JSON",
                status=answer.status,
            ) from exc
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    def get(
        self,
        path: str,
        *,
        what: str,
        query: Query = (),
        missing_ok: bool = False,
        blocker: Blocker | None = None,
    ) -> JSON | None:
        return self.call(
            "GET", path, what=what, query=query, missing_ok=missing_ok, blocker=blocker
        )

    def items(self, path: str, *, what: str, query: Query = ()) -> list[JSON]:
        """A list's items (a namespace that does not exist lists nothing)."""
        found = self.call("GET", path, what=what, query=query, missing_ok=True)
        return list((found or {}).get("items") or [])

    def stream(
        self, path: str, *, what: str, query: Query = (), read_timeout: float
    ) -> urllib3.BaseHTTPResponse:
        """Opens a streaming GET (a watch) and returns the response unread: the caller reads
        it line by line and closes it. ``read_timeout`` is how long it may go quiet."""
        with self._lock:
            if self._streams is None:
                self._streams = configs.streaming_client(self.connection)
            streams = self._streams
        try:
            request = streams.param_serialize(
                "GET",
                path,
                query_params=list(query),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            answer = streams.call_api(
                *request, _request_timeout=(self.connection.timeouts.connect, read_timeout)
            )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise failures.from_exception(
                exc, what=what, blocker=None, redact=self.redactor()
            ) from exc
        response: urllib3.BaseHTTPResponse = answer.response
        self._answered(int(answer.status), request)
        if answer.status >= 400:
            try:
                body = response.read()
            except (urllib3.exceptions.HTTPError, OSError):
                body = b""
            finally:
                response.release_conn()
            raise failures.from_status(
                int(answer.status), body, what=what, blocker=None, redact=self.redactor()
            )
        return response

    def _answered(self, status: int, request: tuple[Any, ...]) -> None:
        """A 401 to a credential plugin's token: the plugin runs again for the next request
        (the token was revoked, or the cluster's clock runs ahead of its expiry)."""
        plugin = self.connection.plugin
        if status == 401 and plugin is not None:
            sent = str(request[2].get("Authorization") or request[2].get("authorization") or "")
            plugin.forget(sent.removeprefix("Bearer "))

    def raw(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON_TYPE,
        blocker: Blocker | None = None,
        accept: str = "application/json",
    ) -> Answer:
        """Sends one request; only a failure to get an answer at all raises."""
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            request = self._client.param_serialize(
                method,
                path,
                query_params=list(query),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._client.call_api(*request, _request_timeout=self._timeout)
            data = response.read() or b""  # type: ignore[no-untyped-call]
            self._answered(int(response.status), request)
            return Answer(int(response.status), bytes(data))
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise failures.from_exception(
                exc, what=what, blocker=blocker, redact=self.redactor()
            ) from exc
