"""Headless Chromium (Debian's, driven by Playwright) loads a page from a loopback server."""

from __future__ import annotations

import http.server
import threading
from typing import Any

import pytest

pytestmark = pytest.mark.browser

PAGE = b"""<!doctype html>
<html><head><title>Nebula test page</title></head>
<body><h1 id="state">healthy</h1></body></html>"""


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_chromium_reads_a_loopback_page(browser: Any) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        assert page.title() == "Nebula test page"
        assert page.text_content("#state") == "healthy"
    finally:
        page.close()
        server.shutdown()
        server.server_close()
