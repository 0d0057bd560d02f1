"""The rules engine is pure: importing it loads no I/O, clock, randomness or pydantic."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("asyncio", "pydantic", "websockets", "aiomqtt", "socket", "random", "time", "sqlite3", "textual")


def test_importing_the_rules_loads_nothing_impure() -> None:
    code = (
        "import sys, json; before = set(sys.modules); import protocol.rules; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "protocol.rules.state" in loaded  # the probe really imported the engine
    bad = [m for m in loaded if m.split(".")[0] in FORBIDDEN]
    assert bad == []
