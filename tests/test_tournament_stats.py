"""Match statistics against arithmetic written out by hand, and against cutechess-cli's own output."""

from __future__ import annotations

import math

import pytest

from bots.tournament.stats import (
    Z95,
    Pentanomial,
    Sprt,
    SprtDecision,
    Trinomial,
    elo_estimate,
    elo_from_score,
    llr_bayesian,
    llr_logistic,
    llr_normal_approx,
    llr_normalized,
    pentanomial_estimate,
    score_from_elo,
)


def test_elo_scale_round_trips_and_has_open_ends() -> None:
    # 0.75 expected: -400 log10(1/0.75 - 1) = -400 log10(1/3) = 400 * 0.47712 = 190.85
    assert elo_from_score(0.75) == pytest.approx(190.848, abs=1e-3)
    assert elo_from_score(0.5) == 0.0
    for elo in (-300.0, -12.5, 0.0, 40.0, 700.0):
        assert elo_from_score(score_from_elo(elo)) == pytest.approx(elo)
    assert elo_from_score(1.0) == math.inf
    assert elo_from_score(0.0) == -math.inf
    assert round(Z95, 6) == 1.959964


def test_trinomial_by_hand() -> None:
    # W=6 D=2 L=2, N=10: w=.6 d=.2 l=.2, mu = .6 + .1 = .7
    est = elo_estimate(Trinomial(wins=6, draws=2, losses=2))
    assert est.games == 10
    assert est.score == pytest.approx(0.7)
    # sigma^2 = .6*(1-.7)^2 + .2*(.5-.7)^2 + .2*(0-.7)^2 = .054 + .008 + .098 = .16; sigma = .4
    se = 0.4 / math.sqrt(10)  # 0.126491
    # Elo = -400 log10(1/.7 - 1) = -400 log10(0.428571) = 147.19
    assert est.elo == pytest.approx(147.19, abs=0.01)
    # interval .7 -/+ 1.959964 * 0.126491 = [0.452082, 0.947918]
    low, high = 0.7 - 1.959964 * se, 0.7 + 1.959964 * se
    assert (low, high) == pytest.approx((0.452082, 0.947918), abs=1e-6)
    # Elo(high) = -400 log10(0.054943) = 504.02; Elo(low) = -400 log10(1.211989) = -33.40
    assert est.error95 == pytest.approx((504.02 + 33.40) / 2, abs=0.02)
    # LOS = 1/2 + 1/2 erf((6-2)/sqrt(2*8)) = 1/2 + 1/2 erf(1) = 1/2 + 1/2 * 0.842701
    assert est.los == pytest.approx(0.921350, abs=1e-6)
    assert est.draw_ratio == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("wins", "losses", "draws", "elo", "error", "los", "draw_ratio"),
    [
        # Printed by cutechess-cli (it approximates the normal quantile, hence the tolerance):
        # "Score of OopsMate vs Sayuri: 99 - 97 - 104 ... Elo difference: 2.3 +/- 31.8, LOS: 55.7 %"
        (99, 97, 104, 2.3, 31.8, 55.7, 34.7),
        # "Score of OopsMate vs SF-2100: 45 - 37 - 18 ... Elo difference: 27.9 +/- 62.4, LOS: 81.2 %"
        (45, 37, 18, 27.9, 62.4, 81.2, 18.0),
    ],
)
def test_trinomial_matches_cutechess_output(
    wins: int, losses: int, draws: int, elo: float, error: float, los: float, draw_ratio: float
) -> None:
    est = elo_estimate(Trinomial(wins=wins, draws=draws, losses=losses))
    assert round(est.elo, 1) == elo
    assert est.error95 == pytest.approx(error, abs=0.15)
    assert round(100 * est.los, 1) == los
    assert round(100 * est.draw_ratio, 1) == draw_ratio
    assert str(est).startswith(f"Elo difference: {elo}")


