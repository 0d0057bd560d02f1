"""The game state: an immutable value. `play` returns a new state; bad input changes nothing.

Boards are two Python-int bitboards (bit ``c`` set = a mark on cell ``c``). In
variants whose marks vanish (tactic-toe) each player's marks are also kept
oldest first, since the order in which they will leave is part of the position.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from protocol.errors import CellOccupied, CellOutOfRange, CellVacating, GameOver, MalformedMove
from protocol.rules.variants import Cell, Symmetry, Variant, find_variant


class Mark(enum.IntEnum):
    """A player's mark. X always moves first."""

    X = 0
    O = 1  # noqa: E741

    @property
    def other(self) -> Mark:
        return _OTHER[self]

    def __str__(self) -> str:
        return self.name


_OTHER = (Mark.O, Mark.X)


class Termination(enum.StrEnum):
    """Why a game ended. The last four are decided by a server, not by the rules."""

    LINE = "line"
    FULL_BOARD = "full_board"
    REPETITION = "repetition"
    PLY_CAP = "ply_cap"
    RESIGNATION = "resignation"
    TIMEOUT = "timeout"
    ABANDONED = "abandoned"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a game ended: a winner (None for a draw), and the winning cells if any."""

    termination: Termination
    winner: Mark | None = None
    line: tuple[Cell, ...] = ()

    @property
    def result(self) -> str:
        """``1-0``, ``0-1`` or ``1/2-1/2``, as chess writes it (X first)."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner is Mark.X else "0-1"

    def points(self, mark: Mark) -> float:
        """What ``mark`` scores: 1 for a win, 0.5 for a draw, 0 for a loss."""
        return points(self.winner, mark)


def points(winner: Mark | str | None, mark: Mark | str) -> float:
    """What ``mark`` scores when ``winner`` won (None: a draw); marks or their names."""
    return 0.5 if winner is None else float(winner == mark)


_QUEUE_BITS = 4  # tactic-toe queues: each cell stored as cell+1 in 4 bits


