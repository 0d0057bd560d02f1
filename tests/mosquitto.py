"""A real Mosquitto broker for tests, started on a free loopback port as a child process.

Reusable by any test module (no conftest needed; ``tests/`` is on ``sys.path`` under pytest)::

    from mosquitto import Broker, running_broker

    @pytest.fixture
    def broker(tmp_path: Path) -> Iterator[Broker]:
        with running_broker(tmp_path) as b:
            yield b

``running_broker`` skips the test with a clear reason when the ``mosquitto`` binary is missing
(``.ci/run`` installs the Debian package). The broker never persists anything, so a restart
starts empty: whatever retained state a subscriber sees afterwards was republished by a client.
Never the system broker on 1883.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def find_mosquitto() -> str | None:
    """The path of the mosquitto binary (PATH, then /usr/sbin), or None."""
    found = shutil.which("mosquitto")
    if found:
        return found
    for candidate in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Broker:
    """One Mosquitto process on 127.0.0.1:``port`` that can be stopped, killed and restarted
    on the same port (the feed under test must find it again)."""

    host = "127.0.0.1"

    def __init__(
        self, binary: str, workdir: Path, port: int | None = None, persistent: bool = False, extra: str = ""
    ) -> None:
        self.binary = binary
        self.port = port if port is not None else free_port()
        self.workdir = workdir
        self.conf = workdir / f"mosquitto-{self.port}.conf"
        self.log = workdir / f"mosquitto-{self.port}.log"
        # persistent: retained messages survive stop()/start() (saved on SIGTERM), as on a
        # production broker; kill() loses what was not saved.
        persistence = (
            f"persistence true\npersistence_location {workdir}/\n" if persistent else "persistence false\n"
        )
        self.conf.write_text(
            f"listener {self.port} {self.host}\nallow_anonymous true\n{persistence}"
            f"log_dest file {self.log}\nlog_type error\nlog_type warning\nlog_type notice\n{extra}"
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 10.0) -> None:
        """Start the broker and wait until it accepts connections."""
        if self.running:
            return
        self.process = subprocess.Popen(
            [self.binary, "-c", str(self.conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log.read_text() if self.log.exists() else ""
                raise RuntimeError(f"mosquitto exited with {self.process.returncode}: {log[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), 0.2):
                return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"mosquitto did not listen on {self.port} within {timeout} s")

    def kill(self) -> None:
        """SIGKILL: the broker vanishes without closing anything (a crash)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM: a clean broker shutdown."""
        self._end(signal.SIGTERM)

    def _end(self, sig: signal.Signals) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def restart(self) -> None:
        self.kill()
        self.start()


def require_mosquitto() -> str:
    """The mosquitto binary; skips the calling test with the reason when it is missing."""
    binary = find_mosquitto()
    if binary is None:
        pytest.skip("mosquitto is not installed (Debian package 'mosquitto'; .ci/run installs it)")
    return binary


@contextlib.contextmanager
def running_broker(workdir: Path, *, started: bool = True, persistent: bool = False) -> Iterator[Broker]:
    """A broker (started unless ``started=False``), killed afterwards; skips the test when
    mosquitto is not installed."""
    binary = require_mosquitto()
    broker = Broker(binary, workdir, persistent=persistent)
    if started:
        try:
            broker.start()
        except RuntimeError:
            # Another process may have taken the port between free_port() and bind: one retry.
            broker = Broker(binary, workdir, persistent=persistent)
            broker.start()
    try:
        yield broker
    finally:
        broker.kill()


@dataclass(frozen=True)
class Received:
    """One message a `Subscriber` got: ``payload`` is the decoded JSON (None if empty)."""

    topic: str
    payload: Any
    retained: bool
    qos: int
    raw: bytes


class Subscriber:
    """A real aiomqtt client that records everything on ``filters`` (QoS 1)::

    async with Subscriber(broker, "ttt/v1/#") as sub:
        await sub.wait_for(lambda msgs: len(msgs) >= 3)
    """

    def __init__(self, broker: Broker, *filters: str) -> None:
        self.broker = broker
        self.filters = filters or ("#",)
        self.messages: list[Received] = []
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None

    async def __aenter__(self) -> Subscriber:
        import aiomqtt

        self._client = aiomqtt.Client(self.broker.host, self.broker.port)
        await self._client.__aenter__()
        for topic in self.filters:
            await self._client.subscribe(topic, qos=1)
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        with contextlib.suppress(Exception):
            await self._client.__aexit__(None, None, None)

    async def _read(self) -> None:
        with contextlib.suppress(Exception):
            async for message in self._client.messages:
                raw = message.payload if isinstance(message.payload, bytes) else b""
                payload = json.loads(raw) if raw else None
                self.messages.append(Received(str(message.topic), payload, message.retain, message.qos, raw))

    def on(self, topic: str) -> list[Received]:
        """The messages received on exactly ``topic``."""
        return [m for m in self.messages if m.topic == topic]

    async def wait_for(
        self, predicate: Callable[[list[Received]], bool], timeout: float = 10.0
    ) -> list[Received]:
        """Wait until ``predicate(messages)`` holds; fails the test after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not predicate(self.messages):
            if time.monotonic() > deadline:
                topics = [m.topic for m in self.messages]
                raise AssertionError(f"timed out after {timeout} s; got {len(topics)} messages: {topics}")
            await asyncio.sleep(0.01)
        return self.messages

    async def settle(self, quiet: float = 0.2) -> list[Received]:
        """Wait until nothing new arrived for ``quiet`` s (retained state is delivered)."""
        seen = -1
        while seen != len(self.messages):
            seen = len(self.messages)
            await asyncio.sleep(quiet)
        return self.messages
