"""Error summaries, weighted quantiles, credible intervals and their coverage (dpbayes.smc.summaries)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.smc import summaries as su


def test_error_summary_known_values() -> None:
    out = su.error_summary([1.0, 2.0, 6.0], 2.0)
    assert out["rmse"] == pytest.approx(np.sqrt((1 + 0 + 16) / 3))
    assert out["mae"] == pytest.approx(5 / 3)
    assert out["medae"] == pytest.approx(1.0)


def test_error_summary_one_outlier_moves_rmse_not_median() -> None:
    base = su.error_summary([51.0, 52.0, 50.0, 51.5], 51.0)
    wild = su.error_summary([51.0, 52.0, 50.0, 535.0], 51.0)
    assert wild["rmse"] > 100 * base["rmse"]
    assert wild["medae"] == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], [np.nan], [[1.0, 2.0]]])
def test_error_summary_rejects_bad_estimates(bad) -> None:
    with pytest.raises(ValueError, match="estimates"):
        su.error_summary(bad, 0.0)


def test_weighted_quantile_matches_numpy_for_equal_weights() -> None:
    v = np.random.default_rng(0).standard_normal(101)
    p = [0.05, 0.5, 0.95]
    assert np.allclose(su.weighted_quantile(v, p), np.quantile(v, p, method="inverted_cdf"))
    assert np.allclose(su.weighted_quantile(v, p, np.ones(101)), np.quantile(v, p, method="inverted_cdf"))


def test_weighted_quantile_follows_the_weights() -> None:
    v = np.array([0.0, 1.0, 2.0])
    assert su.weighted_quantile(v, [0.5], [0.0, 0.0, 1.0])[0] == 2.0
    assert su.weighted_quantile(v, [0.5], [0.6, 0.2, 0.2])[0] == 0.0
    with pytest.raises(ValueError, match="weights"):
        su.weighted_quantile(v, [0.5], [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="probs"):
        su.weighted_quantile(v, [1.5])


def test_credible_interval_of_a_normal_sample() -> None:
    v = np.random.default_rng(1).standard_normal(200_000)
    lo, hi = su.credible_interval(v, level=0.9)
    assert lo == pytest.approx(-1.6449, abs=0.02) and hi == pytest.approx(1.6449, abs=0.02)
    with pytest.raises(ValueError, match="level"):
        su.credible_interval(v, level=1.0)


def test_coverage() -> None:
    assert su.coverage([[0, 1], [2, 3], [0.5, 4]], 0.75) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="lower <= upper"):
        su.coverage([[1, 0]], 0.5)
    with pytest.raises(ValueError, match="intervals"):
        su.coverage([1, 2], 0.5)


def test_credible_intervals_of_a_known_posterior_cover_at_their_level() -> None:
    # conjugate normal mean, known sd: posterior draws from N(xbar, 1/n); the 90 % interval of each
    # of many replicates covers the truth in about 90 % of them (binomial sd 0.0095 at 1000 reps)
    rng = np.random.default_rng(2)
    n, reps = 25, 1000
    ivs = []
    for _ in range(reps):
        xbar = 3.0 + rng.standard_normal() / np.sqrt(n)
        ivs.append(su.credible_interval(xbar + rng.standard_normal(4000) / np.sqrt(n), level=0.9))
    assert su.coverage(ivs, 3.0) == pytest.approx(0.9, abs=0.035)


def test_pooled_coverage() -> None:
    # 100 of 120 intervals cover: P[Binomial(120, 0.9) <= 100] from the pmf summed directly
    from math import comb
    p_direct = sum(comb(120, k) * 0.9**k * 0.1 ** (120 - k) for k in range(101))
    res = su.pooled_coverage(100, 120)
    assert res.coverage == pytest.approx(100 / 120)
    assert res.p_value == pytest.approx(p_direct, rel=1e-10)
    assert not res.undercovers  # p ~ 0.016 >= 0.01
    assert su.pooled_coverage(100, 120, alpha=0.05).undercovers
    assert su.pooled_coverage(93, 120).undercovers
    assert su.pooled_coverage(120, 120).p_value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="hits"):
        su.pooled_coverage(121, 120)
    with pytest.raises(ValueError, match="total"):
        su.pooled_coverage(0, 0)
    with pytest.raises(ValueError, match="level"):
        su.pooled_coverage(5, 10, level=1.5)