@dataclass(frozen=True, slots=True)
class State:
    """A position plus what the draw rules need to remember (past positions, ply cap).

    Build the first state with `State.start`; every later one comes from `play`.
    Two states are equal when the position, ply, history and cap are equal.
    """

    variant: Variant
    x: int = 0
    o: int = 0
    #: Each player's marks oldest first (only kept when marks vanish).
    queues: tuple[tuple[Cell, ...], tuple[Cell, ...]] = ((), ())
    to_move: Mark = Mark.X
    ply: int = 0
    moves: tuple[Cell, ...] = ()
    outcome: Outcome | None = None
    ply_cap: int | None = None
    #: False for analysis: no repetition history is kept and no cap applies.
    draw_rules: bool = True
    #: Position keys of every earlier position with marks that can vanish.
    history: tuple[int, ...] = field(default=(), repr=False)

    @classmethod
    def start(cls, variant: Variant | str, *, ply_cap: int | None = None, draw_rules: bool = True) -> State:
        """The empty board of ``variant``.

        Args:
            ply_cap: the ply at which a game still going is drawn; defaults to the
                variant's (200 in tactic-toe, none where the board fills up).
            draw_rules: False gives a bare position for solvers and search: no
                repetition history, no cap, and no move list (both would grow
                with every ply of a long search).
        """
        v = find_variant(variant) if isinstance(variant, str) else variant
        cap = v.default_ply_cap if ply_cap is None else ply_cap
        if not draw_rules:
            return cls(v, draw_rules=False)
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise ValueError(f"ply cap must be a positive int, not {cap!r}")
        return cls(v, ply_cap=cap)

    @classmethod
    def replay(cls, variant: Variant | str, moves: Iterable[Cell], *, ply_cap: int | None = None) -> State:
        """Play ``moves`` from the start; raises the first illegal move's error."""
        state = cls.start(variant, ply_cap=ply_cap)
        for cell in moves:
            state = state.play(cell)
        return state

    # --- reading the position -------------------------------------------------

    @property
    def is_over(self) -> bool:
        return self.outcome is not None

    def mark_at(self, cell: Cell) -> Mark | None:
        bit = 1 << cell
        if self.x & bit:
            return Mark.X
        if self.o & bit:
            return Mark.O
        return None

    def board(self) -> tuple[Mark | None, ...]:
        """Every cell's mark, row-major."""
        return tuple(self.mark_at(c) for c in range(self.variant.cells))

    def marks(self, mark: Mark) -> tuple[Cell, ...]:
        """Cells holding ``mark``: oldest first where marks vanish, else ascending."""
        if self.variant.max_marks is not None:
            return self.queues[mark]
        return tuple(_cells_of(self.x if mark is Mark.X else self.o))

    def next_to_vanish(self, mark: Mark) -> Cell | None:
        """The cell of ``mark``'s mark that leaves when ``mark`` next moves, if any."""
        limit = self.variant.max_marks
        if limit is None:
            return None
        queue = self.queues[mark]
        return queue[0] if len(queue) >= limit else None

    def legal_moves(self) -> tuple[Cell, ...]:
        """Cells the side to move may take, ascending; empty once the game is over."""
        if self.outcome is not None:
            return ()
        return tuple(_cells_of(self.variant.full & ~(self.x | self.o)))

    def is_legal(self, cell: object) -> bool:
        try:
            self.check(cell)
        except (MalformedMove, CellOutOfRange, CellOccupied, GameOver):
            return False
        return True

    def check(self, cell: object) -> Cell:
        """Return ``cell`` if the side to move may take it, else raise why not.

        Raises:
            MalformedMove, CellOutOfRange, CellOccupied, CellVacating, GameOver.
        """
        if not isinstance(cell, int) or isinstance(cell, bool):
            raise MalformedMove(f"a move is a cell number, not {cell!r}")
        if not 0 <= cell < self.variant.cells:
            raise CellOutOfRange(
                f"cell {cell} is off the {self.variant.size} board (cells 0..{self.variant.cells - 1})"
            )
        if self.outcome is not None:
            raise GameOver(f"the game is over ({self.outcome.termination}, {self.outcome.result})")
        if (self.x | self.o) >> cell & 1:
            if cell == self.next_to_vanish(self.to_move):
                raise CellVacating(
                    f"cell {cell} holds {self.to_move}'s oldest mark, which vanishes as this move is"
                    " made; it is not empty before the move, so it cannot be taken now"
                )
            raise CellOccupied(f"cell {cell} is occupied")
        return cell

    # --- making a move --------------------------------------------------------

    def play(self, cell: Cell) -> State:
        """The state after the side to move takes ``cell``. Raises (see `check`) and
        leaves this state untouched if the move is illegal."""
        self.check(cell)
        return self._play_unchecked(cell)

    def _play_unchecked(self, cell: Cell) -> State:
        v = self.variant
        mover = self.to_move
        own = self.x if mover is Mark.X else self.o
        queues = self.queues
        history = self.history
        if v.max_marks is not None:
            queue = queues[mover]
            if len(queue) >= v.max_marks:
                own &= ~(1 << queue[0])
                queue = queue[1:]
            queue = (*queue, cell)
            queues = (queue, queues[1]) if mover is Mark.X else (queues[0], queue)
            if self.draw_rules:
                history = (*history, self.key())
        own |= 1 << cell
        x, o = (own, self.o) if mover is Mark.X else (self.x, own)
        ply = self.ply + 1
        outcome = None
        k = v.k
        for span in v.spans_through[cell]:  # most moves have too few marks along every direction
            if (own & span).bit_count() >= k:
                for mask in v.lines_through[cell]:
                    if own & mask == mask:
                        outcome = Outcome(Termination.LINE, mover, _run_through(v, own, cell, mask))
                        break
                break
        if outcome is None and (x | o) == v.full:
            outcome = Outcome(Termination.FULL_BOARD)
        state = _make(
            v, x, o, queues, _OTHER[mover], ply, (*self.moves, cell) if self.draw_rules else (),
            outcome, self.ply_cap,
            self.draw_rules, history,
        )  # fmt: skip
        if outcome is None and v.max_marks is not None and self.draw_rules:
            key = state.key()
            if history.count(key) >= 2:
                outcome = Outcome(Termination.REPETITION)
            elif self.ply_cap is not None and ply >= self.ply_cap:
                outcome = Outcome(Termination.PLY_CAP)
            if outcome is not None:
                state = _make(
                    v, x, o, queues, _OTHER[mover], ply, state.moves, outcome, self.ply_cap,
                    self.draw_rules, history,
                )  # fmt: skip
        return state

    def ended(self, outcome: Outcome) -> State:
        """This state with an outcome decided outside the rules (resignation, time...)."""
        if self.outcome is not None:
            raise GameOver("the game is already over")
        return State(
            self.variant, self.x, self.o, self.queues, self.to_move, self.ply,
            self.moves, outcome, self.ply_cap, self.draw_rules, self.history,
        )  # fmt: skip

    # --- keys and symmetry ----------------------------------------------------

    def key(self) -> int:
        """A compact int naming the position: the marks, the side to move and, where marks
        vanish, each player's whole order of age (two positions whose marks differ only in
        which of two younger marks leaves first are different positions). Ply, history
        and outcome are not part of it; repetition compares these keys."""
        if self.variant.max_marks is not None:
            return _queue_key(self.queues, self.to_move)
        n = self.variant.cells
        return (self.o << n | self.x) << 1 | self.to_move

    def transform(self, symmetry: Symmetry) -> State:
        """This position seen through a board symmetry (moves and history are mapped too,
        history as it is; only the position and moves are meaningful after mapping)."""
        perm = symmetry
        queues = (tuple(perm[c] for c in self.queues[0]), tuple(perm[c] for c in self.queues[1]))
        outcome = self.outcome
        if outcome is not None and outcome.line:
            outcome = Outcome(
                outcome.termination, outcome.winner, tuple(sorted(perm[c] for c in outcome.line))
            )
        return State(
            self.variant, _map_bits(self.x, perm), _map_bits(self.o, perm), queues, self.to_move,
            self.ply, tuple(perm[c] for c in self.moves), outcome, self.ply_cap, self.draw_rules,
            self.history,
        )  # fmt: skip

    def images(self) -> Iterator[State]:
        """This position under each of the board's symmetries, identity first."""
        for sym in self.variant.symmetries:
            yield self.transform(sym)

    def canonical_key(self) -> int:
        """The least key among the position's symmetric images."""
        v = self.variant
        if v.max_marks is not None:
            return min(
                _queue_key(
                    (tuple(p[c] for c in self.queues[0]), tuple(p[c] for c in self.queues[1])), self.to_move
                )
                for p in v.symmetries
            )
        n = v.cells
        return min(
            (_map_bits(self.o, p) << n | _map_bits(self.x, p)) << 1 | self.to_move for p in v.symmetries
        )

    # --- display --------------------------------------------------------------

    def render(self) -> str:
        """The board as text: X, O and ``.`` for empty, one row a line."""
        v = self.variant
        rows = []
        for r in range(v.rows):
            row = []
            for c in range(v.cols):
                m = self.mark_at(r * v.cols + c)
                row.append("." if m is None else m.name)
            rows.append(" ".join(row))
        return "\n".join(rows)


