"""``ttt tournament``: check every entry and flag, then play (in process, with bot processes,
or among connected players), journal each game, and show progress.

Everything that can be refused is refused before anything is written or started: the
entries, the variant each strategy plays (bug 9), the flags of a ``--resume`` (bug 2).
Names are text everywhere: nothing a player is called is read as Rich markup.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bots.tournament.cli import build_config, parse_connected, planned_games, time_control
from bots.tournament.director import Director, TournamentConfig
from bots.tournament.entries import Entry, build_entries, check_plays, load_strategy
from bots.tournament.journal import Journal
from bots.tournament.pairing import TournamentError
from bots.tournament.standings import PlayedGame
from bots.tournament.timecontrol import tc_text
from protocol import messages as m

if TYPE_CHECKING:
    from bots.tournament.feed import StandingsFeed


def settings_of(
    args: argparse.Namespace, config: TournamentConfig, entries: dict[str, Entry] | None
) -> dict[str, Any]:
    """Every setting that decides which games are played (``settings.json``, and
    ``settings`` in ``standings.json``)."""
    sprt = config.sprt
    control = time_control(args)
    return {
        "variant": config.variant,
        "format": str(config.format),
        "entries": {n: e.to_json() for n, e in entries.items()} if entries else list(config.players),
        "games_per_pair": config.games_per_pair,
        "seed": args.seed,
        "openings": [list(o) for o in config.openings],
        "rounds": config.rounds,
        "sprt": None if sprt is None else {
            "elo0": sprt.elo0, "elo1": sprt.elo1, "alpha": sprt.alpha, "beta": sprt.beta, "model": sprt.model
        },
        "max_games": config.max_games if sprt is not None else None,
        "move_ms": control.move_ms if isinstance(control, m.PerMove) else None,
        "time_control": None if control is None else tc_text(control),
        "time_margin_ms": getattr(args, "timemargin", 0) or 0,
        "concurrency": config.concurrency,
        "swap": config.colours,
        "max_plies": config.max_plies,
    }  # fmt: skip


def run_tournament(args: argparse.Namespace) -> int:
    from rich.console import Console

    from bots.tournament.report import matchup_lines, standings_table, write_outputs

    if args.resume and not (args.out and (Path(args.out) / "games.jsonl").exists()):
        raise TournamentError("--resume needs --out DIR holding the games.jsonl of the tournament")
    entries: dict[str, Entry] | None = None
    if args.connected:
        if args.bot:
            raise TournamentError("--connected: --bots names players online; --bot does not apply")
        players = tuple(parse_connected(args))
    else:
        entries = build_entries(args.bots, args.bot, args.noise, args.think_ms)
        players = tuple(entries)
    config = build_config(args, players)
    margin = getattr(args, "timemargin", 0) or 0
    if margin < 0:
        raise TournamentError("--timemargin must be 0 or more")
    if margin and args.connected:
        raise TournamentError(
            "--timemargin applies to the runner's own bot processes; a connected bot plans on the "
            "server's clock, so give it a longer --tc instead"
        )
    time_control(args)  # a bad --tc or --move-ms fails here, before anything is written
    if entries is not None:  # a bad name, or a strategy that cannot play the variant, fails here
        for name, entry in entries.items():
            check_plays(name, load_strategy(entry.strategy, 0.0, entry.options), config.variant)
    settings = settings_of(args, config, entries)
    console = Console()
    out = Path(args.out) if args.out else None
    if args.mqtt:
        from bots.tournament.feed import check_url

        check_url(args.mqtt)  # a bad URL fails before the journal is touched
    journal = Journal(out, args.resume, settings, config.variant)
    strategies = (
        {n: e.strategy for n, e in entries.items()} if entries else dict.fromkeys(players, "connected")
    )
    meta: dict[str, Any] = {
        "seed": args.seed,
        "entries": strategies,
        "planned": planned_games(config),
        "settings": settings,
        "date": datetime.now(UTC).strftime("%Y.%m.%d"),
        "site": args.server or ("in-process" if args.in_process else "embedded server"),
    }
    if args.connected:
        meta["server"] = args.server
    feed = None
    if args.mqtt:
        import secrets

        from bots.tournament.feed import StandingsFeed

        tournament_id = args.tournament_id or "t" + secrets.token_hex(4)
        meta["tournament"] = tournament_id
        feed = StandingsFeed(args.mqtt, tournament_id)
        console.print(f"standings on {args.mqtt} topic {feed.topic}", markup=False)
    with Progress(console, config, args, journal=journal, meta=meta, feed=feed) as display:
        director = _play(args, config, entries, journal.records, display.update)
    console.print(standings_table(director))
    for line in matchup_lines(director):
        console.print(line, markup=False, highlight=False)
    if director.ended_early:
        console.print(f"ended early: {director.ended_early}", markup=False)
    if director.bracket is not None and director.bracket.champion is not None:
        console.print(f"champion: {director.bracket.champion}", markup=False, highlight=False)
    if out is not None:
        for path in write_outputs(out, director, meta):
            console.print(f"wrote {path}", markup=False, highlight=False)
    if feed is not None:
        from bots.tournament.report import standings_summary

        feed.offer(standings_summary(director, meta, status="finished"))
        if not feed.close(timeout=10.0):
            console.print("the MQTT broker did not confirm the final standings")
    return 0


def _play(
    args: argparse.Namespace,
    config: TournamentConfig,
    entries: dict[str, Entry] | None,
    done: list[PlayedGame],
    on_game: Any,
) -> Director:
    if args.connected:
        from bots.tournament.connected import ConnectedRunner

        named = {"name": args.director_name} if args.director_name else {}
        connected = ConnectedRunner(
            config,
            args.server,
            time_control=time_control(args),
            on_game=on_game,
            done_records=done,
            token_file=args.director_token_file,
            **named,
        )
        return asyncio.run(connected.run())
    assert entries is not None
    if args.in_process:
        from bots.tournament.match import play_match

        strategies = {name: load_strategy(e.strategy, e.noise, e.options) for name, e in entries.items()}
        return play_match(config, strategies, seed=args.seed, on_game=on_game, done_records=done)
    from bots.tournament.runner import NetworkRunner

    runner = NetworkRunner(
        config,
        {name: e.strategy for name, e in entries.items()},
        seed=args.seed,
        server=args.server,
        time_control=time_control(args),
        margin_ms=getattr(args, "timemargin", 0) or 0,
        entry_args={name: tuple(e.bot_args()) for name, e in entries.items()},
        recover=args.recover,
        on_game=on_game,
        done_records=done,
    )
    return asyncio.run(runner.run())


class Progress:
    """Progress as games end. On a terminal: a bar (with the time left) and the live
    standings. In a pipe or CI (cutechess-cli's habit): one line per finished game, and
    the standings and Elo lines every ``--rating-interval`` games. ``--quiet``: neither."""

    def __init__(
        self,
        console: Any,
        config: TournamentConfig,
        args: argparse.Namespace,
        journal: Journal,
        meta: dict[str, Any],
        feed: StandingsFeed | None = None,
    ) -> None:
        self.console, self.config, self.journal = console, config, journal
        self.quiet = args.quiet
        self.interval = max(0, getattr(args, "rating_interval", 0) or 0)
        self.meta, self.feed = meta, feed
        self.live: Any = None
        self.progress: Any = None

    def __enter__(self) -> Progress:
        if self.quiet or not self.console.is_terminal:
            return self
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self.progress = Bar(
            TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn()
        )
        self.task = self.progress.add_task("games", total=planned_games(self.config))
        self.live = Live(self.progress, console=self.console, refresh_per_second=4)
        self.live.__enter__()
        return self

    def update(self, record: PlayedGame, director: Director) -> None:
        self.journal.add(record, self.config.variant)
        if self.journal.path is not None or self.feed is not None:
            from bots.tournament.report import standings_summary, write_standings

            summary = standings_summary(director, self.meta)  # once, for the file and the feed
            if self.journal.path is not None:
                write_standings(self.journal.path.parent, director, summary)
            if self.feed is not None:
                self.feed.offer(summary)
        if self.quiet:
            return
        if self.live is None:
            self._lines(record, director)
            return
        from rich.console import Group

        from bots.tournament.report import standings_table

        self.progress.update(self.task, completed=len(director.records))
        self.live.update(Group(self.progress, standings_table(director)))

    def _lines(self, record: PlayedGame, director: Director) -> None:
        from bots.tournament.report import game_line, matchup_lines, standings_table

        self.console.print(game_line(record, len(director.records)), markup=False, highlight=False)
        if self.interval and len(director.records) % self.interval == 0:
            self.console.print(standings_table(director))
            for line in matchup_lines(director):
                self.console.print(line, markup=False, highlight=False)

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)