def test_trinomial_edge_cases() -> None:
    none = elo_estimate(Trinomial())
    assert none.games == 0 and all(math.isnan(x) for x in (none.score, none.elo, none.error95, none.los))
    assert none.to_json() == {
        "games": 0,
        "score": None,
        "elo": None,
        "error95": None,
        "los": None,
        "draw_ratio": None,
    }
    # all wins: score 1, Elo unbounded; LOS = 1/2 + 1/2 erf(10/sqrt(20)) = 1/2 + 1/2 erf(2.23607)
    wins = elo_estimate(Trinomial(wins=10))
    assert (wins.score, wins.elo, wins.error95) == (1.0, math.inf, math.inf)
    assert wins.los == pytest.approx(0.5 + 0.5 * 0.998435, abs=1e-6)
    losses = elo_estimate(Trinomial(losses=3))
    assert (losses.score, losses.elo, losses.error95) == (0.0, -math.inf, math.inf)
    # all draws: score 1/2, no spread, so Elo 0 +/- 0; no decisive game, LOS 1/2
    draws = elo_estimate(Trinomial(draws=8))
    assert (draws.score, draws.elo, draws.error95, draws.los, draws.draw_ratio) == (0.5, 0.0, 0.0, 0.5, 1.0)
    # W=9 L=1: mu=.9, sigma = sqrt(.9*.01 + .1*.81) = .3; .9 + 1.96*.3/sqrt(10) = 1.086 > 1
    assert elo_estimate(Trinomial(wins=9, losses=1)).error95 == math.inf


def test_trinomial_add_counts_points() -> None:
    t = Trinomial().add(1).add(1).add(0.5).add(0)
    assert t == Trinomial(wins=2, draws=1, losses=1)
    assert t.points == 2.5
    with pytest.raises(ValueError):
        t.add(2)


def test_pentanomial_by_hand() -> None:
    # pairs worth 0, 1/2, 1, 3/2, 2 points: 1, 2, 3, 2, 2 (10 pairs); per-game values 0 .25 .5 .75 1
    est = pentanomial_estimate(Pentanomial((1, 2, 3, 2, 2)), draws=5)
    assert est.games == 20
    # mu = (0 + 2*.25 + 3*.5 + 2*.75 + 2*1) / 10 = 5.5 / 10 = .55
    assert est.score == pytest.approx(0.55)
    # var = (1*.55^2 + 2*.3^2 + 3*.05^2 + 2*.2^2 + 2*.45^2) / 10
    #     = (.3025 + .18 + .0075 + .08 + .405) / 10 = .0975
    se = math.sqrt(0.0975 / 10)  # 0.098742
    # LOS = Phi(.05 / .098742) = Phi(0.506370) = 0.693702
    assert est.los == pytest.approx(0.693702, abs=1e-5)
    # Elo = -400 log10(1/.55 - 1) = 34.86; bar: half the Elo width of .55 -/+ 1.959964 * se
    assert est.elo == pytest.approx(34.86, abs=0.01)
    low, high = 0.55 - 1.959964 * se, 0.55 + 1.959964 * se  # 0.356467, 0.743533
    half = (-400 * math.log10(1 / high - 1) + 400 * math.log10(1 / low - 1)) / 2
    # -400 log10(1/.743533 - 1) = -400 log10(.344930) = 184.91; -400 log10(1.805312) = -102.62
    assert est.error95 == pytest.approx(half, rel=1e-6)
    assert half == pytest.approx((184.91 + 102.62) / 2, abs=0.05)
    assert est.draw_ratio == 0.25


def test_pentanomial_from_pairs_and_edges() -> None:
    p = Pentanomial.from_pairs([(1, 0), (1, 1), (0.5, 0.5), (0, 0.5), (1, 0.5)])
    # points 1, 2, 1, 0.5, 1.5 -> buckets 2, 4, 2, 1, 3
    assert p.counts == (0, 1, 2, 1, 1)
    with pytest.raises(ValueError):
        Pentanomial.from_pairs([(1, 0.25)])
    assert math.isnan(pentanomial_estimate(Pentanomial()).score)
    all_pairs_won = pentanomial_estimate(Pentanomial((0, 0, 0, 0, 4)))
    assert (all_pairs_won.elo, all_pairs_won.los, all_pairs_won.error95) == (math.inf, 1.0, math.inf)
    assert math.isnan(all_pairs_won.draw_ratio)
    # every pair one win and one loss: mu exactly 1/2, no spread
    even = pentanomial_estimate(Pentanomial((0, 0, 6, 0, 0)))
    assert (even.elo, even.error95, even.los) == (0.0, 0.0, 0.5)


