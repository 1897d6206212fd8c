"""The test cluster's pod network: the only path from the API server to pods and nodes.

The API server is started with an egress selector that sends all of its "cluster" traffic
(the pods/services proxy, the kubelet's logs endpoint) through this HTTP CONNECT proxy on
a Unix socket. Pods and the test node get addresses in 239.255.0.0/16, a multicast range that
the API server accepts in endpoints but that the kernel refuses to TCP-connect to, so even a
misconfigured API server could never send a packet off this machine. This proxy maps
(address, port) pairs to servers on 127.0.0.1 that a test registers; anything else is
answered 503, as an unreachable pod would be.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

POD_RANGE = ipaddress.ip_network("239.255.0.0/16")


@dataclass(frozen=True)
class Dial:
    target: str
    routed: bool


class PodNetwork:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self._routes: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._next_ip = 2
        self.dials: list[Dial] = []
        # A Unix socket, because kube-apiserver 1.20 crashes on a plain-TCP CONNECT proxy
        # (it insists on loading client TLS material for one).
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(socket_path))
        self._listener.listen(64)
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept_loop, name="pod-network", daemon=True)
        self._thread.start()

    def allocate_ip(self) -> str:
        with self._lock:
            index = self._next_ip
            self._next_ip += 1
        return str(POD_RANGE[index % (POD_RANGE.num_addresses - 2) + 1])

    def route(self, ip: str, port: int, loopback_port: int) -> None:
        """Connections to ip:port reach 127.0.0.1:loopback_port from now on."""
        with self._lock:
            self._routes[(ip, port)] = loopback_port

    def unroute(self, ip: str, port: int) -> None:
        with self._lock:
            self._routes.pop((ip, port), None)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in list(self._open):
                _close(sock)
            self._open.clear()
        self._thread.join(5)

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            client.settimeout(10)
            head = _read_head(client)
            parts = head.split(b"\r\n", 1)[0].split()
            if len(parts) < 2 or parts[0] != b"CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            target = parts[1].decode()
            host, _, port_text = target.rpartition(":")
            with self._lock:
                loopback_port = self._routes.get((host.strip("[]"), int(port_text)))
                self.dials.append(Dial(target, loopback_port is not None))
            if loopback_port is None:
                client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", loopback_port), timeout=5)
            except OSError:
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
            pump = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            pump.start()
            _pump(client, upstream)
            pump.join()
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._open.discard(client)
                if upstream is not None:
                    self._open.discard(upstream)
            _close(client)
            if upstream is not None:
                _close(upstream)


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > 16384:
            raise ValueError("incomplete CONNECT request")
        data += chunk
    return data


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