_new = object.__new__
(_SET_VARIANT, _SET_X, _SET_O, _SET_QUEUES, _SET_TO_MOVE, _SET_PLY, _SET_MOVES, _SET_OUTCOME, _SET_CAP,
 _SET_DRAW_RULES, _SET_HISTORY) = (
    getattr(State, name).__set__
    for name in ("variant", "x", "o", "queues", "to_move", "ply", "moves", "outcome", "ply_cap",
                 "draw_rules", "history")
)  # fmt: skip


def _make(
    variant: Variant,
    x: int,
    o: int,
    queues: tuple[tuple[Cell, ...], tuple[Cell, ...]],
    to_move: Mark,
    ply: int,
    moves: tuple[Cell, ...],
    outcome: Outcome | None,
    ply_cap: int | None,
    draw_rules: bool,
    history: tuple[int, ...],
) -> State:
    """Build a State from all its fields, about twice as fast as the frozen dataclass
    constructor (slot descriptors skip its per-field ``object.__setattr__``): the hot
    path of search and enumeration."""
    state: State = _new(State)
    _SET_VARIANT(state, variant)
    _SET_X(state, x)
    _SET_O(state, o)
    _SET_QUEUES(state, queues)
    _SET_TO_MOVE(state, to_move)
    _SET_PLY(state, ply)
    _SET_MOVES(state, moves)
    _SET_OUTCOME(state, outcome)
    _SET_CAP(state, ply_cap)
    _SET_DRAW_RULES(state, draw_rules)
    _SET_HISTORY(state, history)
    return state


def _cells_of(mask: int) -> Iterator[Cell]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _map_bits(mask: int, perm: Symmetry) -> int:
    out = 0
    while mask:
        low = mask & -mask
        out |= 1 << perm[low.bit_length() - 1]
        mask ^= low
    return out


def _queue_key(queues: tuple[tuple[Cell, ...], tuple[Cell, ...]], to_move: Mark) -> int:
    key = 0
    for queue in queues:
        packed = 0
        for c in queue:
            packed = packed << _QUEUE_BITS | (c + 1)
        key = key << (3 * _QUEUE_BITS) | packed
    return key << 1 | to_move


def _run_through(v: Variant, own: int, cell: Cell, window: int) -> tuple[Cell, ...]:
    """All cells of the maximal run containing ``window`` (so overlines are reported whole)."""
    cells = v.window_cells[window]
    if v.k >= max(v.rows, v.cols):
        return cells  # no room for an overline
    dr, dc = v.window_step[window]
    run = set(cells)
    for sign in (1, -1):
        r, c = divmod(cell, v.cols)
        while True:
            r, c = r + sign * dr, c + sign * dc
            if not (0 <= r < v.rows and 0 <= c < v.cols) or not own >> (r * v.cols + c) & 1:
                break
            run.add(r * v.cols + c)
    return tuple(sorted(run))
