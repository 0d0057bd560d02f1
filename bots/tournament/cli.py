"""`ttt bot` (one strategy as a network player) and `ttt tournament` (bots against bots).

Heavy imports (asyncio shells, rich, the strategies) happen inside the handlers,
so ``ttt --help`` stays quick.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bots.tournament.director import Director, TournamentConfig
    from bots.tournament.feed import StandingsFeed
    from bots.tournament.match import Strategy
    from bots.tournament.pairing import Opening
    from bots.tournament.standings import GameRecord

FORMATS = ("round-robin", "gauntlet", "swiss", "sprt")


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
        "--levels",
        default=",".join(f"{name}={noise:g}" for name, noise in DEFAULT_LEVELS),
        help="levels of play offered to challengers, NAME=CHANCE of a random move, weakest first "
        "(default %(default)s; 'none' offers none)",
    )
    p.add_argument("--token-file", help="keep the player's token here, to come back as the same player")
    p.add_argument("--seed", type=int, default=0, help="seed of the bot's random choices")
    p.add_argument("--control", action="store_true", help=argparse.SUPPRESS)  # driven by `ttt tournament`
    p.add_argument("--entrants", default="", help=argparse.SUPPRESS)  # the runner's players
    p.set_defaults(handler=_bot)

    p = subparsers.add_parser("tournament", help="play a bot-vs-bot tournament through a live server")
    p.add_argument("--variant", default="classic", help="the variant (default classic)")
    p.add_argument("--bots", required=True, help="comma-separated strategies; NAME=STRATEGY to name one")
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
    p.add_argument("--in-process", action="store_true", help="no network: play_match in this process")
    p.add_argument("--openings", type=int, help="start from N distinct balanced positions (solved table)")
    p.add_argument("--opening-moves", help='start positions as move lists, e.g. "4,0 4,1"')
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--out", help="write standings.json, crosstable.csv, games.jsonl, crosstable.svg here")
    p.add_argument("--move-ms", type=int, default=5000, help="per-move time control in ms (0: none)")
    p.add_argument("--rounds", type=int, help="Swiss rounds")
    p.add_argument("--sprt", help="ELO0,ELO1 for --format sprt (two bots)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--max-games", type=int, default=10_000, help="cap of an SPRT match")
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


def load_strategy(name: str, noise: float = 0.0) -> Strategy:
    """The strategy ``name``, wrapped in `Noisy` when ``noise`` > 0.

    ``name`` is a name in the `bots.strategy` registry, or ``module:attribute`` for
    a strategy of your own (a class or factory called with no arguments, or an object
    with ``choose(state, rng)``).
    """
    import importlib

    from bots.tournament.match import Noisy
    from bots.tournament.pairing import TournamentError

    chosen: Strategy
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise TournamentError(f"no strategy {name!r}: {exc}") from None
        is_factory = isinstance(found, type) or (callable(found) and not hasattr(found, "choose"))
        try:
            chosen = found() if is_factory else found
        except Exception as exc:
            raise TournamentError(f"strategy {name!r} could not be made: {exc!r}") from None
        if not callable(getattr(chosen, "choose", None)):
            raise TournamentError(f"{name!r} is not a strategy: it has no choose(state, rng)")
    else:
        make = getattr(importlib.import_module("bots"), "strategy", None)
        if make is None:
            raise TournamentError("the strategies (bots.strategy) are not available")
        chosen = make(name)
    return Noisy(chosen, noise) if noise else chosen


def _bot(args: argparse.Namespace) -> int:
    import asyncio

    from bots.player import BotConfig, Policy, run_bot
    from bots.tournament.pairing import TournamentError

    if args.max_games < 1 or args.think_ms < 0:
        raise TournamentError("--max-games must be at least 1 and --think-ms at least 0")
    variants = frozenset(v.strip() for v in args.variants.split(",") if v.strip()) if args.variants else None
    if variants is not None:
        from protocol.rules import find_variant

        variants = frozenset(find_variant(v).name for v in variants)  # unknown names fail here
    strategy = load_strategy(args.strategy, args.noise)
    policy = Policy(
        variants=variants, max_games=args.max_games, think_ms=args.think_ms, levels=parse_levels(args.levels)
    )
    config = BotConfig(
        server=args.server,
        name=args.name or f"{args.strategy}-bot",
        policy=policy,
        seed=args.seed,
        token_file=args.token_file,
        control=args.control,
        entrants=frozenset(n for n in args.entrants.split(",") if n),
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


def parse_entries(text: str) -> dict[str, str]:
    """``rule,random,random,fast=minimax`` -> player name -> strategy (repeats get -2, -3 ...)."""
    from bots.tournament.pairing import TournamentError

    entries: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, _, strategy = item.partition("=")
        if not strategy:
            strategy = name
            k = 2
            while name in entries:
                name, k = f"{strategy}-{k}", k + 1
        if name in entries:
            raise TournamentError(f"two entries are named {name!r}")
        entries[name] = strategy
    if len(entries) < 2:
        raise TournamentError("--bots needs at least two entries")
    return entries


def parse_connected(args: argparse.Namespace) -> dict[str, str]:
    """``--connected``: the names in ``--bots`` (players online at ``--server``), each once."""
    from bots.tournament.pairing import TournamentError

    if not args.server:
        raise TournamentError("--connected needs --server URL (the server the bots are connected to)")
    if args.in_process or args.noise or args.think_ms:
        raise TournamentError(
            "--connected plays the bots as they run: --in-process, --noise and --think-ms do not apply"
        )
    names = [n.strip() for n in args.bots.split(",") if n.strip()]
    for name in names:
        if "=" in name:
            raise TournamentError(f"--connected: {name!r}: name players online, not strategies")
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded):
        raise TournamentError("--connected: a player is named twice in --bots")
    if len(names) < 2:
        raise TournamentError("--bots needs at least two entries")
    return dict.fromkeys(names, "connected")


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
            sprt = Sprt(elo0, elo1, args.alpha, args.beta)
        except ValueError as exc:
            raise TournamentError(
                f"--sprt is ELO0,ELO1 with ELO0 < ELO1, and 0 < alpha, beta: {exc}"
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
    )


def _openings(args: argparse.Namespace, variant: str) -> tuple[Opening, ...]:
    from bots.tournament.pairing import TournamentError, opening_suite, parse_openings

    if args.opening_moves:
        return tuple(parse_openings(args.opening_moves, variant))
    if args.openings:
        import importlib

        solved_value = getattr(importlib.import_module("bots"), "solved_value", None)
        if solved_value is None:
            raise TournamentError("--openings needs the solved table (bots.solved_value)")
        return tuple(opening_suite(variant, args.openings, value=solved_value))
    return ((),)


def planned_games(config: TournamentConfig) -> int:
    """How many games the schedule holds (an SPRT match: its cap)."""
    from bots.tournament.director import Director, Format

    n = len(config.players)
    f = config.format
    if f is Format.ROUND_ROBIN:
        return n * (n - 1) // 2 * config.games_per_pair
    if f is Format.GAUNTLET:
        return (n - 1) * config.games_per_pair
    if f is Format.SWISS:
        return Director(config).swiss_rounds * (n // 2) * config.games_per_pair
    return config.max_games


def _tournament(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from bots.tournament.report import matchup_lines, standings_table, write_outputs

    entries = parse_connected(args) if args.connected else parse_entries(args.bots)
    config = build_config(args, tuple(entries))
    console = Console()
    journal = _Journal(Path(args.out) if args.out else None, resume=args.resume)
    meta: dict[str, Any] = {"seed": args.seed, "entries": entries, "planned": planned_games(config)}
    if args.connected:
        meta["server"] = args.server
    feed = None
    if args.mqtt:
        import secrets

        from bots.tournament.feed import StandingsFeed

        tournament_id = args.tournament_id or "t" + secrets.token_hex(4)
        meta["tournament"] = tournament_id
        feed = StandingsFeed(args.mqtt, tournament_id)
        console.print(f"standings on {args.mqtt} topic {feed.topic}")
    with _Display(console, config, quiet=args.quiet, journal=journal, meta=meta, feed=feed) as display:
        if args.in_process:
            from bots.tournament.match import play_match

            strategies = {name: load_strategy(s, args.noise) for name, s in entries.items()}
            director = play_match(
                config, strategies, seed=args.seed, on_game=display.update, done_records=journal.records
            )
        elif args.connected:
            from bots.tournament.connected import ConnectedRunner

            connected = ConnectedRunner(
                config,
                args.server,
                move_ms=args.move_ms or None,
                on_game=display.update,
                done_records=journal.records,
            )
            director = asyncio.run(connected.run())
        else:
            from bots.tournament.runner import NetworkRunner

            for strategy in dict.fromkeys(entries.values()):
                load_strategy(strategy)  # a bad name fails here, before any process starts
            bot_args: list[str] = []
            if args.noise:
                bot_args += ["--noise", str(args.noise)]
            if args.think_ms:
                bot_args += ["--think-ms", str(args.think_ms)]
            runner = NetworkRunner(
                config,
                entries,
                seed=args.seed,
                server=args.server,
                move_ms=args.move_ms or None,
                bot_args=tuple(bot_args),
                on_game=display.update,
                done_records=journal.records,
            )
            director = asyncio.run(runner.run())
    console.print(standings_table(director))
    for line in matchup_lines(director):
        console.print(line)
    if director.ended_early:
        console.print(f"ended early: {director.ended_early}")
    if args.out:
        for path in write_outputs(Path(args.out), director, meta):
            console.print(f"wrote {path}")
    if feed is not None:
        from bots.tournament.report import standings_summary

        feed.offer(standings_summary(director, meta, status="finished"))
        if not feed.close(timeout=10.0):
            console.print("the MQTT broker did not confirm the final standings")
    return 0


class _Journal:
    """``games.jsonl`` in the output folder, appended as each game ends, so a stopped
    tournament can be resumed (``--resume``) from the games it already played."""

    def __init__(self, out: Path | None, resume: bool) -> None:
        from bots.tournament.pairing import TournamentError
        from bots.tournament.standings import GameRecord

        self.path = out / "games.jsonl" if out else None
        self.records: list[GameRecord] = []
        if resume:
            if self.path is None or not self.path.exists():
                raise TournamentError("--resume needs --out DIR holding the games.jsonl of the tournament")
            lines = self.path.read_text(encoding="utf-8").splitlines()
            self.records = [GameRecord.from_json(json.loads(line)) for line in lines if line.strip()]
        elif self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")

    def add(self, record: GameRecord, variant: str) -> None:
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"variant": variant, **record.to_json()}) + "\n")


class _Display:
    """A progress bar and the live standings (rich), updated after each game."""

    def __init__(
        self,
        console: Any,
        config: TournamentConfig,
        quiet: bool,
        journal: _Journal,
        meta: dict[str, Any],
        feed: StandingsFeed | None = None,
    ) -> None:
        self.console, self.config, self.quiet, self.journal = console, config, quiet, journal
        self.meta, self.feed = meta, feed
        self.live: Any = None
        self.progress: Any = None

    def __enter__(self) -> _Display:
        if self.quiet or not self.console.is_terminal:
            return self
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self.task = self.progress.add_task("games", total=planned_games(self.config))
        self.live = Live(self.progress, console=self.console, refresh_per_second=4)
        self.live.__enter__()
        return self

    def update(self, record: GameRecord, director: Director) -> None:
        self.journal.add(record, self.config.variant)
        if self.journal.path is not None or self.feed is not None:
            from bots.tournament.report import standings_summary, write_standings

            summary = standings_summary(director, self.meta)  # once, for the file and the feed
            if self.journal.path is not None:
                write_standings(self.journal.path.parent, director, summary)
            if self.feed is not None:
                self.feed.offer(summary)
        if self.live is None:
            return
        from rich.console import Group

        from bots.tournament.report import standings_table

        self.progress.update(self.task, completed=len(director.records))
        self.live.update(Group(self.progress, standings_table(director)))

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)