def test_sprt_bounds_by_hand() -> None:
    sprt = Sprt(elo0=0, elo1=10, alpha=0.05, beta=0.05)
    # log(.05/.95) = -2.944439, log(.95/.05) = 2.944439
    assert (sprt.lower, sprt.upper) == pytest.approx((-2.944439, 2.944439), abs=1e-6)
    for bad in (
        {"elo0": 5, "elo1": 5},
        {"elo0": 0, "elo1": 5, "alpha": 0.0},
        {"elo0": 0, "elo1": 5, "beta": 1.2},
    ):
        with pytest.raises(ValueError):
            Sprt(**bad)


def test_llr_normal_approximation_by_hand() -> None:
    # L=10 D=20 W=30: mu = (20*.5 + 30) / 60 = 2/3
    # var = (10*(2/3)^2 + 20*(1/6)^2 + 30*(1/3)^2) / 60 = (4.4444 + .5556 + 3.3333) / 60 = .138889
    # s0 = L(0) = .5; s1 = L(10) = 1 / (1 + 10^-0.025) = .514387
    # LLR = 60 * (.514387 - .5) * (2*(2/3) - .5 - .514387) / .138889 / 2 = 60*.014387*.318946/.277778
    expected = 60 * 0.0143868 * (4 / 3 - 1.0143868) / 0.1388889 / 2
    assert expected == pytest.approx(0.99115, abs=1e-4)
    assert llr_normal_approx(0, 10, [10, 20, 30]) == pytest.approx(expected, rel=1e-4)


def _best_log_likelihood(counts: list[int], s: float) -> float:
    """max over (pL, pD, pW) with pW + pD/2 = s of sum n_i log p_i, by golden-section search on pD."""

    def ll(p_draw: float) -> float:
        p_win, p_loss = s - p_draw / 2, 1 - s - p_draw / 2
        return sum(n * math.log(p) for n, p in zip(counts, (p_loss, p_draw, p_win), strict=True))

    low, high = 1e-12, 2 * min(s, 1 - s) - 1e-12
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        if ll(a) < ll(b):
            low = a
        else:
            high = b
    return ll((low + high) / 2)


@pytest.mark.parametrize("counts", [[10, 20, 30], [40, 13, 31], [7, 50, 9]])
def test_llr_logistic_is_the_generalized_likelihood_ratio(counts: list[int]) -> None:
    # the GLR: best likelihood with expected score s1 over best with s0 (independent optimiser)
    s0, s1 = score_from_elo(-5), score_from_elo(15)
    glr = _best_log_likelihood(counts, s1) - _best_log_likelihood(counts, s0)
    assert llr_logistic(-5, 15, counts) == pytest.approx(glr, abs=1e-6)


def test_llr_logistic_symmetry_and_approximation() -> None:
    # equal wins and losses and symmetric hypotheses: no evidence either way
    assert llr_logistic(-10, 10, [25, 50, 25]) == pytest.approx(0.0, abs=1e-9)
    assert llr_logistic(-10, 10, [1, 4, 6, 4, 1]) == pytest.approx(0.0, abs=1e-9)
    # many games near the hypotheses: the normal approximation agrees closely
    counts = [1187, 7410, 13475, 7378, 1164]
    exact, approx = llr_logistic(-3, 1, counts), llr_normal_approx(-3, 1, counts)
    assert exact == pytest.approx(approx, rel=0.02)
    assert llr_logistic(0, 5, [0, 0, 0]) == 0.0
    with pytest.raises(ValueError):
        llr_logistic(0, 5, [1, 2])


