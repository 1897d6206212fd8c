"""Structured logs: one line per event, JSON when stderr is not a terminal, never a secret.

Callers log an event name and fields (``log.info("polled", extra={"project": "shop"})``);
the formatter turns them into one JSON object per line for log collectors, or a short
``key=value`` line for a person at a terminal. Secrets are removed where the line is
written, not where it is logged, so a library's log line (uvicorn, APScheduler, libgit2
errors) is scrubbed too: the values this server knows (secret key, Slack and git tokens)
plus anything shaped like a credential (API tokens, Slack tokens, ``Authorization``
headers, passwords in URLs).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO, Any

REDACTED = "***"

# Credentials by their shape, wherever they appear in a line.
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"nbl_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{8,}"), REDACTED),  # Nebula API tokens
    (re.compile(r"xox[abposer]-[A-Za-z0-9-]+"), REDACTED),  # Slack tokens
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\s\"',]+"), rf"\1{REDACTED}"),
    (re.compile(r"([a-z][a-z0-9+.-]*://)[^/\s@:]*:[^/\s@]*@"), rf"\1{REDACTED}@"),  # user:pass@
    (re.compile(r"(?i)(password|passwd|secret|token)=([^\s&;,]+)"), rf"\1={REDACTED}"),
    # Single sign-on: the query of the provider's answer (code, state), codes, and JWTs.
    (re.compile(r"(/auth/callback\?)[^\s\"']+"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)([?&](?:code|user_code|device_code)=)[^\s&;,\"']+"), rf"\1{REDACTED}"),
    (re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), REDACTED),
)

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName", "color_message"}  # uvicorn's copy with ANSI colours
)


class Scrubber:
    """Removes known secret values and credential-shaped text from strings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()

    def add(self, values: Iterable[str]) -> None:
        """Values shorter than 4 characters are not worth hiding (and would mangle text)."""
        with self._lock:
            known = set(self._values) | {v for v in values if v and len(v) >= 4}
            # Longest first, so a secret that contains another is removed whole.
            self._values = tuple(sorted(known, key=len, reverse=True))

    def clean(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        for pattern, replacement in _SHAPES:
            text = pattern.sub(replacement, text)
        return text

    def clean_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, bool | int | float) or value is None:
            return value
        if isinstance(value, list | tuple):
            return [self.clean_value(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.clean_value(v) for k, v in value.items()}
        return self.clean(str(value))


SCRUBBER = Scrubber()


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _exception(record: logging.LogRecord, formatter: logging.Formatter) -> str | None:
    if record.exc_info and record.exc_info[0] is not None:
        return formatter.formatException(record.exc_info)
    return record.exc_text or None


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "event", ...fields}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": SCRUBBER.clean(record.getMessage()),
        }
        for key, value in _fields(record).items():
            line.setdefault(key, SCRUBBER.clean_value(value))
        error = _exception(record, self)
        if error:
            line["error"] = SCRUBBER.clean(error)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``12:00:01 INFO  nebula.scheduler  polled project=shop staged=1`` for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        parts = [when, f"{record.levelname:<5}", record.name, record.getMessage()]
        parts += [f"{k}={_text(v)}" for k, v in _fields(record).items()]
        line = "  ".join(parts[:3]) + "  " + " ".join(parts[3:])
        error = _exception(record, self)
        if error:
            line += "\n" + error
        return SCRUBBER.clean(line)


def _text(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (" " in text or not text) else text


_HANDLER_NAME = "nebula"


def configure(
    *,
    level: str = "info",
    json_lines: bool | None = None,
    stream: IO[str] | None = None,
    secrets: Iterable[str] = (),
) -> logging.Handler:
    """Send every logger (ours, uvicorn's, APScheduler's) through one scrubbing handler.

    ``json_lines`` defaults to "stderr is not a terminal". Calling it again replaces the
    handler (tests configure it more than once in a process).
    """
    out = stream or sys.stderr
    if json_lines is None:
        json_lines = not (hasattr(out, "isatty") and out.isatty())
    SCRUBBER.add(secrets)
    handler = logging.StreamHandler(out)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "apscheduler"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # APScheduler reports every second that a slow job is still running, Alembic that it
    # found nothing to migrate: not news.
    for name in ("apscheduler", "alembic"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    logging.getLogger("apscheduler.scheduler").addFilter(_skip_busy_job_warnings)
    return handler


def _skip_busy_job_warnings(record: logging.LogRecord) -> bool:
    return "maximum number of running instances reached" not in str(record.msg)
