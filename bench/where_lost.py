"""Where `gomoku` lost its games as O: the first position, X to move, from which X wins by
threats (fours and threes, ``--depth`` threats deep), and whether O had a move, the move
before, that left X no such win.

Run: .venv/bin/python bench/as_o.py --keep games.jsonl
     .venv/bin/python bench/where_lost.py games.jsonl [--depth 6] [--nodes 400000]

For each game X won it prints the seed and opening, the ply of O's move that let the win
in (counted from the game's first stone), the move played, how many cells near stones O
had, and those after which X had no win by threats ``--depth`` deep (an O four counts
after X's forced block): the moves a check that deep would have kept. Then how many
games had such a move, how many had none (lost earlier: deeper than the search, or by
position), and how many X won by threats from the opening already.

A game's opening is its first ``stones`` moves (four in files without the field); after
an odd number O moves first, X's first position is the one after O's move, and a win by
threats there was let in by that move.

Each search is `GomokuStrategy.threat_win` with ``--nodes`` nodes, far more than the
60,000 the bench gives all of a move's searches; a search that runs out is not counted
as safe, and the cells where that happened are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strength import VARIANT

from bots.strategies.gomoku import GomokuStrategy
from bots.strategies.gomoku_core import CoreGomoku, available
from bots.strategies.gomoku_lines import Lines
from protocol.rules import Cell, State

X = 0


@dataclass
class Loss:
    """Where a game X won was let go. ``ply`` is None when X won by threats from the
    opening (``from_opening``) or was never found to."""

    ply: int | None = None
    from_opening: bool = False
    played: Cell = -1
    cells: int = 0
    safe: list[Cell] = field(default_factory=list)
    unknown: list[Cell] = field(default_factory=list)
    #: The nodes the search took: to find X's win after the move played, and to show
    #: there was none after each safe move (what a check that deep costs).
    played_nodes: int = 0
    safe_nodes: list[int] = field(default_factory=list)


def x_wins(state: State, depth: int, nodes: int) -> bool | None:
    """Whether X, were it to move in ``state``, wins by threats ``depth`` deep; None if
    the search ran out of ``nodes``."""
    return _search(state, depth, nodes)[0]


def _search(state: State, depth: int, nodes: int, after: Cell = -1) -> tuple[bool | None, int]:
    """`x_wins` (after O plays ``after``, if given), and the nodes the search took."""
    # the C core where it was built: the same searches, node for node, faster
    searcher = CoreGomoku(nodes_budget=nodes) if available() else GomokuStrategy(nodes_budget=nodes)
    found, complete = searcher.threat_win(state, X, depth, nodes, after)
    return (True if found is not None else None if not complete else False), searcher.nodes


def safe_after(state: State, move: Cell, depth: int, nodes: int) -> bool | None:
    """O (to move in ``state``) plays ``move``: is X then left with no win by threats
    (None: a search ran out)? An O four is blocked first, X's forced reply, and X is
    looked at as if to move again."""
    return _safe_after(state, move, depth, nodes)[0]


def _safe_after(state: State, move: Cell, depth: int, nodes: int) -> tuple[bool | None, int]:
    """`safe_after`, and the nodes its search took (0 when none was needed)."""
    if state.play(move).outcome is not None:
        return True, 0
    won, took = _search(state, depth, nodes, move)
    return (None if won is None else not won), took


def where_lost(moves: list[Cell], opening: int, depth: int, nodes: int) -> Loss:
    """The O move of a game X won (``moves``, the first ``opening`` of them the opening)
    after which X first won by threats ``depth`` deep, and the moves O had there. After
    an opening of odd length O moves first; X's first position is the one after it, and
    a win there was let in by that move."""
    states = [State.replay(VARIANT, moves[:opening])]
    for m in moves[opening:]:
        states.append(states[-1].play(m))
    start = opening + opening % 2  # X to move
    won = (t for t in range(start, len(moves), 2) if x_wins(states[t - opening], depth, nodes))
    first = next(won, None)
    # (after an odd opening ``start`` is past it: a win at ``start`` was let in by O's first move)
    if first is None or first == opening:
        return Loss(from_opening=first == opening)
    before = states[first - 1 - opening]
    cells = Lines.of(before).candidates()
    played = moves[first - 1]
    # the move played too, for what finding X's win after it cost (it may lie farther out)
    checked = {c: _safe_after(before, c, depth, nodes) for c in {*cells, played}}
    safe = sorted(c for c, (ok, _) in checked.items() if ok)
    return Loss(
        ply=first - 1,
        played=played,
        cells=len(cells),
        safe=safe,
        unknown=sorted(c for c, (ok, _) in checked.items() if ok is None),
        played_nodes=checked[played][1],
        safe_nodes=[checked[c][1] for c in safe],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("games", type=Path, help="bench/as_o.py --keep's file")
    parser.add_argument("--depth", type=int, default=6, help="threats deep (a three or a four each)")
    parser.add_argument("--nodes", type=int, default=400_000, help="nodes a search")
    args = parser.parse_args()
    games = []
    try:
        for line in args.games.read_text().splitlines():
            if line.strip():
                game = json.loads(line)
                games.append({"seed": game["seed"], "opening": game["opening"], "result": game["result"],
                              "stones": int(game.get("stones", 4)),
                              "moves": [int(m) for m in game["moves"]]})  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as e:
        parser.error(f"{args.games}: not the games of bench/as_o.py --keep ({e!r})")
    lost = [g for g in games if g["result"] == "1-0"]
    had = none = early = ran_out = 0
    for g in lost:
        loss = where_lost(g["moves"], g["stones"], args.depth, args.nodes)
        name = f"{g['seed']}/{g['opening']}"
        if loss.ply is None:
            early += loss.from_opening
            told = "won by threats from the opening" if loss.from_opening else "never found to"
            print(f"{name}: X {told}")
            continue
        had += bool(loss.safe)
        none += not loss.safe
        ran_out += bool(loss.unknown)
        ran = f"; ran out on {loss.unknown}" if loss.unknown else ""
        costs = f" (nodes to show it: {', '.join(map(str, loss.safe_nodes))})" if loss.safe else ""
        print(f"{name}: O's move at ply {loss.ply} ({loss.played}) let it in, found in {loss.played_nodes} "
              f"nodes; of {loss.cells} cells, safe: {loss.safe or 'none'}{costs}{ran}")  # fmt: skip
    print(f"{len(lost)} games X won of {len(games)}, {args.depth} threats deep: O had a safe move where it "
          f"let the win in {had}, none {none}; X won by threats from the opening {early}, never found to "
          f"{len(lost) - had - none - early}; a search ran out in {ran_out}")  # fmt: skip


if __name__ == "__main__":
    main()
