"""Is this request from Slack? The v0 signature, the 5-minute window, and replays.

Checked on the raw body before anything is parsed: ``slack_sdk.signature.SignatureVerifier``
computes ``v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")`` and compares in constant time.
Its clock is ours, so tests move time instead of waiting. A valid request seen again inside
the window is a replay and is refused too. That memory is per process and only a second
line of defence: a decision can be made once, so a replayed click that reached another
replica would be answered "already approved" and change nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from slack_sdk.signature import SignatureVerifier

from reconciler import numbers
from reconciler.clock import Clock
from reconciler.errors import UnauthorizedError

WINDOW = 300  # seconds, either way: Slack's own recommendation


class _SlackClock:
    """slack_sdk asks its clock for epoch seconds."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock.now().timestamp()


class RequestVerifier:
    def __init__(self, signing_secret: str, clock: Clock) -> None:
        self._clock = clock
        self._verifier = (
            SignatureVerifier(signing_secret, clock=_SlackClock(clock))  # type: ignore[arg-type]
            if signing_secret.strip()
            else None
        )
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, body: bytes, headers: Mapping[str, str]) -> None:
        """Raises ``UnauthorizedError`` saying why, unless the request is Slack's and new."""
        if self._verifier is None:
            raise UnauthorizedError(
                "Slack requests cannot be verified: NEBULA_SLACK_SIGNING_SECRET is not set"
            )
        timestamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        stamp = numbers.whole(timestamp)
        if stamp is None or not signature:
            raise UnauthorizedError("Missing or malformed Slack signature headers")
        now = self._clock.now().timestamp()
        if abs(now - stamp) > WINDOW:
            raise UnauthorizedError("Stale Slack request: its timestamp is over 5 minutes away")
        if not self._verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
            raise UnauthorizedError("Invalid Slack signature")
        with self._lock:
            for seen, expires in list(self._seen.items()):
                if expires < now:
                    del self._seen[seen]
            if signature in self._seen:
                raise UnauthorizedError("Replayed Slack request")
            self._seen[signature] = int(timestamp) + WINDOW
