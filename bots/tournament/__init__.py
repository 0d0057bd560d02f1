"""Bot-vs-bot tournaments: statistics, pairings, a sans-I/O director, and runners.

- `bots.tournament.stats`: Elo difference, error bars, LOS, draw ratio and SPRT, as
  engine testers compute them (cutechess-cli for game counts, fishtest for pairs).
- `bots.tournament.pairing`: round-robin, gauntlet and Swiss schedules of
  colour-swapped game pairs, opening suites, standings and the crosstable.
- `bots.tournament.director`: the sans-I/O tournament director (events in,
  games to start out).
- `bots.tournament.match`: `play_match`, the in-process runner (no network).

Importing this package imports none of them, so `ttt --help` stays quick.
"""
