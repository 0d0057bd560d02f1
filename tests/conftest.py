"""Records every error code a test receives from a real server.

For the whole session, every text frame an in-process WebSocket *client* receives
(``ArenaClient``, the TUI, in-process bots, tests on raw sockets, asyncio or sync)
is looked at: an ``error`` frame's ``code`` is noted with the test that got it.
`tests/test_protocol_codes.py` then checks, as the session's last test, that every
`ErrorCode` was received by at least one test; it enforces only when the whole
suite ran (every test module collected, nothing deselected), since one module
alone produces only its own codes. The codes seen, with a few tests each, are
written to the pytest cache (``pytest --cache-show ttt/error-codes``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection as AsyncClient
from websockets.sync.client import ClientConnection as SyncClient

#: The test that checks the codes; it is moved to the end of the session.
CODES_TEST = "test_protocol_codes.py::test_every_error_code_is_received_from_a_real_server"


@dataclass
class ErrorCodesSeen:
    """Error codes received from a real server in this session, each with the tests that got it."""

    received: dict[str, set[str]] = field(default_factory=dict)
    #: True when every test module of tests/ was collected and nothing deselected.
    whole_suite: bool = False
    current_test: str = "(outside a test)"

    def note(self, frame: object) -> None:
        if not isinstance(frame, str) or '"error"' not in frame:
            return  # cheap: most frames are not errors
        try:
            data = json.loads(frame)
        except ValueError:
            return
        if isinstance(data, dict) and data.get("type") == "error" and isinstance(data.get("code"), str):
            self.received.setdefault(data["code"], set()).add(self.current_test)


SEEN = ErrorCodesSeen()
_deselected: list[int] = []
_originals: dict[type[Any], Callable[..., Any]] = {}


def _wrap_async(recv: Callable[..., Any]) -> Callable[..., Any]:
    async def recv_noting_errors(self: Any, *args: Any, **kwargs: Any) -> Any:
        frame = await recv(self, *args, **kwargs)
        SEEN.note(frame)
        return frame

    return recv_noting_errors


def _wrap_sync(recv: Callable[..., Any]) -> Callable[..., Any]:
    def recv_noting_errors(self: Any, *args: Any, **kwargs: Any) -> Any:
        frame = recv(self, *args, **kwargs)
        SEEN.note(frame)
        return frame

    return recv_noting_errors


def pytest_configure(config: pytest.Config) -> None:
    # Client connections only: a server's own connections receive what clients send.
    for cls, wrap in ((AsyncClient, _wrap_async), (SyncClient, _wrap_sync)):
        _originals[cls] = cls.recv
        cls.recv = wrap(cls.recv)  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    for cls, recv in _originals.items():
        cls.recv = recv  # type: ignore[method-assign]
    _originals.clear()


def pytest_deselected(items: list[pytest.Item]) -> None:
    _deselected.append(len(items))


@pytest.hookimpl(trylast=True)  # after -k, -m and --lf have deselected what they will
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    last = [item for item in items if item.nodeid.endswith(CODES_TEST)]
    items[:] = [item for item in items if item not in last] + last
    tests_dir = Path(__file__).parent
    modules = {Path(item.path) for item in items}
    every_module = set(tests_dir.glob("test_*.py"))
    narrowed = any("::" in arg for arg in config.args) or sum(_deselected) > 0
    SEEN.whole_suite = every_module <= modules and not narrowed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    SEEN.current_test = item.nodeid  # setup, call and teardown: fixtures count for their test
    try:
        return (yield)
    finally:
        SEEN.current_test = "(outside a test)"


def pytest_sessionfinish(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)  # None with -p no:cacheprovider
    if SEEN.received and cache is not None:
        report = {code: sorted(tests)[:5] for code, tests in sorted(SEEN.received.items())}
        cache.set("ttt/error-codes", {"whole_suite": SEEN.whole_suite, "received": report})


@pytest.fixture(scope="session")
def error_codes_seen() -> ErrorCodesSeen:
    """The error codes received so far in this session."""
    return SEEN


# A real PostgreSQL for the tests that use one (tests/pg_harness.py).
from pg_harness import any_db, pg_cluster, pg_url  # noqa: E402, F401
