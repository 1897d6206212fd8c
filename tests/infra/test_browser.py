"""Headless Chromium (Debian's, driven by Playwright) loads a page from a loopback server."""

from __future__ import annotations

import http.server
import threading
from typing import Any

import pytest

from tests.infra.quiet import QuietHandler

pytestmark = pytest.mark.browser

PAGE = b"""<!doctype html>
<html><head><title>Nebula test page</title></head>
<body><h1 id="state">healthy</h1></body></html>"""


class _Page(QuietHandler):
    def do_GET(self) -> None:
        self.answer(200, PAGE, [("Content-Type", "text/html; charset=utf-8")])


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
