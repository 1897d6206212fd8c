"""What the tests' HTTP servers share: a request handler that writes no access log (a test's
output is its own) and sends an answer in one call."""

from __future__ import annotations

from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
        """``status`` and ``body``, after ``headers`` and the body's Content-Length."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
