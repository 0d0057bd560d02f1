"""Match statistics as chess engine testers compute them. Pure: no I/O, no randomness.

Where each formula comes from (re-derived from these sources, not copied):

- Game counts (wins, draws, losses): cutechess-cli, ``projects/lib/src/elo.cpp``
  (class ``Elo``). Score ``mu = (W + D/2) / N``; per-game deviation
  ``sigma = sqrt(w (1-mu)^2 + d (1/2-mu)^2 + l (0-mu)^2)`` with ``w = W/N`` etc.;
  Elo difference ``-400 log10(1/mu - 1)``; the 95% error bar is half the Elo width
  of ``mu ± z sigma / sqrt(N)``; likelihood of superiority
  ``LOS = 1/2 + 1/2 erf((W - L) / sqrt(2 (W + L)))``; draw ratio ``D / N``.
  cutechess approximates the normal quantile ``z`` (Winitzki's erf inverse);
  we use the exact one (1.959964), as fishtest does through scipy.
- Colour-swapped game pairs (pentanomial counts): fishtest,
  ``server/fishtest/stats/stat_util.py`` ``get_elo``: the same score and error
  bar, with the variance taken over pairs (each pair's mean score), and
  ``LOS = Phi((mu - 1/2) / (sigma / sqrt(N)))``.
- SPRT: fishtest ``server/fishtest/stats/LLRcalc.py`` ``LLR_logistic``: the
  generalized log-likelihood ratio of the observed counts under the best
  distribution with expected score ``L(elo1)`` against the best with
  ``L(elo0)`` (``L(x) = 1 / (1 + 10^(-x/400)``, logistic Elo); empty cells get
  a count of 0.001 first, as fishtest's ``regularize`` does. Wald's bounds
  ``log(beta / (1 - alpha))`` and ``log((1 - beta) / alpha)``; no overshoot
  correction (cutechess stops on the plain bounds too).

Edge cases, where the sources divide by zero: no games gives NaN everywhere; a
score of 0 or 1 gives an Elo of -inf or +inf; the error bar is +inf when the
95% interval of the score reaches 0 or 1 (the Elo scale has no end there);
LOS is 1/2 when no game was decisive (cutechess would print NaN).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

_NORMAL = NormalDist()
#: The two-sided 95% normal quantile, 1.959963984540054.
Z95 = _NORMAL.inv_cdf(0.975)
_NAN = math.nan


def elo_from_score(score: float) -> float:
    """The logistic Elo difference that expects ``score`` (0..1) per game."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    """The expected score per game of a player ``elo`` points stronger (fishtest's ``L``)."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


@dataclass(frozen=True, slots=True)
class Trinomial:
    """Game counts from one player's point of view."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def points(self) -> float:
        return self.wins + self.draws / 2

    def add(self, points: float) -> Trinomial:
        """These counts plus one game that scored ``points`` (1, 0.5 or 0)."""
        if points == 1:
            return Trinomial(self.wins + 1, self.draws, self.losses)
        if points == 0.5:
            return Trinomial(self.wins, self.draws + 1, self.losses)
        if points == 0:
            return Trinomial(self.wins, self.draws, self.losses + 1)
        raise ValueError(f"a game scores 1, 0.5 or 0, not {points!r}")

    def ascending(self) -> list[int]:
        """Counts in fishtest's order: losses, draws, wins."""
        return [self.losses, self.draws, self.wins]


@dataclass(frozen=True, slots=True)
class Pentanomial:
    """Counts of colour-swapped game pairs by the points the player scored in the pair.

    ``counts[i]`` is the number of pairs worth ``i / 2`` points: LL, LD+DL,
    LW+DD+WL, DW+WD, WW (fishtest's order).
    """

    counts: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[float, float]]) -> Pentanomial:
        """Counts of ``pairs``, each the player's points in its two games."""
        counts = [0, 0, 0, 0, 0]
        for first, second in pairs:
            half_points = 2 * (first + second)
            if half_points not in (0, 1, 2, 3, 4) or not {first, second} <= {0, 0.5, 1}:
                raise ValueError(f"a game scores 1, 0.5 or 0, not {(first, second)!r}")
            counts[int(half_points)] += 1
        return cls((counts[0], counts[1], counts[2], counts[3], counts[4]))

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    def ascending(self) -> list[int]:
        return list(self.counts)


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """What a match says about the first player against the second.

    Attributes:
        games: games played (twice the pairs for pentanomial counts).
        score: mean points per game, 0..1.
        elo: the logistic Elo difference that expects ``score``.
        error95: half the width of the 95% confidence interval, in Elo.
        los: likelihood of superiority, 0..1.
        draw_ratio: the share of drawn games, 0..1 (NaN if unknown).
    """

    games: int
    score: float
    elo: float
    error95: float
    los: float
    draw_ratio: float

    def to_json(self) -> dict[str, Any]:
        """The fields, with NaN and infinities as None (JSON has no such numbers)."""
        return {
            "games": self.games,
            **{
                name: (value if math.isfinite(value) else None)
                for name, value in (
                    ("score", self.score),
                    ("elo", self.elo),
                    ("error95", self.error95),
                    ("los", self.los),
                    ("draw_ratio", self.draw_ratio),
                )
            },
        }

    def __str__(self) -> str:
        """cutechess-cli's line; a figure with no value says so (``n/a``; an error bar
        whose interval reaches a score of 0 or 1 is ``unbounded``), and no ``-0.0``."""
        error = "unbounded" if self.error95 == math.inf else _figure(self.error95)
        return (
            f"Elo difference: {_figure(self.elo)} +/- {error}, "
            f"LOS: {_figure(100 * self.los)} %, DrawRatio: {_figure(100 * self.draw_ratio)} %"
        )


