"""A fault-injecting HTTPS proxy between a Kubernetes client and the API server.

Requests pass through unchanged (watches stream) unless a rule matches them:

    rule = proxy.fail("PATCH", r"/services/web$", status=500, times=3)
    rule = proxy.hang("GET", r"/deployments/", seconds=30)   # until cleared or 30 s
    proxy.unreachable()   # connections refused (and open ones cut) until reachable()
    proxy.cut_streams()   # watches in progress end; new requests pass (or meet the rules)
    rule.hits             # how many requests the rule answered

The proxy serves its own TLS certificate to the client (the fault kubeconfig trusts it) and
talks TLS to the API server, verifying the API server's certificate.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.infra.certs import self_signed
from tests.infra.quiet import QuietHandler

if TYPE_CHECKING:
    import kubernetes.client

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
}


@dataclass
class Rule:
    method: str  # "*" for any
    path: re.Pattern[str]  # searched in the request target (path and query)
    status: int | None  # None: hang instead of answering
    times: int | None  # None: until cleared
    message: str = "injected fault"
    seconds: float = 30.0
    hits: int = 0
    released: threading.Event = field(default_factory=threading.Event)

    def wants(self, method: str, target: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return self.method in ("*", method) and self.path.search(target) is not None


@dataclass(frozen=True)
class Seen:
    method: str
    target: str
    outcome: str  # "forwarded", "status 500", "hang", "upstream error"


class FaultProxy:
    context = "nebula-test-faulty"
    kubeconfig: Path | None = None  # written by the fault_proxy fixture

    def __init__(self, upstream: str, upstream_ca: Path, workdir: Path) -> None:
        host, _, port = upstream.removeprefix("https://").partition(":")
        self.upstream_host, self.upstream_port = host, int(port)
        self._upstream_context = ssl.create_default_context(cafile=str(upstream_ca))
        pair = self_signed(workdir, "fault-proxy")
        self.ca_path = pair.cert_path
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(pair.cert_path, pair.key_path)
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self.seen: list[Seen] = []
        self._connections: set[socket.socket] = set()
        self._upstreams: set[http.client.HTTPSConnection] = set()
        self._server: _Server | None = None
        self.port = 0
        self.reachable()

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def api_client(self) -> kubernetes.client.ApiClient:
        """A `kubernetes` client that goes through this proxy."""
        from tests.infra.kubeserver import client_from_kubeconfig

        if self.kubeconfig is None:
            raise RuntimeError("no kubeconfig written for this proxy yet")
        return client_from_kubeconfig(self.kubeconfig, self.context)

    # -- scripting faults --------------------------------------------------------------------

    def fail(
        self,
        method: str,
        path: str,
        status: int = 500,
        times: int | None = 1,
        message: str = "injected fault",
    ) -> Rule:
        """Answer matching requests with `status` (a Kubernetes Status body)."""
        return self._add(Rule(method.upper(), re.compile(path), status, times, message))

    def hang(self, method: str, path: str, times: int | None = 1, seconds: float = 30.0) -> Rule:
        """Hold matching requests unanswered for `seconds` (or until cleared), then hang up."""
        return self._add(Rule(method.upper(), re.compile(path), None, times, seconds=seconds))

    def _add(self, rule: Rule) -> Rule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        """Drops every rule and lets hanging requests go; the proxy is reachable again."""
        with self._lock:
            rules, self._rules = self._rules, []
            self.seen.clear()
        for rule in rules:
            rule.released.set()
        self._cut_upstreams()
        self.reachable()

    def count(self, method: str = "*", path: str = "") -> int:
        """How many requests the proxy saw matching method and path regex, whatever happened."""
        pattern = re.compile(path)
        with self._lock:
            return sum(
                1
                for s in self.seen
                if method.upper() in ("*", s.method) and pattern.search(s.target)
            )

    # -- reachability ------------------------------------------------------------------------

    def unreachable(self) -> None:
        """Refuse new connections and cut open ones, as a dead network path would."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        self.cut_streams()

    def cut_streams(self) -> None:
        """Ends every request in progress (watches): their clients see the connection
        break, as when a load balancer or the API server drops it."""
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._cut_upstreams()

    def _cut_upstreams(self) -> None:
        """Ends requests still streaming (watches), whose clients may be long gone: the
        proxy would otherwise only notice at the next event, and hold the API server's
        graceful shutdown open until then."""
        with self._lock:
            upstreams = list(self._upstreams)
        for upstream in upstreams:
            if upstream.sock is not None:
                with contextlib.suppress(OSError):
                    upstream.sock.shutdown(socket.SHUT_RDWR)

    def reachable(self) -> None:
        if self._server is not None:
            return
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.proxy = self
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fault-proxy", daemon=True
        ).start()

    def close(self) -> None:
        self.clear()
        self.unreachable()

    # -- used by the handler -----------------------------------------------------------------

    def _match(self, method: str, target: str) -> Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.wants(method, target):
                    rule.hits += 1
                    return rule
        return None

    def _note(self, method: str, target: str, outcome: str) -> None:
        with self._lock:
            self.seen.append(Seen(method, target, outcome))

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _upstream(self) -> http.client.HTTPSConnection:
        conn = http.client.HTTPSConnection(
            self.upstream_host, self.upstream_port, context=self._upstream_context, timeout=60
        )
        with self._lock:
            self._upstreams.add(conn)
        return conn

    def _release(self, conn: http.client.HTTPSConnection) -> None:
        conn.close()
        with self._lock:
            self._upstreams.discard(conn)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    proxy: FaultProxy

    def finish_request(self, request: Any, client_address: Any) -> None:
        # TLS is set up here, in the connection's own thread, so a slow or broken client
        # handshake never blocks accepting other connections.
        try:
            tls = self.proxy._context.wrap_socket(request, server_side=True)
        except OSError:
            return
        with tls:
            self.proxy._track(tls, add=True)
            try:
                super().finish_request(tls, client_address)
            except OSError:
                pass
            finally:
                self.proxy._track(tls, add=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up mid-stream is part of the job


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    _conn: http.client.HTTPSConnection | None = None

    def do_GET(self) -> None:
        self._proxy()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def finish(self) -> None:
        super().finish()
        if self._conn is not None:
            self.server.proxy._release(self._conn)

    def _proxy(self) -> None:
        proxy = self.server.proxy
        method, target = self.command, self.path
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        rule = proxy._match(method, target)
        if rule is not None and rule.status is None:
            proxy._note(method, target, "hang")
            rule.released.wait(rule.seconds)
            self.close_connection = True
            return
        if rule is not None and rule.status is not None:
            proxy._note(method, target, f"status {rule.status}")
            self._answer(rule.status, rule.message)
            return
        try:
            response = self._forward(method, target, body)
        except (OSError, http.client.HTTPException) as exc:
            proxy._note(method, target, "upstream error")
            self._answer(502, f"fault proxy could not reach the API server: {exc}")
            return
        proxy._note(method, target, "forwarded")
        self._relay(response)

    def _forward(self, method: str, target: str, body: bytes | None) -> http.client.HTTPResponse:
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = self.server.proxy._upstream()
            try:
                self._conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                self._conn.putheader("Host", f"{self._conn.host}:{self._conn.port}")
                for name, value in self.headers.items():
                    if name.lower() not in HOP_BY_HOP:
                        self._conn.putheader(name, value)
                self._conn.endheaders(body)
                return self._conn.getresponse()
            except (
                ConnectionError,
                http.client.RemoteDisconnected,
                http.client.CannotSendRequest,
                http.client.ResponseNotReady,
            ):
                self.server.proxy._release(self._conn)
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _relay(self, response: http.client.HTTPResponse) -> None:
        self.send_response_only(response.status, response.reason)
        length = response.getheader("Content-Length")
        bodiless = self.command == "HEAD" or response.status in (204, 304)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if length is None and not bodiless:
            self.send_header("Transfer-Encoding", "chunked")
        self._say_if_closing()
        self.end_headers()
        if bodiless:
            response.read()
            return
        while chunk := response.read1(65536):
            if length is None:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            else:
                self.wfile.write(chunk)
            self.wfile.flush()
        if length is None:
            self.wfile.write(b"0\r\n\r\n")
        response.close()  # fully read: lets the upstream connection carry the next request
        if response.will_close and self._conn is not None:
            self.server.proxy._release(self._conn)
            self._conn = None

    def _answer(self, status: int, message: str) -> None:
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": REASONS.get(status, "InternalError"),
                "code": status,
            }
        ).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self._say_if_closing()
        self.end_headers()
        self.wfile.write(body)

    def _say_if_closing(self) -> None:
        """Tells the client when this answer is the connection's last (its request asked for
        `Connection: close`): unwarned, a client puts the connection back in its pool and may
        send the next request on it just as the proxy closes it, and meets an SSL EOF."""
        if self.close_connection:
            self.send_header("Connection", "close")
