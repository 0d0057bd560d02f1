"""Tools for the hostile-client tests: a raw WebSocket client that writes frames and
never reads, a `ttt serve` process to attack, and its resident memory."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TTT = [sys.executable, "-m", "protocol.cli"]


def frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame (FIN set)."""
    mask = os.urandom(4)
    size = len(payload)
    if size < 126:
        header = bytes([0x80 | opcode, 0x80 | size])
    elif size < 65536:
        header = bytes([0x80 | opcode, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x80 | opcode, 0x80 | 127]) + size.to_bytes(8, "big")
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def text(message: dict[str, Any]) -> bytes:
    return frame(0x1, json.dumps(message).encode())


class Deaf:
    """A client that sends and never reads (a small receive buffer, as the audit used)."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 101"), reply[:80]
        self.sock.settimeout(0.2)

    def send(self, data: bytes) -> bool:
        """Write ``data``; False once the server has dropped the connection."""
        try:
            self.sock.sendall(data)
        except TimeoutError:
            return True  # the server stopped reading: still connected
        except OSError:
            return False
        return True

    def flood(self, data: bytes, seconds: float) -> float | None:
        """Send ``data`` over and over for up to ``seconds``; when the server dropped the
        connection, the seconds that took (None: still connected at the end)."""
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            if not self.send(data * 32):
                return time.monotonic() - started
        return None

    def close(self) -> None:
        self.sock.close()


def rss_kib(pid: int) -> int:
    found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert found is not None
    return int(found.group(1))


#: Warnings only, and no house bots (a later ``--house-bots`` wins).
QUIET = ("--log-level", "warning", "--house-bots", "none")


def launch(db: Path | str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    """A real `ttt serve` on ``port`` with ``db``, no house bots (a later ``--house-bots``
    in ``extra`` wins), warnings only; started, not yet listening."""
    return subprocess.Popen(
        [*TTT, "serve", "--port", str(port), "--db", str(db), *QUIET, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def serve(db: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    """A real `ttt serve` on ``port``; returns once it listens."""
    proc = launch(db, port, *extra)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"ttt serve exited: {proc.stderr.read() if proc.stderr else b''!r}"
                ) from None
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("ttt serve did not listen")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if proc.stderr:
        proc.stderr.close()