def _figure(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _error95(mu: float, standard_error: float) -> float:
    low, high = mu - Z95 * standard_error, mu + Z95 * standard_error
    if low <= 0.0 or high >= 1.0:
        return math.inf
    return (elo_from_score(high) - elo_from_score(low)) / 2


def elo_estimate(counts: Trinomial) -> EloEstimate:
    """Elo difference, error bar, LOS and draw ratio from game counts (cutechess-cli)."""
    n = counts.games
    if n == 0:
        return EloEstimate(0, _NAN, _NAN, _NAN, _NAN, _NAN)
    w, d, lo = counts.wins / n, counts.draws / n, counts.losses / n
    mu = w + d / 2
    sigma = math.sqrt(w * (1 - mu) ** 2 + d * (0.5 - mu) ** 2 + lo * (0 - mu) ** 2)
    decisive = counts.wins + counts.losses
    if decisive == 0:
        los = 0.5
    else:
        los = 0.5 + 0.5 * math.erf((counts.wins - counts.losses) / math.sqrt(2.0 * decisive))
    return EloEstimate(n, mu, elo_from_score(mu), _error95(mu, sigma / math.sqrt(n)), los, d)


def pentanomial_estimate(counts: Pentanomial, draws: int | None = None) -> EloEstimate:
    """Elo difference, error bar and LOS from game-pair counts (fishtest's ``get_elo``).

    Args:
        draws: the number of drawn games, for the draw ratio (pair counts
            cannot tell a drawn pair from a won-and-lost one).
    """
    pairs = counts.pairs
    if pairs == 0:
        return EloEstimate(0, _NAN, _NAN, _NAN, _NAN, _NAN)
    mu = sum(c * i / 4 for i, c in enumerate(counts.counts)) / pairs
    variance = sum(c * (i / 4 - mu) ** 2 for i, c in enumerate(counts.counts)) / pairs
    standard_error = math.sqrt(variance / pairs)
    if standard_error == 0.0:
        los = 0.5 if mu == 0.5 else float(mu > 0.5)
    else:
        los = _NORMAL.cdf((mu - 0.5) / standard_error)
    draw_ratio = _NAN if draws is None else draws / (2 * pairs)
    return EloEstimate(2 * pairs, mu, elo_from_score(mu), _error95(mu, standard_error), los, draw_ratio)


class SprtDecision(enum.StrEnum):
    """What an SPRT says after some games."""

    ACCEPT_H0 = "H0"  # the difference is at most elo0: stop
    ACCEPT_H1 = "H1"  # the difference is at least elo1: stop
    CONTINUE = "continue"


@dataclass(frozen=True, slots=True)
class SprtStatus:
    decision: SprtDecision
    llr: float
    lower: float
    upper: float


def _pdf(counts: Sequence[int]) -> tuple[float, list[tuple[float, float]]]:
    """fishtest's ``results_to_pdf``: empty cells count 0.001; values spread over 0..1."""
    regular = [c if c > 0 else 1e-3 for c in counts]
    total = sum(regular)
    last = len(regular) - 1
    return total, [(i / last, c / total) for i, c in enumerate(regular)]


def _mle_with_mean(pdf: list[tuple[float, float]], s: float) -> list[float]:
    """The probabilities closest in likelihood to ``pdf`` whose expected value is ``s``.

    They are ``p_i / (1 + x (a_i - s))`` where ``x`` solves the secular equation
    ``sum p_i (a_i - s) / (1 + x (a_i - s)) = 0`` (van den Bergh, "support_MLE_multinomial");
    the left side falls as ``x`` grows, so bisection finds the root.
    """
    shifted = [(a - s, p) for a, p in pdf]
    low = -1.0 / max(b for b, _ in shifted)
    high = -1.0 / min(b for b, _ in shifted)

    def f(x: float) -> float:
        return sum(p * b / (1.0 + x * b) for b, p in shifted)

    eps = 1e-12 * (high - low)
    low, high = low + eps, high - eps
    for _ in range(200):
        mid = (low + high) / 2
        if f(mid) > 0:
            low = mid
        else:
            high = mid
        if high - low < 1e-15:
            break
    x = (low + high) / 2
    return [p / (1.0 + x * b) for b, p in shifted]


def llr_logistic(elo0: float, elo1: float, counts: Sequence[int]) -> float:
    """fishtest's generalized LLR of ``counts`` (3 or 5, ascending by score) for elo1 vs elo0."""
    if len(counts) not in (3, 5) or any(c < 0 for c in counts):
        raise ValueError(f"counts are 3 or 5 non-negative numbers, not {list(counts)!r}")
    if sum(counts) == 0:
        return 0.0
    total, pdf = _pdf(counts)
    q0 = _mle_with_mean(pdf, score_from_elo(elo0))
    q1 = _mle_with_mean(pdf, score_from_elo(elo1))
    return total * sum(p * (math.log(b) - math.log(a)) for (_, p), a, b in zip(pdf, q0, q1, strict=True))


def llr_normal_approx(elo0: float, elo1: float, counts: Sequence[int]) -> float:
    """fishtest's ``LLR_alt2``: ``N (s1 - s0) (2 mu - s0 - s1) / (2 var)``; close to `llr_logistic`."""
    if sum(counts) == 0:
        return 0.0
    total, pdf = _pdf(counts)
    mu = sum(a * p for a, p in pdf)
    variance = sum(p * (a - mu) ** 2 for a, p in pdf)
    s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
    return total * (s1 - s0) * (2 * mu - s0 - s1) / variance / 2


#: Normalized Elo per unit of t-value (fishtest, van den Bergh's "normalized Elo").
_NELO_PER_T = 800.0 / math.log(10.0)


def _solve_weights(phi: Sequence[float], pdf: list[tuple[float, float]]) -> float:
    """The ``x`` with ``sum p_i phi_i / (1 + x phi_i) = 0`` (falling in ``x``; bisection)."""
    low, high = -1.0 / max(phi), -1.0 / min(phi)
    eps = 1e-12 * (high - low)
    low, high = low + eps, high - eps
    for _ in range(200):
        mid = (low + high) / 2
        if sum(p * f / (1.0 + mid * f) for (_, p), f in zip(pdf, phi, strict=True)) > 0:
            low = mid
        else:
            high = mid
        if high - low < 1e-15:
            break
    return (low + high) / 2


def _mle_with_t(pdf: list[tuple[float, float]], t: float) -> list[float]:
    """The probabilities closest in likelihood to ``pdf`` whose t-value ``(mu - 1/2) / sigma``
    is ``t`` (van den Bergh, "Comments on normalized Elo", section 4.1): iterate from the
    uniform distribution, each step solving for the weights with ``phi_i = a_i - 1/2 -
    t sigma (1 + ((a_i - mu) / sigma)^2) / 2`` at the last estimate's mu and sigma."""
    q = [1.0 / len(pdf)] * len(pdf)
    for _ in range(1000):
        mu = sum(a * p for (a, _), p in zip(pdf, q, strict=True))
        sigma = math.sqrt(sum(p * (a - mu) ** 2 for (a, _), p in zip(pdf, q, strict=True)))
        phi = [a - 0.5 - 0.5 * t * sigma * (1.0 + ((a - mu) / sigma) ** 2) for a, _ in pdf]
        x = _solve_weights(phi, pdf)
        new = [p / (1.0 + x * f) for (_, p), f in zip(pdf, phi, strict=True)]
        done = max(abs(a - b) for a, b in zip(new, q, strict=True)) < 1e-12
        q = new
        if done:
            break
    return q


def llr_normalized(elo0: float, elo1: float, counts: Sequence[int]) -> float:
    """fastchess's ``normalized`` model (its default): the generalized LLR with the bounds
    in normalized Elo, i.e. t-values ``elo / (800 / ln 10)`` (times sqrt 2 for pairs)."""
    if len(counts) not in (3, 5) or any(c < 0 for c in counts):
        raise ValueError(f"counts are 3 or 5 non-negative numbers, not {list(counts)!r}")
    if sum(counts) == 0:
        return 0.0
    total, pdf = _pdf(counts)
    scale = math.sqrt(2.0) if len(counts) == 5 else 1.0
    q0 = _mle_with_t(pdf, scale * elo0 / _NELO_PER_T)
    q1 = _mle_with_t(pdf, scale * elo1 / _NELO_PER_T)
    return total * sum(p * (math.log(b) - math.log(a)) for (_, p), a, b in zip(pdf, q0, q1, strict=True))


def _bayeselo_score(elo: float, drawelo: float) -> float:
    win = 1.0 / (1.0 + math.pow(10.0, (drawelo - elo) / 400.0))
    loss = 1.0 / (1.0 + math.pow(10.0, (drawelo + elo) / 400.0))
    return win + (1.0 - win - loss) / 2


def llr_bayesian(elo0: float, elo1: float, counts: Sequence[int]) -> float:
    """fastchess's ``bayesian`` model (cutechess-cli's BayesElo scale): the bounds are
    BayesElo, turned into expected scores with the draw Elo of the counts
    (``200 log10((1 - L)/L (1 - W)/W)``), then the generalized LLR as `llr_logistic`.
    Game counts only (losses, draws, wins); 0 until a game is won and one lost."""
    if len(counts) != 3 or any(c < 0 for c in counts):
        raise ValueError(f"the BayesElo model takes 3 game counts, not {list(counts)!r}")
    if counts[0] == 0 or counts[2] == 0:
        return 0.0
    total, pdf = _pdf(counts)
    loss, win = pdf[0][1], pdf[2][1]
    drawelo = 200.0 * math.log10((1 - loss) / loss * (1 - win) / win)
    q0 = _mle_with_mean(pdf, _bayeselo_score(elo0, drawelo))
    q1 = _mle_with_mean(pdf, _bayeselo_score(elo1, drawelo))
    return total * sum(p * (math.log(b) - math.log(a)) for (_, p), a, b in zip(pdf, q0, q1, strict=True))


#: SPRT models by name: fishtest's logistic (our default), fastchess's normalized and bayesian.
SPRT_MODELS = ("logistic", "normalized", "bayesian")


@dataclass(frozen=True, slots=True)
class Sprt:
    """A sequential probability ratio test of H0: elo = elo0 against H1: elo = elo1.

    alpha is the chance of accepting H1 when H0 holds, beta of accepting H0 when H1 holds.
    ``model`` (`SPRT_MODELS`) says what the Elo bounds mean: logistic Elo, normalized Elo,
    or BayesElo (``bayesian``, which counts games, not pairs).
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: str = "logistic"

    def __post_init__(self) -> None:
        if not (0 < self.alpha < 1 and 0 < self.beta < 1 and self.alpha + self.beta < 1):
            raise ValueError(f"need 0 < alpha, beta and alpha + beta < 1, not {self.alpha}, {self.beta}")
        if not self.elo0 < self.elo1:
            raise ValueError(f"need elo0 < elo1, not {self.elo0} >= {self.elo1}")
        if self.model not in SPRT_MODELS:
            raise ValueError(f"the SPRT model is one of {', '.join(SPRT_MODELS)}, not {self.model!r}")

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    def status(self, counts: Trinomial | Pentanomial) -> SprtStatus:
        """The LLR of ``counts`` so far and whether to stop."""
        llr = {"logistic": llr_logistic, "normalized": llr_normalized, "bayesian": llr_bayesian}[self.model](
            self.elo0, self.elo1, counts.ascending()
        )
        if llr >= self.upper:
            decision = SprtDecision.ACCEPT_H1
        elif llr <= self.lower:
            decision = SprtDecision.ACCEPT_H0
        else:
            decision = SprtDecision.CONTINUE
        return SprtStatus(decision, llr, self.lower, self.upper)
