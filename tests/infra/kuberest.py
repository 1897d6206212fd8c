"""A minimal JSON client for the Kubernetes API, used by the test infrastructure itself.

The test kubelet and the fixtures talk to the API server through this rather than through
the `kubernetes` package, so the infrastructure does not change behaviour with the client
library's version (its generated models validate and reshape bodies); the code under test
uses the real `kubernetes` client.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.parse
from pathlib import Path
from typing import Any

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class KubeRestError(Exception):
    """The API server answered with an error status."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        try:
            decoded = json.loads(body)
            self.reason = str(decoded.get("reason", ""))
            self.message = str(decoded.get("message", ""))
        except ValueError:
            self.reason = ""
            self.message = body[:300].decode(errors="replace")
        super().__init__(f"{method} {path}: {status} {self.reason} {self.message}")


class KubeRest:
    def __init__(self, server: str, token: str, ca_path: Path, timeout: float = 15.0) -> None:
        parsed = urllib.parse.urlsplit(server)
        if parsed.hostname is None or parsed.port is None:
            raise ValueError(f"server URL needs a host and port: {server}")
        self.host = parsed.hostname
        self.port = parsed.port
        self._token = token
        self._context = ssl.create_default_context(cafile=str(ca_path))
        self._timeout = timeout
        self._local = threading.local()

    def _connection(self, fresh: bool = False) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            conn = http.client.HTTPSConnection(
                self.host, self.port, context=self._context, timeout=self._timeout
            )
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Any:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        payload: bytes | None = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            conn = self._connection(fresh=attempt > 0)
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
                break
            except (
                ConnectionError,
                http.client.RemoteDisconnected,
                http.client.CannotSendRequest,
                http.client.BadStatusLine,
            ):
                # A kept-alive connection the server has since closed; one fresh retry.
                if attempt:
                    raise
        if response.status >= 400:
            raise KubeRestError(method, path, response.status, data)
        if not data:
            return None
        if response.getheader("Content-Type", "").startswith("application/json"):
            return json.loads(data)
        return data.decode(errors="replace")

    def get(self, path: str, query: dict[str, str] | None = None) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)

    def patch(
        self,
        path: str,
        body: Any,
        content_type: str = MERGE_PATCH,
        query: dict[str, str] | None = None,
    ) -> Any:
        return self.request("PATCH", path, body, content_type=content_type, query=query)

    def delete(self, path: str, query: dict[str, str] | None = None) -> Any:
        return self.request("DELETE", path, query=query)
