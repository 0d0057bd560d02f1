"""Trimming the C heap once a burst is over, and collecting the youngest generation (`server.trim`)."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from server.trim import Settling, malloc_trim


def test_a_burst_is_trimmed_once_it_is_over_not_while_it_lasts() -> None:
    settling = Settling(burst=1000, quiet=10)
    assert not settling.tick(0), "the first look only counts"
    assert [settling.tick(n) for n in (600, 1200, 1800)] == [False, False, False], "busy"
    assert settling.tick(1805), "quiet after 1805 events"
    assert not settling.tick(1805) and not settling.tick(1806), "once"


def test_a_trickle_is_not_a_burst() -> None:
    settling = Settling(burst=1000, quiet=10)
    settling.tick(0)
    assert not any(settling.tick(n) for n in range(5, 995, 5)), "never 1000 since the last trim"
    assert not settling.tick(995)
    assert [settling.tick(n) for n in (1000, 1004)] == [True, False], "then a trim, once"


def test_a_busy_server_is_never_trimmed() -> None:
    settling = Settling(burst=1000, quiet=10)
    assert not any(settling.tick(n) for n in range(0, 100_000, 500))


def test_glibc_has_malloc_trim() -> None:
    if "libc.so" not in (ctypes.util.find_library("c") or ""):
        pytest.skip("not glibc")
    trim = malloc_trim()
    assert trim is not None and trim(0) in (0, 1)


async def test_the_youngest_generation_is_collected_on_a_schedule() -> None:
    """With the automatic collections out of the way (a threshold never reached), only
    `collect_young` collects the youngest generation, again and again."""
    import asyncio
    import gc

    from server.trim import collect_young

    thresholds = gc.get_threshold()
    gc.set_threshold(10**9, *thresholds[1:])
    try:
        before = gc.get_stats()[0]["collections"]
        task = asyncio.create_task(collect_young(0.01))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if gc.get_stats()[0]["collections"] >= before + 3:
                break
        task.cancel()
        assert gc.get_stats()[0]["collections"] >= before + 3
    finally:
        gc.set_threshold(*thresholds)


async def test_the_older_generations_are_collected_when_due() -> None:
    """With the automatic collections out of the way, the middle generation is collected
    once the young collections since its last pass its threshold (it never was: every
    survivor since start-up piled up in it, unwalked)."""
    import asyncio
    import gc

    from server.trim import collect_young, due_generation

    thresholds = gc.get_threshold()
    gc.set_threshold(10**9, 3, 10**9)
    try:
        gc.collect(1)  # the middle generation's count starts from 0
        assert due_generation() == 0
        before = gc.get_stats()[1]["collections"]
        task = asyncio.create_task(collect_young(0.01))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if gc.get_stats()[1]["collections"] > before:
                break
        task.cancel()
        assert gc.get_stats()[1]["collections"] > before
        assert gc.get_count()[1] <= 3
    finally:
        gc.set_threshold(*thresholds)


def test_looking_up_malloc_trim_starts_no_process() -> None:
    """``ctypes.util.find_library`` ran ``ldconfig``: a child of ``ttt serve --house-bots
    none`` (which must have none), and a blocking call on the loop."""
    started: list[str] = []
    watching = [True]

    def hook(event: str, args: object) -> None:  # audit hooks stay: this one switches off
        if watching[0] and event in ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec"):
            started.append(event)

    sys.addaudithook(hook)
    try:
        malloc_trim()
    finally:
        watching[0] = False
    assert started == []