def test_sprt_decides_both_ways_and_waits() -> None:
    sprt = Sprt(elo0=0, elo1=50)
    assert sprt.status(Pentanomial()).decision is SprtDecision.CONTINUE
    assert sprt.status(Pentanomial((0, 0, 0, 0, 1))).decision is SprtDecision.CONTINUE
    # all pairs won: the best fit is still a coin-flip-like W/L mix, so each pair adds only about
    # log(L(50) / L(0)) = log(.5715 / .5) = .134 to the LLR; 30 pairs pass 2.944
    assert sprt.status(Pentanomial((0, 0, 0, 0, 12))).decision is SprtDecision.CONTINUE
    strong = sprt.status(Pentanomial((0, 0, 0, 0, 30)))
    assert strong.decision is SprtDecision.ACCEPT_H1 and strong.llr >= strong.upper
    weak = sprt.status(Trinomial(wins=20, draws=20, losses=60))
    assert weak.decision is SprtDecision.ACCEPT_H0 and weak.llr <= weak.lower
    even = sprt.status(Trinomial(wins=3, draws=4, losses=3))
    assert even.decision is SprtDecision.CONTINUE


# --- SPRT models beside the logistic one (fastchess's normalized and bayesian) ----------------

NELO = 800 / math.log(10)


def _t_value(counts: list[int]) -> tuple[float, float, float]:
    """(mean score, standard deviation, N) of counts spread evenly over scores 0..1."""
    n = sum(counts)
    scores = [i / (len(counts) - 1) for i in range(len(counts))]
    mu = sum(c * a for c, a in zip(counts, scores, strict=True)) / n
    var = sum(c * (a - mu) ** 2 for c, a in zip(counts, scores, strict=True)) / n
    return mu, math.sqrt(var), n


@pytest.mark.parametrize(
    "counts", [[30, 40, 50], [300, 410, 520], [10, 60, 130, 70, 15], [100, 610, 1300, 700, 150]]
)
def test_normalized_llr_is_close_to_its_normal_approximation(counts: list[int]) -> None:
    """For a normalized Elo model the generalized LLR is about N (t1 - t0)(2 t - t0 - t1) / 2,
    t = (mu - 1/2) / sigma the observed t-value and t0, t1 the bounds' (sqrt(2) nElo/NELO for pairs)."""
    mu, sigma, n = _t_value(counts)
    t = (mu - 0.5) / sigma
    scale = math.sqrt(2) if len(counts) == 5 else 1.0
    for elo0, elo1 in ((0, 5), (-5, 5), (0, 20)):
        t0, t1 = scale * elo0 / NELO, scale * elo1 / NELO
        approx = n * (t1 - t0) * (2 * t - t0 - t1) / 2
        assert llr_normalized(elo0, elo1, counts) == pytest.approx(approx, rel=0.05, abs=0.05)


def test_bayesian_llr_uses_the_draw_elo_of_the_counts() -> None:
    counts = [40, 80, 60]  # losses, draws, wins
    n = sum(counts)
    loss, win = counts[0] / n, counts[2] / n
    drawelo = 200 * math.log10((1 - loss) / loss * (1 - win) / win)

    def score(elo: float) -> float:
        pw = 1 / (1 + 10 ** ((drawelo - elo) / 400))
        pl = 1 / (1 + 10 ** ((drawelo + elo) / 400))
        return pw + (1 - pw - pl) / 2

    mu, sigma, _ = _t_value(counts)
    for elo0, elo1 in ((0, 5), (-3, 3), (0, 10)):
        s0, s1 = score(elo0), score(elo1)
        approx = n * (s1 - s0) * (2 * mu - s0 - s1) / (2 * sigma**2)
        assert llr_bayesian(elo0, elo1, counts) == pytest.approx(approx, rel=0.05)
    assert llr_bayesian(0, 5, [0, 10, 5]) == 0.0  # no loss: no draw elo, no verdict yet
    with pytest.raises(ValueError):
        llr_bayesian(0, 5, [1, 2, 3, 4, 5])  # game counts only


def test_sprt_models_are_named_and_chosen() -> None:
    counts = Pentanomial((5, 30, 60, 40, 10))
    assert Sprt(0, 10).model == "logistic"
    assert Sprt(0, 10).status(counts).llr == pytest.approx(llr_logistic(0, 10, counts.ascending()))
    assert Sprt(0, 10, model="normalized").status(counts).llr == pytest.approx(
        llr_normalized(0, 10, counts.ascending())
    )
    games = Trinomial(60, 80, 40)
    assert Sprt(0, 10, model="bayesian").status(games).llr == pytest.approx(
        llr_bayesian(0, 10, games.ascending())
    )
    with pytest.raises(ValueError):
        Sprt(0, 10, model="gaussian")
