"""Token files: the secret that lets a player come back as itself, kept on disk.

A token is a secret, so every file holding one is written whole (a temporary
file renamed over the old one: a crash leaves the old token or the new one,
never half of one) and readable by its owner only (mode 0600).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TokenFile", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, atomically, with mode 0600 (its folder is made, 0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    tmp.replace(path)


class TokenFile:
    """One player's token in one file (``ttt bot --token-file``, the house bots)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def read(self) -> str | None:
        """The token kept here; None when there is none yet."""
        try:
            return self.path.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def write(self, token: str) -> None:
        if token != self.read():
            write_private(self.path, token + "\n")
