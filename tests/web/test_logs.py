"""Structured logs: one JSON object per line off a terminal, and never a secret."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from reconciler import logs


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_when_not_on_a_terminal(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure(stream=out)

    logging.getLogger("nebula.scheduler").info("polled", extra={"project": "shop", "staged": 2})

    [line] = _lines(out)
    assert {k: line[k] for k in ("level", "logger", "event", "project", "staged")} == {
        "level": "info",
        "logger": "nebula.scheduler",
        "event": "polled",
        "project": "shop",
        "staged": 2,
    }
    assert str(line["time"]).endswith("+00:00")


def test_key_value_text_on_a_terminal(restore_logging: None) -> None:
    out = Tty()
    logs.configure(stream=out)

    logging.getLogger("nebula.scheduler").warning(
        "poll failed", extra={"project": "shop", "reason": "no route"}
    )

    text = out.getvalue()
    assert 'WARNING  nebula.scheduler  poll failed project=shop reason="no route"' in text


def test_exceptions_are_one_json_line(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure(stream=out)

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("nebula").exception("tick failed")

    [line] = _lines(out)
    assert "RuntimeError: boom" in str(line["error"])


@pytest.mark.parametrize(
    ("logged", "hidden"),
    [
        (
            "token nbl_1a2b3c4d_AbCdEfGhIjKlMnOpQrStUvWx used",
            "nbl_1a2b3c4d_AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        ("slack said no to xoxb-1234-5678-abcdefghij", "xoxb-1234-5678-abcdefghij"),
        ("GET with Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("cannot reach postgresql+psycopg://nebula:s3cr3t-pw@db:5432/x", "s3cr3t-pw"),
        ("fetch https://x-access-token:ghp_abcdef123456@github.com/o/r failed", "ghp_abcdef123456"),
        ("the configured key is known-secret-value-42", "known-secret-value-42"),
    ],
)
def test_secrets_never_reach_a_line(restore_logging: None, logged: str, hidden: str) -> None:
    out, tty = io.StringIO(), Tty()
    logs.configure(stream=out, secrets=["known-secret-value-42"])
    logging.getLogger("nebula").info(logged, extra={"detail": logged, "items": [logged]})
    logs.configure(stream=tty)
    logging.getLogger("nebula").info(logged, extra={"detail": logged})

    assert hidden not in out.getvalue()
    assert hidden not in tty.getvalue()
    assert logs.REDACTED in out.getvalue()


def test_uvicorn_lines_go_through_the_same_handler(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure(stream=out)

    logging.getLogger("uvicorn.error").info(
        "Started server process [%d]", 42, extra={"color_message": "\x1b[36m"}
    )

    [line] = _lines(out)
    assert (line["logger"], line["event"]) == ("uvicorn.error", "Started server process [42]")
    assert "color_message" not in line
