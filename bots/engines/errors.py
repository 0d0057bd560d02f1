"""Why an external engine lost its game: errors with stable codes, under `ArenaError`.

The bot runner gives up the game whose move raised one of these; its ``code`` is
the loss reason (``engine_timeout``, ``engine_illegal``, ``engine_crashed``,
``engine_refused``) and its message says what the engine did.
"""

from __future__ import annotations

from protocol.errors import ArenaError


class EngineError(ArenaError):
    """Root of the ways an engine fails a move. The engine's process is restarted for
    the next move (of any game): only the game at hand is lost."""

    code = "engine_error"


class EngineTimeout(EngineError):
    """No answer within the move's time (or the start's)."""

    code = "engine_timeout"


class EngineIllegal(EngineError):
    """An answer that is not a legal move here: an occupied or off-board cell, a line the
    protocol does not allow (garbage), or the engine's own ``ERROR``."""

    code = "engine_illegal"


class EngineCrashed(EngineError):
    """The engine exited, closed its output, or could not be started."""

    code = "engine_crashed"


class EngineRefused(EngineError):
    """A game the engine cannot play: its protocol cannot express the variant (Gomocup and
    tactic-toe, or a line other than five), or the engine refused the board at start."""

    code = "engine_refused"
