"""A running tournament's standings on the MQTT feed: ``ttt/v1/tournaments/{id}/standings``.

Tournaments are run by ``ttt tournament`` (the runner), not by a server node, so the
runner publishes them itself. Standings are state, not events: the topic is
retained (QoS 1) and only the latest standings matter, so `StandingsFeed` keeps
just the newest one waiting. It publishes from a thread of its own (the
in-process runner has no event loop), never makes the tournament wait, rides
out a broker that is down or goes away (the newest standings go out once it is
back), and on `close` waits a bounded time for the last standings to be
confirmed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

import aiomqtt

from protocol.topics import encode, parse_mqtt_url, topic_for

log = logging.getLogger("ttt.tournament.feed")


def check_url(url: str) -> None:
    """Raises `protocol.topics.BadMqttUrl` for a URL `StandingsFeed` would refuse."""
    parse_mqtt_url(url)


class StandingsFeed:
    """Publishes one tournament's standings, retained, the newest winning."""

    def __init__(self, url: str, tournament: str, *, retry: float = 0.5) -> None:
        """Raises `protocol.topics.BadMqttUrl` or `BadTopicKey` for a bad URL or id."""
        self.address = parse_mqtt_url(url)
        self.topic = topic_for("standings", tournament)
        self.retry = retry
        self.published = 0
        self._latest: dict[str, Any] | None = None
        self._version = 0
        self._sent_version = 0
        self._closing = False
        self._loop = asyncio.new_event_loop()
        self._wake: asyncio.Event | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._main, name="standings-feed", daemon=True)
        self._thread.start()

    def offer(self, standings: dict[str, Any]) -> None:
        """Queue ``standings`` (replacing any not yet sent); returns at once."""
        self._latest = standings
        self._version += 1
        self._loop.call_soon_threadsafe(self._poke)

    def close(self, timeout: float = 5.0) -> bool:
        """Send what is waiting (for at most ``timeout`` s) and stop; True if all went out."""
        self._closing = True
        self._loop.call_soon_threadsafe(self._poke)
        self._done.wait(timeout)
        sent = self._sent_version == self._version
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop_now)
            self._thread.join(1.0)
        return sent

    # -- the thread -----------------------------------------------------------------------------

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _stop_now(self) -> None:
        for task in asyncio.all_tasks(self._loop):
            task.cancel()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._run())
        self._done.set()

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        warned = False
        while not (self._closing and self._sent_version == self._version):
            try:
                async with aiomqtt.Client(
                    self.address.host,
                    self.address.port,
                    username=self.address.username,
                    password=self.address.password,
                    timeout=5,
                ) as client:
                    warned = False
                    await self._publish_while_connected(client)
            except aiomqtt.MqttError as exc:
                if not warned:
                    log.warning("standings feed: broker unreachable (%s); retrying", exc)
                    warned = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.retry)
                self._wake.clear()

    async def _publish_while_connected(self, client: aiomqtt.Client) -> None:
        assert self._wake is not None
        while True:
            if self._sent_version != self._version and self._latest is not None:
                version, payload = self._version, self._latest
                await client.publish(self.topic, encode(payload), qos=1, retain=True)
                self._sent_version = version
                self.published += 1
                continue
            if self._closing:
                return
            await self._wake.wait()
            self._wake.clear()
