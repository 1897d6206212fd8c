"""The test kubelet's logs endpoint: what the API server calls for `pods/log`.

The API server reaches it over TLS through the pod network at the node's address and kubelet
port; with no kubelet CA configured it does not verify the certificate, as in many clusters.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.infra.certs import self_signed
from tests.infra.quiet import QuietHandler

# (namespace, pod, container) -> the container's log, or None for an unknown container
LogLookup = Callable[[str, str, str], "str | None"]


class LogServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    lookup: LogLookup
    context: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        # TLS in the connection's own thread, so one bad handshake blocks nobody else.
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError:
            return
        with tls, contextlib.suppress(OSError):
            super().finish_request(tls, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    @property
    def port(self) -> int:
        port: int = self.server_address[1]
        return port

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(QuietHandler):
    server: LogServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404)
            return
        text = self.server.lookup(parts[1], parts[2], parts[3])
        if text is None:
            self.send_error(404, "container not found")
            return
        tail = parse_qs(url.query).get("tailLines")
        if tail:
            text = "".join(text.splitlines(keepends=True)[-int(tail[0]) :])
        self.answer(200, text.encode(), [("Content-Type", "text/plain")])


def serve_logs(workdir: Path, lookup: LogLookup) -> LogServer:
    pair = self_signed(workdir, "kubelet")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert_path, pair.key_path)
    server = LogServer(("127.0.0.1", 0), _Handler)
    server.lookup = lookup
    server.context = context
    threading.Thread(
        target=server.serve_forever, args=(0.1,), name="kubelet-logs", daemon=True
    ).start()
    return server
