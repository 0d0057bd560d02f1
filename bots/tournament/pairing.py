"""Who plays whom: round-robin, gauntlet and Swiss pairings, as colour-swapped game pairs.

Every pairing plays its games in pairs: the same start position twice, each player
X once. That cancels the first-move advantage, and the two games of a pair are
what pentanomial statistics count. Pure: no I/O; randomness only from a passed-in
`random.Random`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import ArenaError
from protocol.rules import Cell, State, find_variant


class TournamentError(ArenaError):
    """A tournament request that cannot be carried out (bad format, players or openings)."""

    code = "bad_tournament"


Opening = tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class Pairing:
    """Two players who meet for ``pairs`` colour-swapped game pairs in ``round``."""

    round: int
    first: str
    second: str


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game of a schedule.

    Attributes:
        number: 1-based, unique within the tournament; the order games are started.
        round: the round of the pairing (1-based).
        pair: which colour-swapped pair of the pairing (0-based); both games of a pair
            share ``pair`` and ``opening``.
        x, o: the players' names by colour.
        opening: moves played from the empty board before the players take over.
    """

    number: int
    round: int
    pair: int
    x: str
    o: str
    opening: Opening = ()

    @property
    def players(self) -> tuple[str, str]:
        return (self.x, self.o)


def check_players(players: Sequence[str]) -> None:
    if len(players) < 2:
        raise TournamentError(f"a tournament needs at least 2 players, not {len(players)}")
    seen = set()
    for name in players:
        if not name:
            raise TournamentError("a player needs a name")
        if name in seen:
            raise TournamentError(f"player {name!r} is entered twice; give entries distinct names")
        seen.add(name)


def check_games_per_pair(games_per_pair: int) -> None:
    if games_per_pair < 2 or games_per_pair % 2:
        raise TournamentError(
            f"games per pairing must be even and at least 2 (colour-swapped pairs), not {games_per_pair}"
        )


