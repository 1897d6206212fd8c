"""Requests as an attacker sends them, on a raw socket: a body announced larger than a route
takes, or a chunked one that never ends, stopped the moment the server answers. And how much
memory a server process has held at its peak (``VmHWM``), to compare before and after."""

from __future__ import annotations

import contextlib
import select
import socket
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


@dataclass(frozen=True)
class Answer:
    status: int
    sent: int  # body bytes sent before the server answered
    head: bytes  # the status line and headers


def _head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read_head(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    with contextlib.suppress(OSError):  # a reset after the answer (the rest was unread)
        while b"\r\n\r\n" not in data:
            got = sock.recv(65536)
            if not got:
                break
            data += got
    return data.split(b"\r\n\r\n")[0]


def _answer(head: bytes, sent: int) -> Answer:
    status_line = head.split(b"\r\n")[0]
    parts = status_line.split(b" ")
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return Answer(status, sent, head)


def announced(
    port: int,
    path: str,
    length: int,
    headers: dict[str, str] | None = None,
    timeout: float = 5,
    method: str = "POST",
) -> Answer:
    """Headers announcing a ``length``-byte body, and no body: a server that waits for it
    before answering (as one that reads first and checks after does) answers nothing."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(method, path, {"Content-Length": str(length), **(headers or {})}))
        return _answer(_read_head(sock, timeout), 0)


def chunked(
    port: int,
    path: str,
    total: int,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
    method: str = "POST",
) -> Answer:
    """A chunked body of up to ``total`` bytes, a MiB at a time; sending stops as soon as the
    server answers (or closes)."""
    payload = b"x" * CHUNK
    frame = b"%x\r\n" % CHUNK + payload + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(method, path, {"Transfer-Encoding": "chunked", **(headers or {})}))
        while sent < total:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(frame)
            except OSError:  # the server answered and closed: read what it said
                break
            sent += CHUNK
        else:
            with contextlib.suppress(OSError):
                sock.sendall(b"0\r\n\r\n")
        return _answer(_read_head(sock, timeout), sent)


def peak_rss(pid: int) -> int:
    """The most memory the process has held at once, in bytes (Linux ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {pid}")
