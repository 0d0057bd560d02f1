"""Text from the server, made safe to show: never markup, never terminal escapes.

Everything a server sends (names, reasons, error messages) goes through `plain`
before it reaches a widget. Rich `Text` is never parsed as markup, so ``[red]x``
stays literal; control characters (``\\x1b[2J``, a bell, a newline) are shown as
their escaped form instead of reaching the terminal.
"""

from __future__ import annotations

from rich.text import Text


def printable(value: object) -> str:
    """``value`` as a string with every non-printable character escaped (``\\x1b``)."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def plain(value: object, style: str = "") -> Text:
    """A `Text` showing ``value`` literally."""
    return Text(printable(value), style=style, no_wrap=True, overflow="ellipsis")
