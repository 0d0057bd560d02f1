"""End to end in a real terminal: `ttt serve`, a `ttt bot` and `ttt play` in tmux,
played by keys and read off the screen."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TTT = [sys.executable, "-m", "protocol.cli"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [*TTT, "serve", "--port", "0", "--db", str(tmp_path / "arena.db"), "--house-bots", "none"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url = None
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        found = re.search(r"serving on (ws://\S+)", line)
        url = found.group(1) if found else None
    assert url, "the server did not start"
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def screen(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
    ).stdout


def wait_for(session: str, text: str, timeout: float = 45.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = screen(session)
        if text in shown:
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the screen:\n{screen(session)}")


def keys(session: str, *pressed: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", session, *pressed], check=True)


def test_play_a_game_against_a_bot_in_tmux(server: str, tmp_path: Path) -> None:
    bot = subprocess.Popen(
        [*TTT, "bot", "--server", server, "--strategy", "rule", "--name", "rulebot"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    session = f"ttt-e2e-{os.getpid()}"
    env = f"TTT_CONFIG_DIR={tmp_path / 'cfg'}"
    command = f"env {env} {sys.executable} -m protocol.cli play --server {server} --name alice; sleep 60"
    term = {**os.environ, "TERM": os.environ.get("TERM") or "xterm-256color"}  # CI has no terminal
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "110", "-y", "34", command], check=True, env=term
    )
    try:
        wait_for(session, "rulebot")
        shown = wait_for(session, "connected")
        assert "alice" in shown
        keys(session, "b")
        wait_for(session, "Challenge")
        keys(session, "Enter")  # the opponent field holds the selected player: the bot
        wait_for(session, "rulebot  --")
        deadline = time.monotonic() + 60
        order = "513792468"
        i = 0
        while "Game over" not in (shown := screen(session)):
            assert time.monotonic() < deadline, f"the game never ended:\n{shown}"
            if "your move" in shown:
                keys(session, order[i % len(order)])  # keypad digits; a taken cell is refused
                i += 1
            time.sleep(0.15)
        assert re.search(r"Game over: (rulebot \([XO]\) wins|draw)", shown), shown
        wait_for(session, "Review")
        assert (tmp_path / "cfg" / "tokens.json").exists(), "the token is remembered for next time"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
        bot.terminate()
        bot.wait(10)


def test_at_80x24_the_footer_fits_a_small_window_says_so_and_q_quits(server: str, tmp_path: Path) -> None:
    session = f"ttt-small-{os.getpid()}"
    env = f"TTT_CONFIG_DIR={tmp_path / 'cfg'}"
    command = (
        f"env {env} {sys.executable} -m protocol.cli play --server {server} --name alice; "
        "echo TTT-EXITED; sleep 60"
    )
    term = {**os.environ, "TERM": os.environ.get("TERM") or "xterm-256color"}
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command], check=True, env=term
    )
    try:
        shown = wait_for(session, "connected")
        footer = wait_for(session, "q quit").rstrip("\n").splitlines()[-1]
        assert "? help" in footer and "q quit" in footer, footer
        assert "rating" in shown and "1 Rooms" in shown
        subprocess.run(["tmux", "resize-window", "-t", session, "-x", "60", "-y", "20"], check=True)
        wait_for(session, "terminal too small")
        subprocess.run(["tmux", "resize-window", "-t", session, "-x", "80", "-y", "24"], check=True)
        wait_for(session, "1 Rooms")
        keys(session, "q")
        wait_for(session, "TTT-EXITED")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
