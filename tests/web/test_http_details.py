"""HTTP details a client or an attacker notices: ``HEAD`` answers like ``GET``; a redirect
never sends the client to the host its own ``Host`` header named; a connection that sends its
headers too slowly is closed (``serving.protocol``), so slow-header clients cannot hold
connections open."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Self

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from reconciler import serving
from reconciler.web.app import create_app
from tests.plugins.git import free_port
from tests.plugins.nebula import Nebula
from tests.web.world import AppServer


class Served:
    """The app as ``nebula serve`` runs it (``serving.config``), in a thread."""

    def __init__(self, app: FastAPI, header_timeout: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = serving.config(app, "127.0.0.1", self.port, header_timeout=header_timeout)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def web(nebula: Nebula) -> Iterator[httpx.Client]:
    nebula.ok("project add shop --repo /srv/shop --no-check")
    with AppServer(create_app(nebula.ctx)) as server, httpx.Client(base_url=server.url) as c:
        yield c


@pytest.mark.parametrize("path", ["/", "/projects/shop", "/healthz", "/api/v1/projects"])
def test_head_answers_like_get_without_a_body(web: httpx.Client, path: str) -> None:
    got = web.get(path)
    head = web.head(path)
    assert (head.status_code, got.status_code) == (200, 200)
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


def test_a_trailing_slash_redirect_stays_on_this_server(web: httpx.Client) -> None:
    answer = web.get("/projects/shop/", headers={"Host": "evil.example"})
    assert answer.status_code == 307
    assert answer.headers["location"] == "/projects/shop"
    query = web.get("/api/v1/projects/?x=1", headers={"Host": "evil.example:8080"})
    assert query.headers["location"] == "/api/v1/projects?x=1"


def test_slow_headers_are_cut_off_and_others_are_still_served(nebula: Nebula) -> None:
    slow: list[socket.socket] = []
    with Served(create_app(nebula.ctx), header_timeout=1.0) as served, _closing(slow):
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", served.port))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            slow.append(sock)
        started = time.monotonic()
        closed: set[int] = set()
        while len(closed) < len(slow) and time.monotonic() - started < 10:
            for i, sock in enumerate(slow):
                if i in closed:
                    continue
                try:
                    sock.sendall(b"X")  # one more byte of a header that never ends
                    sock.settimeout(0.01)
                    if sock.recv(1) == b"":
                        closed.add(i)
                except TimeoutError:
                    pass
                except OSError:
                    closed.add(i)
            time.sleep(0.1)
        # Without the deadline none closes: they were held for as long as the client liked.
        assert len(closed) == 50, f"{len(closed)} of 50 slow connections closed within 10 s"
        # A kept-alive connection gets the deadline again for its next request's headers.
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.settimeout(5)
            answer = b""
            while not answer.endswith(b'"database":"ok"}'):
                answer += sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            assert sock.recv(4096) == b"", "closed after the timeout"
        assert httpx.get(f"{served.url}/healthz").status_code == 200


@contextlib.contextmanager
def _closing(sockets: list[socket.socket]) -> Iterator[None]:
    try:
        yield
    finally:
        for sock in sockets:
            sock.close()
