"""`ttt serve --loop asyncio|uvloop`: uvloop by default where installed, ``--uvloop`` kept as
an alias; real server processes, which say on their "serving on" line which loop runs."""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

#: Runs `ttt` as if uvloop were not installed (an import of it fails).
WITHOUT_UVLOOP = "import sys; sys.modules['uvloop'] = None; from protocol.cli import main; sys.exit(main())"


def serve(tmp_path: Path, *args: str, without_uvloop: bool = False) -> tuple[str, int]:
    """Start `ttt serve` with ``args``; the loop named on its "serving on" line (or its
    stderr if it never said it) and its exit code after SIGTERM."""
    start = ["-c", WITHOUT_UVLOOP] if without_uvloop else ["-m", "protocol.cli"]
    cmd = [sys.executable, *start, "serve", "--port", "0", "--db", str(tmp_path / "a.db")]
    proc = subprocess.Popen(
        [*cmd, "--house-bots", "none", "--log-level", "warning", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            found = re.search(r"serving on ws://\S+ \(db .*, loop (\w+)\)", line)
            if found:
                proc.send_signal(signal.SIGTERM)
                return found.group(1), proc.wait(30)
        return "".join(seen), proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="uvloop is not installed here")
@pytest.mark.parametrize(
    ("args", "loop"),
    [
        ((), "uvloop"),
        (("--loop", "asyncio"), "asyncio"),
        (("--loop", "uvloop"), "uvloop"),
        (("--uvloop",), "uvloop"),
    ],
)
def test_the_loop_chosen_is_the_loop_that_runs(tmp_path: Path, args: tuple[str, ...], loop: str) -> None:
    assert serve(tmp_path, *args) == (loop, 0)


def test_without_uvloop_the_default_is_asyncio_and_asking_for_uvloop_fails(tmp_path: Path) -> None:
    assert serve(tmp_path, without_uvloop=True) == ("asyncio", 0)
    said, code = serve(tmp_path, "--loop", "uvloop", without_uvloop=True)
    assert code == 2 and "needs uvloop" in said


def test_an_unknown_loop_is_refused(tmp_path: Path) -> None:
    said, code = serve(tmp_path, "--loop", "trio")
    assert code == 2 and "invalid choice" in said
