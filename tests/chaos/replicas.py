"""Replicas of ``nebula serve`` on one store, killed with SIGKILL and started again.

Each replica keeps its port and its log file across lives. A replica comes back either under
its own ``NEBULA_REPLICA_ID`` (as a StatefulSet pod does: it finds its own leases and carries
on at once) or under a new one (as a new pod does: what the dead one held is taken over only
once its leases expire).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.web.world import ServeProcess

START_ATTEMPTS = 5


@dataclass
class Replica:
    name: str
    env: dict[str, str]
    log_path: Path
    port: int
    lives: int = 0
    process: ServeProcess | None = None
    starting: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        proc = self.process.process if self.process is not None else None
        return proc is not None and proc.poll() is None and not self.starting

    def start(self, *, new_identity: bool) -> None:
        self.lives += 1
        env = dict(self.env)
        identity = f"{self.name}-{self.lives}" if new_identity else self.name
        env["NEBULA_REPLICA_ID"] = identity
        process = ServeProcess(env, self.log_path, port=self.port)
        with self.log_path.open("a") as log:
            log.write(f"\n--- chaos: life {self.lives} as {identity}\n")
        self.process = process
        try:
            process.start()
        except RuntimeError:
            process.kill()  # it may be up yet not answering: the next try needs the port
            raise

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def stop(self) -> int:
        assert self.process is not None
        code, _ = self.process.stop(timeout=15)
        return code


@dataclass
class Replicas:
    members: list[Replica]
    rng: random.Random
    kills: int = 0
    restarts: int = 0
    takeovers: int = 0  # restarts under a new identity
    failed_starts: int = 0
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[str] = field(default_factory=list)
    _closing: threading.Event = field(default_factory=threading.Event)

    def start_all(self) -> None:
        for replica in self.members:
            replica.start(new_identity=False)

    def live(self) -> list[Replica]:
        return [r for r in self.members if r.alive]

    def any_url(self) -> str | None:
        live = self.live()
        return self.rng.choice(live).url if live else None

    def kill_one(self, restart_after: float, *, new_identity: bool) -> str | None:
        """SIGKILL a live replica (never the last one) and start it again after a while."""
        live = self.live()
        if len(live) < 2:
            return None
        victim = self.rng.choice(live)
        victim.kill()
        victim.starting = True
        self.kills += 1
        thread = threading.Thread(
            target=self._restart, args=(victim, restart_after, new_identity), daemon=True
        )
        self._threads.append(thread)
        thread.start()
        return victim.name

    def _restart(self, replica: Replica, after: float, new_identity: bool) -> None:
        if self._closing.wait(after):
            return  # the run is over: stay dead
        try:
            # As a supervisor would: a start that fails (the database restarting at that very
            # moment) is tried again.
            for attempt in range(START_ATTEMPTS):
                try:
                    replica.start(new_identity=new_identity)
                    break
                except RuntimeError as exc:
                    with self._lock:
                        self.failed_starts += 1
                    if attempt == START_ATTEMPTS - 1 or self._closing.wait(1.0):
                        with self._lock:  # reported by the test, which needs every replica back
                            self.errors.append(f"{replica.name} did not come back: {exc}")
                        return
        finally:
            replica.starting = False
        with self._lock:
            self.restarts += 1
            self.takeovers += int(new_identity)

    def wait_restarts(self, timeout: float = 90.0) -> None:
        for thread in self._threads:
            thread.join(timeout)
        assert not self.errors, self.errors
        assert all(r.alive for r in self.members), [r.name for r in self.members if not r.alive]

    def stop_all(self) -> list[int]:
        codes = []
        for replica in self.members:
            if replica.alive:
                codes.append(replica.stop())
        return codes

    def kill_all(self) -> None:
        self._closing.set()
        for thread in self._threads:
            thread.join(90)  # a start in progress finishes, and is killed below
        for replica in self.members:
            with contextlib.suppress(Exception):
                replica.kill()

    def logs(self) -> Iterator[tuple[str, str]]:
        for replica in self.members:
            text = replica.log_path.read_text(encoding="utf-8", errors="replace")
            yield replica.name, text


def get(url: str, path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{url}{path}", headers=headers, timeout=10)


def post(
    url: str,
    path: str,
    token: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
) -> httpx.Response:
    sent = dict(headers or {})
    if token:
        sent["Authorization"] = f"Bearer {token}"
    return httpx.post(f"{url}{path}", headers=sent, content=content, timeout=10)
