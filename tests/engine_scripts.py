"""Tiny engines for the engine tests: one program a protocol, its behaviour picked by its
first argument. ``command(tmp_path, protocol, mode, *args)`` writes the program and
returns its command line.

Modes: ``good`` (a random empty cell, from the seed when the protocol gives one),
``slow`` (never answers a move in time), ``illegal`` (a taken or off-board cell),
``garbage`` (a line of prose), ``crash`` (exits when asked for a move),
``crash-once MARKER`` (exits on its first move unless MARKER exists, and makes it),
``slow-once MARKER`` (the same, but sleeps on instead of exiting),
``chatty`` (hundreds of comment lines before each move, and some after),
``deaf`` (never reads its input), ``refuse`` (Gomocup: ERROR to START),
``mute`` (ttt: never says ok), ``spawner`` (runs as a child of a shell that sleeps on).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

TTT = r"""
import os, random, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
if os.environ.get("ENGINE_PIDS"):
    with open(os.environ["ENGINE_PIDS"], "a") as pids:
        pids.write("%d\n" % os.getpid())


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


if mode == "deaf":
    time.sleep(60)
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "ttt":
        if mode == "mute":
            time.sleep(60)
        say("ok test-engine " + mode)
    elif words[0] == "quit":
        break
    elif words[0] == "go":
        variant, mark, ms, seed, board = words[1:6]
        empty = [i for i, c in enumerate(board) if c == "."]
        rng = random.Random(int(seed))
        if mode == "slow":
            time.sleep(60)
        if mode == "crash":
            sys.exit(3)
        if mode.endswith("-once") and not os.path.exists(sys.argv[2]):
            open(sys.argv[2], "w").close()
            if mode == "slow-once":
                time.sleep(60)
            os._exit(4)
        if mode == "illegal":
            taken = [i for i, c in enumerate(board) if c != "."]
            say(str(taken[0] if taken else len(board)))
        elif mode == "garbage":
            say("I think I will resign now")
        elif mode == "chatty":
            for i in range(300):
                say("# thinking about move %d" % i)
            say(str(rng.choice(empty)))
            say("# and that was my move")
        else:
            say(str(rng.choice(empty)))
"""

GOMOCUP = r"""
import os, random, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
if os.environ.get("ENGINE_PIDS"):
    with open(os.environ["ENGINE_PIDS"], "a") as pids:
        pids.write("%d\n" % os.getpid())
width = height = 0
stones = {}
rng = random.Random(7)


def say(text):
    sys.stdout.write(text + "\r\n")
    sys.stdout.flush()


def move():
    if mode == "slow":
        time.sleep(60)
    if mode == "crash":
        sys.exit(3)
    if mode.endswith("-once") and not os.path.exists(sys.argv[2]):
        open(sys.argv[2], "w").close()
        if mode == "slow-once":
            time.sleep(60)
        os._exit(4)
    if mode == "illegal":
        x, y = next(iter(stones)) if stones else (width, height)
        say("%d,%d" % (x, y))
        return
    if mode == "garbage":
        say("let me think about it")
        return
    if mode == "chatty":
        for i in range(300):
            say("MESSAGE thinking %d" % i)
            say("DEBUG depth %d" % i)
    free = [(x, y) for y in range(height) for x in range(width) if (x, y) not in stones]
    x, y = rng.choice(free)
    stones[x, y] = 1
    say("%d,%d" % (x, y))


if mode == "deaf":
    time.sleep(60)
lines = iter(sys.stdin)
for line in lines:
    words = line.strip().replace(",", " ").split()
    if not words:
        continue
    command = words[0].upper()
    if command == "ABOUT":
        say('name="test-%s", version="1.0", author="tests"' % mode)
    elif command in ("START", "RECTSTART"):
        if mode == "refuse":
            say("ERROR unsupported size")
            continue
        width = int(words[1])
        height = int(words[2]) if command == "RECTSTART" else width
        stones = {}
        say("OK")
    elif command == "BEGIN":
        stones = {}
        move()
    elif command == "TURN":
        stones[int(words[1]), int(words[2])] = 2
        move()
    elif command == "BOARD":
        stones = {}
        for row in lines:
            if row.strip().upper() == "DONE":
                break
            x, y, who = (int(w) for w in row.strip().split(","))
            stones[x, y] = who
        move()
    elif command == "END":
        break
"""

SOURCES = {"ttt": TTT, "gomocup": GOMOCUP}
#: The page whose example engines `write_examples` takes.
DOC = Path(__file__).resolve().parent.parent / "docs" / "engines.md"


def example(first_line: str) -> str:
    """The code block of the page that starts with ``first_line``."""
    blocks = re.findall(r"```\w*\n(.*?)```", DOC.read_text(), re.S)
    found = [b for b in blocks if b.startswith(first_line + "\n")]
    assert len(found) == 1, f"one example starting {first_line!r}"
    return found[0]


def write_examples(folder: Path) -> dict[str, str]:
    """Both examples as files in ``folder``: name -> command line."""
    sh, py = folder / "pick.sh", folder / "win_block.py"
    sh.write_text(example("#!/bin/sh"))
    py.write_text(example("#!/usr/bin/env python3"))
    return {"sh": shlex.join(["sh", str(sh)]), "python": shlex.join([sys.executable, str(py)])}


def command(tmp_path: Path, protocol: str, mode: str = "good", *args: str) -> str:
    """The command line of the test engine speaking ``protocol`` in ``mode``."""
    program = tmp_path / f"{protocol}_engine.py"
    if not program.exists():
        program.write_text(SOURCES[protocol])
    if mode == "spawner":  # a shell that starts the engine as its child and stays
        return shlex.join(["sh", "-c", f"{shlex.join([sys.executable, str(program), 'slow'])}; sleep 60"])
    return shlex.join([sys.executable, str(program), mode, *args])
