"""`ttt bot` (one strategy as a network player) and `ttt tournament` (bots against bots).

Heavy imports (asyncio shells, rich, the strategies) happen inside the handlers,
so ``ttt --help`` stays quick.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

# re-exported: the bench and the tests load strategies through the CLI's module
from bots.tournament.entries import load_strategy, parse_entries

if TYPE_CHECKING:
    from bots.tournament.director import TournamentConfig
    from bots.tournament.pairing import Opening
    from protocol import messages as m

FORMATS = ("round-robin", "gauntlet", "swiss", "sprt", "knockout")

__all__ = ["build_config", "load_strategy", "parse_entries", "planned_games", "register"]


def register(subparsers: Any) -> None:
    from bots.player_core import DEFAULT_LEVELS

    p = subparsers.add_parser("bot", help="run one bot that plays on a server as an ordinary player")
    p.add_argument("--server", required=True, help="the server's URL, e.g. ws://127.0.0.1:8765")
    p.add_argument("--strategy", required=True, help="the strategy's name (rule, minimax, table, ...)")
    p.add_argument("--name", help="the player name (default: STRATEGY-bot)")
    p.add_argument("--noise", type=float, default=0.0, help="chance of a random move instead (0..1)")
    p.add_argument(
        "--think-ms", type=int, default=0, help="take at least this long over each move (within the clock)"
    )
    p.add_argument("--variants", help="comma-separated variants it accepts (default: any)")
    p.add_argument("--max-games", type=int, default=16, help="games at once, at most (default 16)")
    p.add_argument(
        "--max-per-opponent",
        type=int,
        default=2,
        help="games at once against one challenger, at most (default 2; arranged games not counted)",
    )
    p.add_argument(
        "--levels",
        default=",".join(f"{name}={noise:g}" for name, noise in DEFAULT_LEVELS),
        help="levels of play offered to challengers, NAME=CHANCE of a random move, weakest first "
        "(default %(default)s; 'none' offers none)",
    )
    p.add_argument("--token-file", help="keep the player's token here, to come back as the same player")
    p.add_argument(
        "--keep-games",
        action="store_true",
        help="on SIGTERM/SIGINT, leave running games to the server's grace period instead of resigning "
        "(the next run with the same --token-file takes them up)",
    )
    p.add_argument(
        "--lifeline", action="store_true", help="stop when stdin closes (the parent process is gone)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bot's random choices")
    p.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE",
        help="an option of the strategy, e.g. depth=4 for minimax (repeatable)",
    )  # fmt: skip
    p.add_argument("--control", action="store_true", help=argparse.SUPPRESS)  # driven by `ttt tournament`
    p.add_argument("--entrants", default="", help=argparse.SUPPRESS)  # the runner's players
    p.set_defaults(handler=_bot)

    p = subparsers.add_parser("tournament", help="play a bot-vs-bot tournament through a live server")
    p.add_argument("--variant", default="classic", help="the variant (default classic)")
    p.add_argument("--bots", help="comma-separated strategies; NAME=STRATEGY to name one")
    p.add_argument(
        "--bot", action="append", metavar="name=N,strategy=S,...",
        help="one entry with its own options: name, strategy, noise, think_ms, and options of the "
        "strategy (e.g. depth=4); repeatable, alone or beside --bots",
    )  # fmt: skip
    p.add_argument("--format", choices=FORMATS, default="round-robin", help="pairing format")
    p.add_argument("--games-per-pair", type=int, default=10, help="games per pairing, even (default 10)")
    p.add_argument("--concurrency", type=int, default=8, help="games at once (default 8)")
    p.add_argument("--server", help="use this running server (default: start an embedded one)")
    p.add_argument(
        "--connected",
        action="store_true",
        help="with --server: --bots names players already online there (e.g. ttt bot processes); "
        "start no bot process, arrange their games through the server",
    )
    p.add_argument(
        "--director-name",
        help="with --connected: the director's player name (name it, and the bots, in the server's "
        "--trust so the tournament is not throttled like a stranger; default: a new td-... name each run)",
    )
    p.add_argument(
        "--director-token-file",
        help="with --connected: where the director keeps its token (a named director)",
    )
    p.add_argument("--in-process", action="store_true", help="no network: play_match in this process")
    p.add_argument(
        "--recover", action="store_true",
        help="start a bot process again when it dies: it loses only the games it was playing",
    )  # fmt: skip
    p.add_argument("--openings", type=int, help="start from N distinct balanced positions (solved table)")
    p.add_argument("--opening-moves", help='start positions as move lists, e.g. "4,0 4,1"')
    p.add_argument("--opening-file", help="start positions from a file: one move list a line (4,0 or 4 0)")
    p.add_argument(
        "--opening-order",
        choices=("sequential", "random"),
        default="sequential",
        help="--opening-file: file order, or shuffled by --seed (default sequential)",
    )
    p.add_argument("--opening-start", type=int, default=1, help="--opening-file: the first line to use (1)")
    p.add_argument("--opening-plies", type=int, help="--opening-file: keep at most this many moves a line")
    colours = p.add_mutually_exclusive_group()
    colours.add_argument("--noswap", action="store_true", help="both games of a pair with the same colours")
    colours.add_argument("--reverse", action="store_true", help="the second entry of a pairing plays X first")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--out", help="write standings.json, crosstable.csv, games.jsonl, crosstable.svg here")
    clock = p.add_mutually_exclusive_group()
    clock.add_argument("--move-ms", type=int, help="per-move time control in ms (0: none; default 5000)")
    clock.add_argument(
        "--tc", help="base+increment in seconds, as cutechess-cli's tc= (e.g. 10+0.1, 1:30+1; inf: none)"
    )
    p.add_argument(
        "--timemargin", type=int, default=0, metavar="MS",
        help="a bot may go this far over its time before it loses on time (its own bot processes "
        "plan without it; default 0)",
    )  # fmt: skip
    p.add_argument("--rounds", type=int, help="Swiss rounds")
    p.add_argument(
        "--max-plies", type=int, help="adjudicate a game still going after N plies as a draw (any variant)"
    )
    p.add_argument("--sprt", help="ELO0,ELO1 for --format sprt (two bots); --sprt=-10,10 for a negative one")
    p.add_argument("--elo0", type=float, help="--format sprt: the Elo of H0 (default 0)")
    p.add_argument("--elo1", type=float, help="--format sprt: the Elo of H1 (default 50)")
    p.add_argument("--alpha", type=float, default=0.05, help="--format sprt: false positive rate (0.05)")
    p.add_argument("--beta", type=float, default=0.05, help="--format sprt: false negative rate (0.05)")
    p.add_argument(
        "--sprt-model", choices=("logistic", "normalized", "bayesian"), default="logistic",
        help="--format sprt: what the Elo bounds are: logistic Elo (fishtest; default), normalized "
        "Elo (fastchess's default) or BayesElo (cutechess-cli's scale; counts games)",
    )  # fmt: skip
    p.add_argument("--max-games", type=int, default=10_000, help="cap of an SPRT match (whole pairs)")
    p.add_argument(
        "--rating-interval", type=int, default=10,
        help="without a terminal: the standings every N games (0: only at the end; default 10)",
    )  # fmt: skip
    p.add_argument("--noise", type=float, default=0.0, help="every bot: chance of a random move")
    p.add_argument("--think-ms", type=int, default=0, help="every bot: least time over each move")
    p.add_argument("--quiet", action="store_true", help="no live display, just the final standings")
    p.add_argument(
        "--mqtt", help="publish the standings after each game to ttt/v1/tournaments/ID/standings (retained)"
    )
    p.add_argument("--tournament-id", help="the ID in that topic (default: a new random one)")
    p.add_argument(
        "--resume", action="store_true", help="continue the tournament whose games are in --out (same flags)"
    )
    p.set_defaults(handler=_tournament)


# --- ttt bot --------------------------------------------------------------------------------


def _bot(args: argparse.Namespace) -> int:
    import asyncio

    from bots.player import BotConfig, Policy, run_bot
    from bots.tournament.entries import parse_value
    from bots.tournament.pairing import TournamentError

    if args.max_games < 1 or args.max_per_opponent < 1 or args.think_ms < 0:
        raise TournamentError("--max-games and --max-per-opponent must be at least 1, --think-ms at least 0")
    options = {}
    for text in args.option:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise TournamentError(f"--option {text!r} is not KEY=VALUE")
        options[key] = parse_value(value)
    variants = frozenset(v.strip() for v in args.variants.split(",") if v.strip()) if args.variants else None
    if variants is not None:
        from protocol.rules import find_variant

        variants = frozenset(find_variant(v).name for v in variants)  # unknown names fail here
    strategy = load_strategy(args.strategy, args.noise, options)
    if args.control:  # a tournament runner's bot: its games replay from the tournament's seed
        from bots.strategies.base import reproducible

        reproducible(strategy)
    refuses = getattr(getattr(strategy, "inner", strategy), "refusal", None)
    policy = Policy(
        variants=variants,
        max_games=args.max_games,
        max_per_opponent=args.max_per_opponent,
        think_ms=args.think_ms,
        levels=parse_levels(args.levels),
        refuses=refuses if callable(refuses) else None,
    )
    config = BotConfig(
        server=args.server,
        name=args.name or f"{args.strategy}-bot",
        policy=policy,
        seed=args.seed,
        token_file=args.token_file,
        control=args.control,
        entrants=frozenset(n for n in args.entrants.split(",") if n),
        keep_games=args.keep_games,
        lifeline=args.lifeline,
    )
    return asyncio.run(run_bot(config, strategy))


def parse_levels(text: str) -> tuple[tuple[str, float], ...]:
    """``easy=0.5,best=0`` -> (("easy", 0.5), ("best", 0.0)); ``none`` -> ()."""
    from bots.tournament.pairing import TournamentError
    from protocol import messages as m

    if text.strip().lower() == "none":
        return ()
    levels = []
    for part in text.split(","):
        name, sep, chance = part.strip().partition("=")
        try:
            noise = float(chance)
            m.Hello(name="x", levels=[name])  # the wire's rule for a level name
        except ValueError:
            noise = -1.0
        if not sep or not 0.0 <= noise <= 1.0:
            raise TournamentError(f"--levels: {part!r} is not NAME=CHANCE with a chance from 0 to 1")
        levels.append((name, noise))
    if len(levels) > 8 or len({n for n, _ in levels}) != len(levels):
        raise TournamentError("--levels: at most 8 levels, each named once")
    return tuple(levels)


# --- ttt tournament ---------------------------------------------------------------------------


def parse_connected(args: argparse.Namespace) -> dict[str, str]:
    """``--connected``: the names in ``--bots`` (players online at ``--server``), each once."""
    from bots.tournament.pairing import TournamentError

    if not args.server:
        raise TournamentError("--connected needs --server URL (the server the bots are connected to)")
    if args.in_process or args.noise or args.think_ms or getattr(args, "recover", False):
        raise TournamentError(
            "--connected plays the bots as they run: "
            "--in-process, --noise, --think-ms and --recover do not apply"
        )
    names = [n.strip() for n in (args.bots or "").split(",") if n.strip()]
    for name in names:
        if "=" in name:
            raise TournamentError(f"--connected: {name!r}: name players online, not strategies")
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded):
        raise TournamentError("--connected: a player is named twice in --bots")
    if len(names) < 2:
        raise TournamentError("--bots needs at least two entries")
    return dict.fromkeys(names, "connected")


def time_control(args: argparse.Namespace) -> m.TimeControl | None:
    """The clock of every game: ``--tc``, else ``--move-ms`` (5000 by default); None
    ``--in-process``, which keeps no clock."""
    from bots.tournament.timecontrol import parse_tc, per_move

    if getattr(args, "in_process", False):
        return None
    if getattr(args, "tc", None):
        return parse_tc(args.tc)
    move_ms = getattr(args, "move_ms", None)
    return per_move(5000 if move_ms is None else move_ms)


def build_config(args: argparse.Namespace, players: tuple[str, ...]) -> TournamentConfig:
    from bots.tournament.director import Format, TournamentConfig
    from bots.tournament.pairing import TournamentError
    from bots.tournament.stats import Sprt
    from protocol.rules import find_variant

    variant = find_variant(args.variant).name
    sprt = None
    if args.format == "sprt":
        try:
            elo0, elo1 = (float(v) for v in (args.sprt or "0,50").split(","))
            elo0 = elo0 if getattr(args, "elo0", None) is None else args.elo0
            elo1 = elo1 if getattr(args, "elo1", None) is None else args.elo1
            sprt = Sprt(elo0, elo1, args.alpha, args.beta, getattr(args, "sprt_model", "logistic"))
        except ValueError as exc:
            raise TournamentError(
                f"--elo0 ELO0 --elo1 ELO1 (or --sprt=ELO0,ELO1) with ELO0 < ELO1, and 0 < alpha, beta: {exc}"
            ) from None
    return TournamentConfig(
        variant=variant,
        players=players,
        format=Format(args.format),
        games_per_pair=args.games_per_pair,
        concurrency=args.concurrency,
        openings=_openings(args, variant),
        rounds=args.rounds,
        sprt=sprt,
        max_games=args.max_games,
        max_plies=getattr(args, "max_plies", None),
        colours="noswap"
        if getattr(args, "noswap", False)
        else "reverse"
        if getattr(args, "reverse", False)
        else "swap",
    )


def _openings(args: argparse.Namespace, variant: str) -> tuple[Opening, ...]:
    from bots.tournament.pairing import TournamentError, opening_suite, parse_openings

    if args.opening_moves:
        return tuple(parse_openings(args.opening_moves, variant))
    if getattr(args, "opening_file", None):
        from pathlib import Path

        from bots.tournament.pairing import read_opening_file

        try:
            text = Path(args.opening_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise TournamentError(f"--opening-file: {exc}") from None
        suite = read_opening_file(
            text, variant, order=args.opening_order, start=args.opening_start, plies=args.opening_plies,
            seed=args.seed,
        )  # fmt: skip
        return tuple(suite)
    if args.openings:
        from bots.solver import Unsolvable, solve

        try:
            table = solve(variant)
        except Unsolvable as exc:
            raise TournamentError(f"--openings needs the solved table: {exc.message}") from None
        return tuple(opening_suite(variant, args.openings, value=table.value))
    return ((),)


def planned_games(config: TournamentConfig) -> int:
    """How many games the schedule holds (an SPRT match: its cap; a knockout: without tie-breaks)."""
    from bots.tournament.director import Director, Format

    n = len(config.players)
    f = config.format
    if f is Format.ROUND_ROBIN:
        return n * (n - 1) // 2 * config.games_per_pair
    if f is Format.GAUNTLET:
        return (n - 1) * config.games_per_pair
    if f is Format.SWISS:
        return Director(config).swiss_rounds * (n // 2) * config.games_per_pair
    if f is Format.KNOCKOUT:
        return (n - 1) * config.games_per_pair  # without tie-breaks
    return config.max_games


def _tournament(args: argparse.Namespace) -> int:
    from bots.tournament.command import run_tournament

    return run_tournament(args)
