"""The tokens that let the terminal client come back as the same player.

One JSON file in the user config directory maps each server URL to the name and
token last used there. A token is a secret: the file is written with mode 0600.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir

from protocol.tokens import write_private

#: Set this to keep the file elsewhere (tests use it).
CONFIG_ENV = "TTT_CONFIG_DIR"


def default_path() -> Path:
    base = os.environ.get(CONFIG_ENV) or user_config_dir("ttt-arena")
    return Path(base) / "tokens.json"


@dataclass(frozen=True)
class Identity:
    name: str
    token: str


class TokenStore:
    """Name and token per server URL, in one small JSON file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, server: str) -> Identity | None:
        entry = self._read().get(server)
        if not isinstance(entry, dict):
            return None
        name, token = entry.get("name"), entry.get("token")
        if isinstance(name, str) and isinstance(token, str):
            return Identity(name, token)
        return None

    def put(self, server: str, name: str, token: str) -> None:
        data = self._read()
        data[server] = {"name": name, "token": token}
        write_private(self.path, json.dumps(data, indent=1))
