"""The pure rules engine: variants, immutable states, moves and outcomes.

Imports nothing that does I/O, keeps time, draws random numbers or validates
wire messages, so every party (server, bots, client, tests) can trust it.
"""

from protocol.errors import (
    CellOccupied,
    CellOutOfRange,
    CellVacating,
    GameOver,
    IllegalMove,
    MalformedMove,
    RulesError,
    UnknownVariant,
)
from protocol.rules.state import Mark, Outcome, State, Termination, points
from protocol.rules.variants import (
    COLUMN_LETTERS,
    FEATURED,
    RULES_VERSION,
    VALID_FORMS,
    Cell,
    Symmetry,
    Variant,
    cell_name,
    find_variant,
)
from protocol.rules.walk import reachable

__all__ = [
    "COLUMN_LETTERS",
    "FEATURED",
    "RULES_VERSION",
    "VALID_FORMS",
    "Cell",
    "CellOccupied",
    "CellOutOfRange",
    "CellVacating",
    "GameOver",
    "IllegalMove",
    "MalformedMove",
    "Mark",
    "Outcome",
    "RulesError",
    "State",
    "Symmetry",
    "Termination",
    "UnknownVariant",
    "Variant",
    "cell_name",
    "find_variant",
    "points",
    "reachable",
]
