"""Tests for dpbayes.choosing.counting_gain (what the Bayes gain needs: known p, a prior on p, a plug-in, no prior)."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.counting import model as ct
from dpbayes.counting import metrics as cmet
from dpbayes.counting import risk as cr
from dpbayes.choosing import counting_gain as cg


@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (100, 0.3, 1.0), (40, 0.6, 0.5)])
def test_gain_p_known_is_chapter_4_metric_and_beta_binomial_matches_average_risk(n, p, eps):
    g = cg.gain_over_naive(n, p, eps, concentration=20.0)
    assert tuple(g) == cg.GAIN_COLUMNS
    # estimator_choice's Laplace + posterior mean equals chapter 4's eq. (12) with p known ...
    assert g["p known"] == pytest.approx(cmet.mean_abs_error("mean", n, p, eps) * eps, rel=1e-7)
    # ... and this module's Beta-binomial prior centred on the truth
    assert g["Beta-binomial centred"] == pytest.approx(
        cr.misspecified_ratio("mean", n, p, p, eps, "beta-binomial", 20.0), rel=1e-6)
    # the known p is the best of the Laplace posterior means (Bayes for squared error, close for absolute)
    assert g["p known"] < min(g["flat prior on p"], g["Jeffreys prior on p"])


def test_gain_prior_free_columns_against_simulation():
    n, p, eps, runs = 60, 0.3, 0.7, 400_000
    g = cg.gain_over_naive(n, p, eps)
    rng = np.random.default_rng(5)
    c = rng.binomial(n, p, runs)
    y = c + rng.laplace(0.0, 1.0 / eps, runs)
    r = np.abs(np.round(np.clip(y, 0, n)) - c)
    a = np.exp(-eps)
    geo = rng.geometric(1 - a, runs) - rng.geometric(1 - a, runs)  # two-sided geometric, P(k) ~ a^|k|
    s = np.abs(np.clip(c + geo, 0, n) - c)
    for col, sample in (("rounded clamped count", r), ("truncated geometric", s)):
        se = sample.std() / np.sqrt(runs) * eps
        assert abs(sample.mean() * eps - g[col]) < 4 * se, col


def test_gain_rejects_bad_input_with_named_parameter():
    with pytest.raises(ValueError, match="n"):
        cg.gain_over_naive(5000, 0.3, 1.0)
    with pytest.raises(ValueError, match="p"):
        cg.gain_over_naive(100, 0.0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        cg.gain_over_naive(100, 0.3, -1.0)
    with pytest.raises(ValueError, match="concentration"):
        cg.gain_over_naive(100, 0.3, 1.0, concentration=0.0)


def test_monte_carlo_resolution_against_simulated_standard_errors():
    n, p, eps, runs = 40, 0.3, 0.5, 100_000
    res = cg.monte_carlo_resolution(n, p, eps, runs)
    rng = np.random.default_rng(7)
    reps = 4000  # draws of size `runs` are too many: the variances scale as 1/runs, check them on `reps` draws
    c = rng.binomial(n, p, reps * 50)
    y = c + rng.laplace(0.0, 1.0 / eps, c.size)
    m = ct.bayes_estimate(y, n, p, eps)
    eb, en = np.abs(c - m), np.abs(c - y)
    assert res["gap"] == pytest.approx(1 / eps - cmet.mean_abs_error("mean", n, p, eps), rel=1e-7)
    se_u = eb.std() / np.sqrt(runs)
    se_p = (en - eb).std() / np.sqrt(runs)
    # sample standard deviations from 200,000 draws: ~0.3 % accurate
    assert res["se_unpaired"] == pytest.approx(se_u, rel=0.02)
    assert res["se_paired"] == pytest.approx(se_p, rel=0.02)
    assert res["z_unpaired"] == pytest.approx(res["gap"] / res["se_unpaired"])
    with pytest.raises(ValueError, match="runs"):
        cg.monte_carlo_resolution(n, p, eps, 1)


def test_plugin_estimate_is_the_paper_mean_at_its_own_p_hat():
    n, eps = 50, 0.4
    y = np.array([0.5, 3.2, 17.0, 25.5, 49.5])
    expected = [ct.bayes_estimate(v, n, v / n, eps) for v in y]
    np.testing.assert_allclose(cg.plugin_estimate(y, n, eps), expected, rtol=1e-9)
    # constant outside [0, n], clamped p_hat near the ends
    assert cg.plugin_estimate(-30.0, n, eps) == pytest.approx(cg.plugin_estimate(0.0, n, eps))
    assert cg.plugin_estimate(n + 30.0, n, eps) == pytest.approx(cg.plugin_estimate(float(n), n, eps))
    assert cg.plugin_estimate(0.2, n, eps) == pytest.approx(ct.bayes_estimate(0.2, n, 0.5 / n, eps))
    with pytest.raises(ValueError, match="y"):
        cg.plugin_estimate([np.nan], n, eps)


def test_plugin_ratio_against_brute_force_and_simulation():
    n, p, eps = 30, 0.3, 0.5
    fn = lambda v: cg.plugin_estimate(v, n, eps)  # noqa: E731
    a = np.arange(n + 1)
    exact = cr._function_risk(fn, a.astype(float), n, eps, "abs")

    def brute(av):
        f = lambda v: 0.5 * eps * np.exp(-eps * abs(v - av)) * abs(av - float(fn(np.array([v]))[0]))  # noqa: E731
        pts = np.concatenate(([-60 / eps], np.arange(0, n + 1, 0.5), [n + 60 / eps]))
        return sum(integrate.quad(f, x0, x1, limit=200, epsabs=1e-12)[0] for x0, x1 in zip(pts[:-1], pts[1:]))

    for av in (0, 9, 30):
        assert exact[av] == pytest.approx(brute(av), rel=1e-5, abs=1e-7)
    ratio = cg.plugin_ratio(n, p, eps)
    assert ratio == pytest.approx(float(stats.binom.pmf(a, n, p) @ exact) * eps, rel=1e-9)
    rng = np.random.default_rng(3)
    c = rng.binomial(n, p, 200_000)
    err = np.abs(cg.plugin_estimate(c + rng.laplace(0, 1 / eps, c.size), n, eps) - c) * eps
    assert abs(err.mean() - ratio) < 4 * err.std() / np.sqrt(c.size)


@pytest.mark.parametrize("estimate", ["rounded clamped count", "truncated geometric"])
def test_prior_free_fixed_count_ratio_against_simulation_and_the_gain_table(estimate):
    n, p, eps, runs = 25, 0.3, 0.8, 200_000
    r = cg.prior_free_fixed_count_ratio(estimate, n, eps)
    assert r.shape == (n + 1,)
    # averaged over the prior it is the gain table's column
    g = cg.gain_over_naive(n, p, eps)
    assert float(stats.binom.pmf(np.arange(n + 1), n, p) @ r) == pytest.approx(g[estimate], rel=1e-9)
    rng = np.random.default_rng(11)
    a = 3
    if estimate == "rounded clamped count":
        est = np.round(np.clip(a + rng.laplace(0, 1 / eps, runs), 0, n))
    else:
        q = np.exp(-eps)
        est = np.clip(a + rng.geometric(1 - q, runs) - rng.geometric(1 - q, runs), 0, n)
    err = np.abs(est - a) * eps
    assert abs(err.mean() - r[a]) < 4 * err.std() / np.sqrt(runs)
    with pytest.raises(ValueError, match="estimate"):
        cg.prior_free_fixed_count_ratio("naive", n, eps)
