"""The informer's source on the wire, against a scripted HTTP server standing in for the API
server: paged lists with the kind's selectors, watch events as plain JSON through
``kubernetes.watch.Watch``, a 410 Gone in the stream or as the answer, other errors, and a
watch cut by ``stop()``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from reconciler.errors import TransientError
from reconciler.runtimes.kubernetes import configs
from reconciler.runtimes.kubernetes.configs import Connection, Timeouts
from reconciler.runtimes.kubernetes.discovery import Resource
from reconciler.runtimes.kubernetes.kinds import KINDS
from reconciler.runtimes.kubernetes.streams import ApiSource
from reconciler.runtimes.kubernetes.transport import Transport
from reconciler.runtimes.kubernetes.watching import Expired


class Script:
    """What the stand-in answers: list pages in turn, and for a watch either a status or the
    lines of a stream (then, with ``hold``, it keeps the stream open until released)."""

    def __init__(self) -> None:
        self.pages: list[dict[str, Any]] = []
        self.watch_status = 200
        self.lines: list[dict[str, Any]] = []
        self.hold = False
        self.released = threading.Event()
        self.queries: list[dict[str, list[str]]] = []


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def source(script: Script) -> Iterator[ApiSource]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # a watch streams in chunks, one event a line

        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            script.queries.append(query)
            if "watch" not in query:
                self._json(200, script.pages.pop(0))
                return
            if script.watch_status != 200:
                self._json(script.watch_status, {"kind": "Status", "code": script.watch_status})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in script.lines:
                data = json.dumps(line).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            if script.hold:
                script.released.wait(10)
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.server_address[1]}"
    transport = Transport(
        Connection(client.ApiClient(cfg), False, None, cfg.host, Timeouts(1.0, 2.0))
    )
    resource = Resource("v1", "ConfigMap", "configmaps", True)
    yield ApiSource(transport, resource, "shop-prod", KINDS["ConfigMap"], quiet=5.0)
    script.released.set()
    transport.close()
    configs.close(transport.connection.api_client)
    server.shutdown()
    server.server_close()


def connected() -> None:
    pass


def item(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


def test_a_list_reads_every_page_with_the_kinds_selector(script: Script, source: ApiSource) -> None:
    script.pages = [
        {"metadata": {"resourceVersion": "40", "continue": "next"}, "items": [item("a", 3)]},
        {"metadata": {"resourceVersion": "40"}, "items": [item("b", 4)]},
    ]

    items, version = source.list()

    assert ([i["metadata"]["name"] for i in items], version) == (["a", "b"], "40")
    assert [q.get("continue") for q in script.queries] == [None, ["next"]]
    assert all(
        q["labelSelector"] == ["app.kubernetes.io/managed-by=nebula"] for q in script.queries
    )
    assert all(q["limit"] == ["500"] for q in script.queries)


def test_a_watch_yields_plain_events_and_410_in_the_stream_is_expired(
    script: Script, source: ApiSource
) -> None:
    script.lines = [
        {"type": "ADDED", "object": {"kind": "ConfigMap", **item("a", 41)}},
        {
            "type": "BOOKMARK",
            "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "45"}},
        },
        {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}},
    ]
    seen = []
    accepted: list[bool] = []

    with pytest.raises(Expired):
        for event in source.watch("40", 300, lambda: accepted.append(True)):
            seen.append(event)

    assert accepted == [True]  # once, as the API server accepted the watch
    assert seen == [
        {"type": "ADDED", "object": {"kind": "ConfigMap", **item("a", 41)}},
        {
            "type": "BOOKMARK",
            "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "45"}},
        },
    ]
    [query] = script.queries
    assert {k: v[0] for k, v in query.items()} == {
        "watch": "true",
        "resourceVersion": "40",
        "timeoutSeconds": "300",
        "allowWatchBookmarks": "true",
        "labelSelector": "app.kubernetes.io/managed-by=nebula",
    }


def test_another_error_in_the_stream_is_ours_and_not_expired(
    script: Script, source: ApiSource
) -> None:
    script.lines = [
        {"type": "ERROR", "object": {"code": 500, "reason": "InternalError", "message": "etcd"}}
    ]

    with pytest.raises(TransientError) as raised:
        list(source.watch("40", 300, connected))

    assert not isinstance(raised.value, Expired)
    assert str(raised.value).startswith("Kubernetes API could not watch ConfigMap objects in ")


def test_an_error_event_that_is_no_status_is_transient(script: Script, source: ApiSource) -> None:
    script.lines = [{"type": "ERROR", "object": {"code": 500}}]

    with pytest.raises(TransientError, match="unreadable error event"):
        list(source.watch("40", 300, connected))


def test_a_watch_answered_410_is_expired(script: Script, source: ApiSource) -> None:
    script.watch_status = 410
    accepted: list[bool] = []

    with pytest.raises(Expired):
        list(source.watch("40", 300, lambda: accepted.append(True)))

    assert accepted == []


def test_stop_cuts_a_watch_in_progress_without_an_error(script: Script, source: ApiSource) -> None:
    script.lines = [{"type": "ADDED", "object": item("a", 41)}]
    script.hold = True
    events = source.watch("40", 300, connected)

    first = next(events)
    source.stop()

    assert first["object"] == item("a", 41)
    assert list(events) == []