def round_robin(players: Sequence[str]) -> list[Pairing]:
    """Every player against every other once, in rounds (the circle method).

    With an odd number of players one sits out each round. Within a round no
    player appears twice, so the first games started spread over everyone.
    """
    check_players(players)
    seats: list[str | None] = list(players)
    if len(seats) % 2:
        seats.append(None)
    n = len(seats)
    pairings = []
    for r in range(n - 1):
        for i in range(n // 2):
            a, b = seats[i], seats[n - 1 - i]
            if a is not None and b is not None:
                # alternate who is "first" (X in the first game of a pair) for the fixed seat
                first, second = (a, b) if (r + i) % 2 == 0 else (b, a)
                pairings.append(Pairing(r + 1, first, second))
        seats = [seats[0], seats[-1], *seats[1:-1]]
    return pairings


def gauntlet(hero: str, others: Sequence[str]) -> list[Pairing]:
    """``hero`` against each of ``others``, one round each."""
    check_players([hero, *others])
    return [
        Pairing(i + 1, hero, other) if i % 2 == 0 else Pairing(i + 1, other, hero)
        for i, other in enumerate(others)
    ]


def expand(
    pairings: Iterable[Pairing],
    games_per_pair: int,
    openings: Sequence[Opening] = ((),),
    first_number: int = 1,
    interleave: bool = True,
    first_pairing: int = 0,
    colours: str = "swap",
) -> list[GameSpec]:
    """The games of ``pairings``: ``games_per_pair // 2`` colour-swapped pairs each.

    Pair ``j`` of the ``k``-th pairing of the tournament (``first_pairing`` counts the
    pairings scheduled before these) starts from ``openings[(k + j) % len(openings)]``:
    each opening is played as a colour-swapped pair, a pairing with as many pairs as
    openings plays each once, and with fewer pairs the suite still goes round from
    pairing to pairing. With ``interleave`` the games are ordered pair index first, so
    the first games started cover every pairing (live standings mean something early).
    ``colours`` (`pair_colours`): ``swap`` (each pair: first X, then second X),
    ``reverse`` (second X, then first X) or ``noswap`` (first X in both games).
    """
    check_games_per_pair(games_per_pair)
    if not openings:
        openings = ((),)
    listed = list(pairings)
    order = sorted(
        ((j, k) for k in range(len(listed)) for j in range(games_per_pair // 2)),
        key=(lambda t: (t[0], t[1])) if interleave else (lambda t: (t[1], t[0])),
    )
    games = []
    number = first_number
    for j, k in order:
        p = listed[k]
        opening = tuple(openings[(first_pairing + k + j) % len(openings)])
        for x, o in pair_colours(p.first, p.second, colours):
            games.append(GameSpec(number, p.round, j, x, o, opening))
            number += 1
    return games


COLOURS = ("swap", "reverse", "noswap")


def pair_colours(first: str, second: str, colours: str = "swap") -> tuple[tuple[str, str], tuple[str, str]]:
    """The (X, O) of the two games of a pair: cutechess-cli's default, ``-reverse``, ``-noswap``."""
    if colours == "reverse":
        return (second, first), (first, second)
    if colours == "noswap":
        return (first, second), (first, second)
    if colours != "swap":
        raise TournamentError(f"colours are one of {', '.join(COLOURS)}, not {colours!r}")
    return (first, second), (second, first)


def swiss_round(
    ranking: Sequence[str],
    met: Mapping[str, set[str]],
    byes: Mapping[str, int],
    round_number: int,
    first_counts: Mapping[str, int] | None = None,
    met_counts: Mapping[tuple[str, str], int] | None = None,
) -> tuple[list[Pairing], str | None]:
    """One Swiss round: neighbours in ``ranking`` meet unless they met before.

    When no pairing without a repeat exists (a score group that has met all round, or
    more rounds than a round-robin), pairings met once may meet again, then those met
    twice, and so on: the fewest repeats first, neighbours first among them.

    Args:
        ranking: players best first (by points so far, then seed).
        met: for each player, the players already met.
        byes: byes each player has had; the bye (odd player count) goes to the
            lowest-ranked player with the fewest.
        first_counts: how often each player was "first" (X in the first game of a
            pair); the one with fewer goes first, to keep colours even.
        met_counts: how often each pair (both orders) met; default once for each in ``met``.

    Returns:
        The pairings and the player with the bye (or None).

    """
    check_players(ranking)
    firsts = first_counts or {}
    counts = met_counts if met_counts is not None else {(a, b): 1 for a in met for b in met[a]}
    candidates: list[str | None] = [None]
    if len(ranking) % 2:
        # sorted is stable: among equal bye counts, the lowest-ranked comes first
        by_byes: list[str] = sorted(reversed(ranking), key=lambda p: byes.get(p, 0))
        candidates = list(by_byes)
    most = max(counts.values(), default=0)
    for limit in range(1, most + 2):  # limit: pairs met this often or more may not meet
        barred = {p: {q for q in ranking if counts.get((p, q), 0) >= limit} for p in ranking}
        for bye in candidates:
            pool = [p for p in ranking if p != bye]
            matched = _match(pool, barred)
            if matched is not None:
                pairings = []
                for a, b in matched:
                    first, second = (b, a) if firsts.get(b, 0) < firsts.get(a, 0) else (a, b)
                    pairings.append(Pairing(round_number, first, second))
                return pairings, bye
    raise AssertionError("with no pair barred, any pool pairs")  # pragma: no cover


def _match(pool: list[str], met: Mapping[str, set[str]]) -> list[tuple[str, str]] | None:
    """Pair the top player with the best-ranked opponent not yet met, backtracking on dead ends."""
    if not pool:
        return []
    top, rest = pool[0], pool[1:]
    for i, other in enumerate(rest):
        if other in met.get(top, set()):
            continue
        tail = _match(rest[:i] + rest[i + 1 :], met)
        if tail is not None:
            return [(top, other), *tail]
    return None


Valuer = Callable[[State], int]


def opening_suite(
    variant: str,
    count: int,
    value: Valuer | None = None,
    plies: int | None = None,
    balanced: bool = True,
) -> list[Opening]:
    """``count`` distinct start positions (distinct up to symmetry), as move lists.

    Positions come from all move sequences of ``plies`` plies (by default the
    fewest plies that give ``count`` of them), in a fixed order, so a suite is
    reproducible. With ``balanced`` only positions drawn with perfect play are
    kept, which needs ``value``: the solved table's value of a position for the
    side to move (+1 win, 0 draw, -1 loss). Finished positions are never kept.
    """
    if count < 1:
        raise TournamentError(f"an opening suite needs at least 1 position, not {count}")
    v = find_variant(variant)
    if balanced and value is None:
        raise TournamentError("balanced openings need the solved table's values")
    start = State.start(v)
    for depth in [plies] if plies is not None else range(1, 7):
        found: dict[int, Opening] = {}
        _collect(start, depth, (), found)
        suite = []
        for moves in sorted(found.values()):
            state = State.replay(v, moves)
            if state.is_over:
                continue
            if balanced and value is not None and value(state) != 0:
                continue
            suite.append(moves)
        if len(suite) >= count:
            return suite[:count]
    kind = "balanced " if balanced else ""
    raise TournamentError(f"{variant} has fewer than {count} distinct {kind}openings of up to 6 plies")


def _collect(state: State, depth: int, moves: Opening, found: dict[int, Opening]) -> None:
    if depth == 0 or state.is_over:
        if depth == 0:
            found.setdefault(state.canonical_key(), moves)
        return
    for cell in state.legal_moves():
        _collect(state.play(cell), depth - 1, (*moves, cell), found)


def read_opening_file(
    text: str, variant: str, *, order: str = "sequential", start: int = 1, plies: int | None = None,
    seed: int = 0,
) -> list[Opening]:  # fmt: skip
    """An opening suite from a file's text: one move list a line (cells separated by
    commas or spaces; ``#`` starts a comment), as cutechess-cli's ``-openings``.

    Args:
        order: ``sequential`` (file order, from line ``start``) or ``random`` (shuffled
            by ``seed``, after ``start``).
        start: the 1-based line of the first opening (counting opening lines only).
        plies: keep at most this many moves of each line.
    """
    import random

    lines = [line.split("#", 1)[0].replace(",", " ").split() for line in text.splitlines()]
    chunks = [",".join(words[:plies] if plies is not None else words) for words in lines if words]
    if plies is not None and plies < 1:
        raise TournamentError(f"--opening-plies must be at least 1, not {plies}")
    if start < 1 or start > len(chunks):
        raise TournamentError(f"--opening-start {start}: the file holds {len(chunks)} openings")
    suite = parse_openings(" ".join(chunks[start - 1 :]), variant)
    if order == "random":
        random.Random(f"ttt-arena/openings/{seed}").shuffle(suite)
    elif order != "sequential":
        raise TournamentError(f"--opening-order is sequential or random, not {order!r}")
    return suite


def parse_openings(text: str, variant: str) -> list[Opening]:
    """Move lists written ``4,0 4,1,8`` (space, newline or ``;`` between lists), each checked legal."""
    v = find_variant(variant)
    suite = []
    for chunk in text.replace(";", " ").split():
        try:
            moves = tuple(int(c) for c in chunk.split(",") if c)
        except ValueError:
            raise TournamentError(f"an opening is cells separated by commas, not {chunk!r}") from None
        state = State.replay(v, moves)
        if state.is_over:
            raise TournamentError(f"opening {chunk!r} already ends the game")
        suite.append(moves)
    if not suite:
        raise TournamentError("no openings given")
    return suite
