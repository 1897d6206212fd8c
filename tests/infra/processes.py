"""Child processes and loopback ports for the servers the tests start.

Every server logs to a file in its own temporary directory; when one fails to start, the
error quotes the end of that log, because "did not become ready" alone helps nobody.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1


class StartError(RuntimeError):
    """A test server could not start; the message says which and why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _die_with_parent() -> None:
    """Runs in the child before exec: if pytest is killed (a timeout, ^C twice), its
    servers die with it instead of living on as orphans holding ports and CPU."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Process:
    """One long-running child with its output in a log file."""

    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait_ready(self, check: Callable[[], bool], timeout: float) -> None:
        """Polls `check` until it is true; fails early when the process dies."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise StartError(f"{self.name} exited while starting:\n{log_tail(self.log_path)}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                if check():
                    return
            if time.monotonic() > deadline:
                raise StartError(
                    f"{self.name} was not ready after {timeout:.0f}s:\n{log_tail(self.log_path)}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM, then SIGKILL: these servers hold nothing worth a long graceful exit."""
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
