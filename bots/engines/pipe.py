"""One engine process and its two pipes, read and written with deadlines.

`EnginePipe` never blocks its caller past a deadline: a thread reads the
engine's output into a queue of lines (split at LF, CR or CR LF, each cut at
`MAX_LINE` characters), another writes what the caller sends, so an engine that
stops reading cannot stall a move. The process runs in its own session, so
closing it also ends any children a wrapper script started.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Sequence

from bots.engines.errors import EngineCrashed, EngineTimeout

#: Characters kept of one line; the rest of a longer line is dropped.
MAX_LINE = 4096
#: Lines the reader keeps for the caller before it waits (and so does the engine).
MAX_QUEUED = 256

_EOF = None


class EnginePipe:
    """A running engine: `send` lines, `read` lines before a deadline, `close` it.

    Args:
        argv: the command and its arguments (run without a shell).
        label: how error messages name the engine.

    Raises:
        EngineCrashed: the command could not be started.
    """

    def __init__(self, argv: Sequence[str], label: str = "the engine") -> None:
        self.label = label
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            raise EngineCrashed(f"{label} could not be started: {exc}") from None
        assert self.process.stdin is not None and self.process.stdout is not None
        self._lines: queue.Queue[str | None] = queue.Queue(MAX_QUEUED)
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._closing = threading.Event()
        self._finalizer = weakref.finalize(self, _kill, self.process)
        threading.Thread(target=self._read, daemon=True, name="engine-read").start()
        threading.Thread(target=self._write, daemon=True, name="engine-write").start()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self._closing.is_set()

    def send(self, *lines: str) -> None:
        """Queue ``lines`` for the engine (never blocks; a dead engine shows on `read`)."""
        self._outbox.put("".join(line + "\n" for line in lines).encode())

    def drain(self) -> list[str]:
        """Take the lines already read and not asked for (say, left from an earlier move)."""
        stale: list[str] = []
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return stale
            if line is _EOF:
                self._lines.put(_EOF)  # keep the end for `read` to report
                return stale
            stale.append(line)

    def read(self, deadline: float) -> str:
        """The next line, waiting until ``deadline`` (a `time.monotonic` time).

        Raises:
            EngineTimeout: no line by the deadline.
            EngineCrashed: the engine's output ended (it exited or closed it).
        """
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise EngineTimeout(f"{self.label} did not answer in time") from None
        if line is _EOF:
            self._lines.put(_EOF)
            raise EngineCrashed(f"{self.label} exited ({self._exit_status()})")
        return line

    def close(self, goodbye: Sequence[str] = (), grace: float = 0.5) -> None:
        """Say ``goodbye`` (e.g. ``END``), give it ``grace`` seconds to exit, then kill it."""
        if goodbye and self.alive:
            self.send(*goodbye)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        self._closing.set()
        self._outbox.put(None)
        self._finalizer()

    def _exit_status(self) -> str:
        try:
            code = self.process.wait(0.5)
        except subprocess.TimeoutExpired:
            return "its output closed"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        pending = b""
        while True:
            try:
                chunk = os.read(stdout.fileno(), 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if pending.strip():
                    self._put(pending)
                self._put_raw(_EOF)
                with contextlib.suppress(OSError):
                    stdout.close()
                return
            pending += chunk
            *lines, pending = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            for line in lines:
                if line.strip() and not self._put(line):
                    pending = b""
            if len(pending) > MAX_LINE:  # a runaway line: keep its start, drop the rest
                self._put(pending)
                pending = b""

    def _put(self, raw: bytes) -> bool:
        return self._put_raw(raw[:MAX_LINE].decode("utf-8", "replace").strip())

    def _put_raw(self, line: str | None) -> bool:
        """Queue ``line`` for `read`, waiting while the queue is full; False once closed."""
        while not self._closing.is_set():
            try:
                self._lines.put(line, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while (data := self._outbox.get()) is not None:
            try:
                stdin.write(data)
            except (OSError, ValueError):
                return  # the engine is gone; `read` reports it
        with contextlib.suppress(OSError):
            stdin.close()


def _kill(process: subprocess.Popen[bytes]) -> None:
    """End ``process`` and its session's other processes, and reap it."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(2.0)
