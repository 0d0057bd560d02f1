"""The frames of the move path, built by hand from pre-encoded pieces: the same bytes as
``protocol.messages.encode`` of the pydantic model, without building the model.

A move makes a `moved` event (with its `clocks`) for the room and an `ok` for the
mover, thousands of times a second. Building and validating the pydantic models
and having pydantic encode them cost more than all the rules of the move, so the
room makes a `MovedEvent` (a plain object with the fields of `m.Moved`) and these
functions write the JSON text straight from its values. The field order, the
separators and the escaping are pydantic's (``tests/test_server_frames.py``
checks every frame against ``m.encode`` of the model over many generated values).

Everything else the server sends is rare enough to go through the models.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any, Literal

from protocol import messages as m
from protocol.rules import Mark
from server.clock import Clock

#: A JSON string literal, as pydantic writes it (UTF-8 as is, no ASCII escapes).
_string = encode_basestring

_MARKS = ('"x"', '"o"')
_NULL = "null"


def _int_or_null(value: int | None) -> str:
    return _NULL if value is None else str(value)


def clocks_json(clock: Clock, now: float) -> tuple[str, int | None, int | None]:
    """The ``clocks`` object of ``clock`` at ``now`` (as `Clock.snapshot` would give it) as
    JSON text, with the milliseconds left for X and O (what the store keeps of a move)."""
    if not clock.timed:
        return _NO_CLOCKS, None, None
    running = clock.running
    x = max(0, int(clock.left_ms(Mark.X, now)))
    o = max(0, int(clock.left_ms(Mark.O, now)))
    return (
        f'{{"x_ms":{x},"o_ms":{o},"running":{_NULL if running is None else _MARKS[running]}}}',
        x,
        o,
    )


_NO_CLOCKS = '{"x_ms":null,"o_ms":null,"running":null}'


class MovedEvent:
    """The `m.Moved` room event of a move, without pydantic: the same fields (``clocks``
    and ``next_to_vanish`` kept as their JSON text), `encode` gives its frame and
    `model` the pydantic model (for the feed and anyone who wants one)."""

    __slots__ = ("cell", "clocks", "game", "mark", "next_to_vanish", "ply", "room", "seq", "vanished")

    type: Literal["moved"] = "moved"

    def __init__(
        self,
        room: str,
        seq: int,
        game: str,
        ply: int,
        cell: int,
        mark: Mark,
        vanished: int | None,
        next_to_vanish: tuple[int | None, int | None],
        clocks: str,
    ) -> None:
        self.room = room
        self.seq = seq
        self.game = game
        self.ply = ply
        self.cell = cell
        self.mark = mark
        self.vanished = vanished
        self.next_to_vanish = next_to_vanish
        #: The ``clocks`` object as JSON text (`clocks_json`).
        self.clocks = clocks

    def encode(self) -> str:
        """The frame: ``m.encode(self.model())``, byte for byte."""
        nx, no = self.next_to_vanish
        return (
            f'{{"type":"moved","room":{_string(self.room)},"seq":{self.seq},"game":{_string(self.game)},'
            f'"ply":{self.ply},"cell":{self.cell},"mark":{_MARKS[self.mark]},'
            f'"vanished":{_int_or_null(self.vanished)},'
            f'"next_to_vanish":{{"x":{_int_or_null(nx)},"o":{_int_or_null(no)}}},'
            f'"clocks":{self.clocks}}}'
        )

    def model_dump_json(self) -> str:
        """As the model's (so ``m.encode`` takes a `MovedEvent` too)."""
        return self.encode()

    def model(self) -> m.Moved:
        return m.Moved.model_validate_json(self.encode())

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """As the model's ``model_dump(mode="json")`` (the feed asks for it)."""
        return self.model().model_dump(mode=mode)


def ok(ref: str | None, seq: int | None) -> str:
    """The frame of ``m.Ok(ref=ref, seq=seq)``."""
    return f'{{"type":"ok","ref":{_NULL if ref is None else _string(ref)},"seq":{_int_or_null(seq)}}}'


def encode(event: m.RoomEvent | MovedEvent) -> str:
    """The frame of a room event: hand-built for a move, through pydantic otherwise."""
    if isinstance(event, MovedEvent):
        return event.encode()
    return m.encode(event)


def is_moved(event: object) -> bool:
    """Whether ``event`` is a `moved` room event, however it was built."""
    return type(event) is MovedEvent or isinstance(event, m.Moved)
