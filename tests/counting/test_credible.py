"""Tests for dpbayes.counting.credible (coverage and width of the credible interval at fixed counts)."""

import numpy as np
import pytest
from scipy import stats

from dpbayes.counting import risk as cr
from dpbayes.counting import credible as cc


def test_coverage_averaged_over_the_prior_is_close_to_the_level():
    """Averaged over its own prior an equal-tailed interval of integers covers at least ~level."""
    n, p, eps = 60, 0.3, 0.5
    a = np.arange(n + 1)
    avg = stats.binom.pmf(a, n, p) @ cc.credible_coverage(a, n, p, eps, 0.9)
    assert 0.9 - 1e-9 <= avg <= 0.99


def test_coverage_is_a_probability_and_decreases_away_from_the_prior():
    cov = cc.credible_coverage(np.arange(101), 100, 0.3, 0.1)
    assert np.all((cov >= 0) & (cov <= 1))
    assert cov[30] > cov[45] and cov[30] > cov[15]


def test_credible_width_against_simulation_and_limits():
    n, p, eps, level = 40, 0.3, 0.5, 0.9
    a = np.array([0, 12, 40])
    width = cc.credible_width(a, n, p, eps, level)
    post = cr.PriorPosterior(cr.prior_logpmf(n, p), eps)
    rng = np.random.default_rng(4)
    for av, w in zip(a, width):
        y = av + rng.laplace(0, 1 / eps, 20_000)
        span = post.quantile(y, 0.5 * (1 + level)) - post.quantile(y, 0.5 * (1 - level))
        assert abs(span.mean() - w) < 4 * span.std() / np.sqrt(y.size) + 1e-9
    # no noise to speak of: the interval is the single count
    assert cc.credible_width([7], n, p, 30.0, level)[0] == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(ValueError, match="level"):
        cc.credible_width([1], n, p, eps, 1.0)


def test_bad_level_is_rejected_with_named_parameter():
    with pytest.raises(ValueError, match="level"):
        cc.credible_coverage([1], 10, 0.3, 1.0, level=1.0)
