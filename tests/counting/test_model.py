"""Tests for dpbayes.counting.model (Naldi & D'Acquisto): out-of-range probabilities, the posterior and the Bayes estimates."""

import numpy as np
import pytest

from dpbayes.counting import model as ct
from dpbayes.counting import metrics as cmet


@pytest.mark.parametrize("a", [0, 3, 10])
def test_out_of_range_probability_matches_simulation(a):
    n, eps = 10, 0.4
    rng = np.random.default_rng(11)
    y = a + rng.laplace(0, 1 / eps, size=200_000)
    freq = np.mean((y < 0) | (y > n))
    p = ct.out_of_range_probability(a, n, eps)
    assert abs(freq - p) < 4 * np.sqrt(p * (1 - p) / y.size)


@pytest.mark.parametrize("n", [1, 2, 7, 100])
@pytest.mark.parametrize("eps", [1e-3, 0.1, 2.0])
def test_theorem_2_1_and_minimum(n, eps):
    values = ct.out_of_range_probability(np.arange(n + 1), n, eps)
    assert values.max() == pytest.approx(ct.max_out_of_range_probability(n, eps), rel=1e-12)
    assert values[0] == values.max() and values[-1] == pytest.approx(values.max(), rel=1e-12)
    assert values.min() == pytest.approx(ct.min_out_of_range_probability_exact(n, eps), rel=1e-12)
    paper = ct.min_out_of_range_probability(n, eps)
    if n % 2 == 1:
        assert paper == pytest.approx(values.min(), rel=1e-12)
    else:
        # eq. (6) overstates the minimum for even n by cosh(eps/2)
        assert paper == pytest.approx(values.min() * np.cosh(eps / 2), rel=1e-12)


def test_expected_out_of_range_probability():
    n, p, eps = 20, 0.3, 0.5
    from scipy import stats

    w = stats.binom.pmf(np.arange(n + 1), n, p)
    direct = np.sum(w * ct.out_of_range_probability(np.arange(n + 1), n, eps))
    assert ct.expected_out_of_range_probability(n, p, eps) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (30, 0.05, 2.0), (7, 0.9, 10.0), (200, 0.5, 1e-3)])
def test_fast_estimators_match_dense_posterior(n, p, eps):
    y = np.concatenate([np.linspace(-3 * n, 4 * n, 997), np.arange(n + 1) + 0.0, [-1e6, 1e6]])
    post = np.exp(ct.posterior_logpmf(y, n, p, eps))
    k = np.arange(n + 1)
    # |y| = 1e6 with eps = 10 puts 1e7 into the exponents: ~1e-9 relative rounding either way
    np.testing.assert_allclose(ct.bayes_estimate(y, n, p, eps), post @ k, rtol=1e-7, atol=1e-9)
    dense_median = np.argmax(np.cumsum(post, axis=1) >= 0.5, axis=1)
    np.testing.assert_array_equal(ct.posterior_median(y, n, p, eps), dense_median)


def test_bayes_estimate_scalar_and_shape():
    assert isinstance(ct.bayes_estimate(3.2, 10, 0.3, 1.0), float)
    assert ct.bayes_estimate(np.zeros((2, 3)), 10, 0.3, 1.0).shape == (2, 3)


def test_bayes_estimate_degenerate_prior():
    y = np.linspace(-100, 100, 11)
    np.testing.assert_allclose(ct.bayes_estimate(y, 40, 0.0, 0.5), 0.0)
    np.testing.assert_allclose(ct.bayes_estimate(y, 40, 1.0, 0.5), 40.0)


@pytest.mark.parametrize("n", [1, 1000, 100_000])
@pytest.mark.parametrize("eps", [1e-4, 1e-2, 1.0, 10.0])
@pytest.mark.parametrize("p", [1e-9, 0.3, 1 - 1e-9])
def test_bayes_estimate_finite_and_in_range(n, eps, p):
    y = np.concatenate([np.linspace(-1e6, 1e6, 401), np.linspace(-3, n + 3, 401)])
    for f in (ct.bayes_estimate, ct.posterior_median):
        m = f(y, n, p, eps)
        assert np.all(np.isfinite(m))
        assert np.all((m >= 0) & (m <= n))


@pytest.mark.parametrize("eps", [1e-4, 10.0])
def test_bayes_estimate_finite_and_in_range_at_max_n(eps):
    """The docstring's range holds up to the cap MAX_N = 10**7 (the validated bound on n)."""
    n = ct.MAX_N
    y = np.concatenate([np.linspace(-1e6, 1e6, 201), np.linspace(-3, n + 3, 201)])
    for p in (1e-9, 0.3, 1 - 1e-9):
        m = ct.bayes_estimate(y, n, p, eps)
        assert np.all(np.isfinite(m)) and np.all((m >= 0) & (m <= n))
    with pytest.raises(ValueError, match="n"):
        ct.bayes_estimate(0.0, n + 1, 0.3, eps)


def test_bayes_estimate_monotone_in_y():
    y = np.linspace(-50, 150, 4001)
    m = ct.bayes_estimate(y, 100, 0.3, 0.2)
    assert np.all(np.diff(m) >= -1e-9)


def test_bad_input_is_rejected_with_named_parameter():
    with pytest.raises(ValueError, match="eps"):
        ct.bayes_estimate(1.0, 10, 0.3, 0.0)
    with pytest.raises(ValueError, match="p"):
        ct.bayes_estimate(1.0, 10, 1.3, 1.0)
    with pytest.raises(ValueError, match="n"):
        ct.bayes_estimate(1.0, 0, 0.3, 1.0)
    with pytest.raises(ValueError, match="y"):
        ct.bayes_estimate([1.0, np.nan], 10, 0.3, 1.0)
    with pytest.raises(ValueError, match="estimator"):
        cmet.mean_abs_error("mode", 10, 0.3, 1.0)
    with pytest.raises(ValueError, match="a must"):
        ct.out_of_range_probability(11, 10, 1.0)


def test_marginal_density_integrates_to_one():
    n, p, eps = 40, 0.3, 0.5
    y = np.linspace(-200, 240, 200_001)
    f = ct.marginal_density(y, n, p, eps)
    assert np.trapezoid(f, y) == pytest.approx(1.0, abs=1e-6)


def test_pointwise_window_gives_the_full_posterior():
    n, p, eps = 50_000, 0.001, 3.0
    full = ct._Posterior.build(n, p, eps)
    for y in (-100.0, 0.5, 53.3, 550.7, 45_000.0, n + 50.0):
        post = ct._Posterior.build(n, p, eps, around=y)
        assert post.m < n // 2
        y_arr = np.array([y])
        assert post.mean(y_arr)[0] == pytest.approx(full.mean(y_arr)[0], rel=1e-11)
        assert post.median(y_arr)[0] == full.median(y_arr)[0]
