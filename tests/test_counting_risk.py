"""Tests for dpbayes.counting_risk (fixed-count risk, wrong prior, coverage, limits)."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes import counting as ct
from dpbayes import counting_risk as cr


# --- posteriors ---------------------------------------------------------------------------


@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (30, 0.05, 2.0), (7, 0.9, 10.0), (200, 0.5, 1e-3)])
def test_prior_posterior_matches_counting_for_the_binomial_prior(n, p, eps):
    y = np.concatenate([np.linspace(-2 * n, 3 * n, 1201), np.arange(n + 1) + 0.0])
    post = cr.PriorPosterior(stats.binom.logpmf(np.arange(n + 1), n, p), eps)
    np.testing.assert_allclose(post.mean(y), ct.bayes_estimate(y, n, p, eps), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(post.median(y), ct.posterior_median(y, n, p, eps))


def test_prior_posterior_cdf_and_quantiles_against_dense():
    n, eps = 40, 0.7
    lw = cr.prior_logpmf(n, 0.3, "beta-binomial", 5.0)
    post = cr.PriorPosterior(lw, eps)
    y = np.linspace(-10, 50, 301)
    k = np.arange(n + 1)
    logj = lw[None, :] - eps * np.abs(y[:, None] - k[None, :])
    dense = np.exp(logj - logj.max(axis=1, keepdims=True))
    dense /= dense.sum(axis=1, keepdims=True)
    cdf = np.cumsum(dense, axis=1)
    for t in (0, 5, 12, 40):
        np.testing.assert_allclose(post.cdf(t, y), cdf[:, t], atol=1e-12)
    for q in (0.05, 0.5, 0.95):
        np.testing.assert_array_equal(post.quantile(y, q), np.argmax(cdf >= q, axis=1))
    np.testing.assert_allclose(post.mean(y), dense @ k, rtol=1e-10)


def test_beta_binomial_prior_limits():
    n = 50
    big = cr.prior_logpmf(n, 0.3, "beta-binomial", 1e7)
    np.testing.assert_allclose(np.exp(big), stats.binom.pmf(np.arange(n + 1), n, 0.3), atol=1e-5)
    flat = cr.prior_logpmf(n, 0.5, "beta-binomial", 2.0)  # Beta(1, 1): uniform count
    np.testing.assert_allclose(np.exp(flat), 1.0 / (n + 1), rtol=1e-10)


# --- fixed-count risk ---------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ["mean", "median"])
@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (100, 0.3, 1.0), (20, 0.1, 3.0)])
def test_prior_average_of_fixed_count_risk_is_the_paper_metric(estimator, n, p, eps):
    a = np.arange(n + 1)
    w = stats.binom.pmf(a, n, p)
    abs_risk = cr.fixed_count_risk(a, estimator, n, p, eps, "abs")
    closer = cr.fixed_count_risk(a, estimator, n, p, eps, "closer")
    assert w @ abs_risk == pytest.approx(ct.mean_abs_error(estimator, n, p, eps), rel=1e-9)
    assert w @ closer == pytest.approx(ct.prob_lower_error(estimator, n, p, eps), rel=1e-8, abs=1e-10)
    assert cr.average_risk(estimator, n, p, p, eps) == pytest.approx(w @ abs_risk, rel=1e-12)


def test_naive_fixed_count_risk_is_closed_form():
    a = np.array([0, 3, 10])
    assert np.all(cr.fixed_count_risk(a, "naive", 10, 0.3, 0.5, "abs") == 2.0)
    assert np.all(cr.fixed_count_risk(a, "naive", 10, 0.3, 0.5, "sq") == 8.0)
    assert np.all(cr.fixed_count_risk(a, "naive", 10, 0.3, 0.5, "closer") == 0.0)
    assert np.all(cr.fixed_count_risk(a, "naive", 10, 0.3, 0.5, "cross") == 8.0)


def _brute_force(a, estimator, n, p, eps, loss, prior="binomial", conc=None):
    """Adaptive quadrature over y on [-60/eps, n + 60/eps] with every integer as a break point."""
    fn = cr.make_estimator(estimator, n, p, eps, prior, conc)

    def integrand(y):
        m = float(fn(np.array([y]))[0])
        f = 0.5 * eps * np.exp(-eps * abs(y - a))
        if loss == "abs":
            return f * abs(a - m)
        if loss == "sq":
            return f * (a - m) ** 2
        if loss == "cross":
            return f * abs(a - m) * abs(a - y)
        return f * float(abs(a - m) < abs(a - y))

    lo, hi = -60.0 / eps, n + 60.0 / eps
    pts = np.concatenate(([lo], np.arange(0, n + 1, 0.5), [hi]))
    return sum(integrate.quad(integrand, x0, x1, limit=200, epsabs=1e-12)[0] for x0, x1 in zip(pts[:-1], pts[1:]))


@pytest.mark.parametrize(
    "a,estimator,n,p,eps,loss",
    [
        (3, "mean", 12, 0.3, 0.4, "abs"),
        (9, "median", 12, 0.3, 0.4, "abs"),
        (0, "mean", 12, 0.3, 2.0, "sq"),
        (5, "median", 12, 0.4, 2.0, "sq"),
        (2, "mean", 12, 0.3, 1.0, "closer"),
        (3, "mean", 12, 0.3, 0.4, "cross"),
        (11, "mean", 12, 0.3, 2.0, "cross"),
    ],
)
def test_fixed_count_risk_against_brute_force_quadrature(a, estimator, n, p, eps, loss):
    exact = float(cr.fixed_count_risk(a, estimator, n, p, eps, loss))
    brute = _brute_force(a, estimator, n, p, eps, loss)
    # the brute force cannot see the jumps of the median or of the win indicator: ~1e-5 abs
    assert exact == pytest.approx(brute, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize(
    "a,estimator,n,p,eps,prior,conc",
    [
        (0, "mean", 100, 0.3, 0.1, "binomial", None),
        (45, "mean", 100, 0.3, 0.1, "binomial", None),
        (30, "median", 100, 0.3, 1.0, "binomial", None),
        (15, "mean", 100, 0.3, 1.0, "binomial", None),
        (100, "median", 100, 0.3, 1.0, "binomial", None),
        (60, "mean", 200, 0.25, 0.3, "beta-binomial", 20.0),
        (50, "mean", 100, 0.5, 0.3, "beta-binomial", 2.0),
        (7, "median", 30, 0.2, 3.0, "beta-binomial", 20.0),
    ],
)
def test_fixed_count_quantities_agree_with_monte_carlo(a, estimator, n, p, eps, prior, conc):
    """The acceptance's cross-check: every exact fixed-count quantity within 4 standard errors."""
    rng = np.random.default_rng(20260 + a)
    mc = cr.monte_carlo_fixed_count(a, estimator, n, p, eps, 100_000, rng, prior, conc)
    for loss in ("abs", "sq", "closer"):
        exact = float(cr.fixed_count_risk(a, estimator, n, p, eps, loss, prior, conc))
        assert abs(exact - mc[loss]) <= 4 * mc[loss + "_se"] + 1e-12, (loss, exact, mc[loss])
    cover = float(cr.credible_coverage(a, n, p, eps, 0.9, prior, conc))
    assert abs(cover - mc["cover"]) <= 4 * mc["cover_se"] + 1e-12, (cover, mc["cover"])


def test_misspecified_prior_against_monte_carlo():
    n, p_true, p_model, eps = 100, 0.3, 0.2, 0.5
    rng = np.random.default_rng(7)
    c = rng.binomial(n, p_true, size=200_000)
    y = c + rng.laplace(0, 1 / eps, size=c.size)
    err = np.abs(c - ct.bayes_estimate(y, n, p_model, eps))
    exact = cr.misspecified_ratio("mean", n, p_true, p_model, eps)
    assert abs(exact - err.mean() * eps) <= 4 * err.std() / np.sqrt(c.size) * eps


def test_wrong_prior_hurts_and_right_prior_is_best():
    ratios = [cr.misspecified_ratio("mean", 100, 0.3, q, 0.3) for q in (0.2, 0.3, 0.4)]
    assert ratios[1] < ratios[0] and ratios[1] < ratios[2]


# --- coverage -----------------------------------------------------------------------------


def test_coverage_averaged_over_the_prior_is_close_to_the_level():
    """Averaged over its own prior an equal-tailed interval of integers covers at least ~level."""
    n, p, eps = 60, 0.3, 0.5
    a = np.arange(n + 1)
    avg = stats.binom.pmf(a, n, p) @ cr.credible_coverage(a, n, p, eps, 0.9)
    assert 0.9 - 1e-9 <= avg <= 0.99


def test_coverage_is_a_probability_and_decreases_away_from_the_prior():
    cov = cr.credible_coverage(np.arange(101), 100, 0.3, 0.1)
    assert np.all((cov >= 0) & (cov <= 1))
    assert cov[30] > cov[45] and cov[30] > cov[15]


# --- geometric mechanism + median ---------------------------------------------------------


def test_geometric_fixed_count_averages_to_counting():
    n, p = 40, 0.3
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    for eps in (0.1, 1.0):
        risk = cr.geometric_fixed_count_risk(np.arange(n + 1), n, p, eps, "abs")
        assert w @ risk == pytest.approx(ct.geometric_mean_abs_error("median", n, p, eps), rel=1e-12)


@pytest.mark.parametrize("a,eps", [(0, 0.3), (12, 0.3), (40, 1.0)])
def test_geometric_fixed_count_against_simulation(a, eps):
    n, p = 40, 0.3
    rng = np.random.default_rng(3 + a)
    r = np.exp(-eps)
    g = rng.geometric(1 - r, size=200_000) - rng.geometric(1 - r, size=200_000)  # two-sided geometric
    z = a + g
    est = cr._geometric_median_table(n, p, eps)[np.clip(z, 0, n)]
    for loss, v in (
        ("abs", np.abs(a - est)),
        ("closer", (np.abs(a - est) < np.abs(a - z)).astype(float)),
        ("farther", (np.abs(a - est) > np.abs(a - z)).astype(float)),
    ):
        exact = float(cr.geometric_fixed_count_risk(a, n, p, eps, loss))
        # an event that never occurs in the sample: 5 / size bounds its probability (~99 %)
        assert abs(exact - v.mean()) <= max(4 * v.std() / np.sqrt(v.size), 5 / v.size), loss


# --- privacy, limits, extremes ------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_individual_odds_shift_is_bounded_by_eps_and_attained(eps):
    y = np.linspace(-300, 400, 7001)
    shift = cr.individual_odds_shift(100, 0.3, eps, y)
    assert shift.max() <= eps * (1 + 1e-12)
    assert shift.max() == pytest.approx(eps, rel=1e-9)  # attained outside [0, n]


def test_individual_odds_shift_against_dense_sum():
    n, p, eps = 12, 0.3, 0.8
    y = np.array([-3.0, 0.4, 5.5, 11.0, 20.0])
    c = np.arange(n)
    b = stats.binom.pmf(c, n - 1, p)
    f1 = (b[None, :] * np.exp(-eps * np.abs(y[:, None] - c[None, :] - 1))).sum(axis=1)
    f0 = (b[None, :] * np.exp(-eps * np.abs(y[:, None] - c[None, :]))).sum(axis=1)
    np.testing.assert_allclose(cr.individual_odds_shift(n, p, eps, y), np.abs(np.log(f1 / f0)), rtol=1e-10, atol=1e-13)


def test_gaussian_limit_matches_exact_at_large_n_for_wide_noise():
    g = cr.gaussian_limit(10_000, 0.3, 0.3)
    assert g["ratio"] == pytest.approx(ct.mean_abs_error("mean", 10_000, 0.3, 0.3) * 0.3, abs=1e-4)
    assert g["closer"] == pytest.approx(ct.prob_lower_error("mean", 10_000, 0.3, 0.3), abs=1e-3)


def test_lattice_limit_matches_exact_at_large_n_for_narrow_noise():
    lat = cr.lattice_limit(3.0)
    assert lat["ratio"] == pytest.approx(ct.mean_abs_error("mean", 10_000, 0.3, 3.0) * 3.0, rel=1e-3)


def test_extreme_over_eps_finds_a_known_minimum():
    res = cr.extreme_over_eps(lambda e: (np.log(e) - np.log(0.37)) ** 2 + 2.0, 0.01, 10.0)
    assert res["eps"] == pytest.approx(0.37, rel=1e-3) and res["value"] == pytest.approx(2.0, abs=1e-7)
    res = cr.extreme_over_eps(lambda e: -e, 0.01, 10.0, maximize=True)  # maximum of -e at the left end
    assert res["at_boundary"] and res["eps"] == pytest.approx(0.01, rel=1e-3)


def test_extreme_beats_the_grid_for_the_paper_metric():
    f = lambda e: ct.prob_lower_error("mean", 100, 0.3, e)
    res = cr.extreme_over_eps(f, 0.01, 10.0, n_coarse=11)
    assert res["value"] <= res["scan_values"].min() + 1e-15


# --- input validation ---------------------------------------------------------------------


def test_bad_input_is_rejected_with_named_parameter():
    with pytest.raises(ValueError, match="a must be integer counts"):
        cr.fixed_count_risk([101], "mean", 100, 0.3, 1.0)
    with pytest.raises(ValueError, match="a must be integer counts"):
        cr.fixed_count_risk([1.5], "mean", 100, 0.3, 1.0)
    with pytest.raises(ValueError, match="loss"):
        cr.fixed_count_risk([1], "mean", 100, 0.3, 1.0, loss="huber")
    with pytest.raises(ValueError, match="concentration"):
        cr.fixed_count_risk([1], "mean", 100, 0.3, 1.0, prior="beta-binomial")
    with pytest.raises(ValueError, match="eps"):
        cr.fixed_count_risk([1], "mean", 100, 0.3, -1.0)
    with pytest.raises(ValueError, match="p must lie in"):
        cr.prior_logpmf(10, 0.0, "beta-binomial", 2.0)
    with pytest.raises(ValueError, match="level"):
        cr.credible_coverage([1], 10, 0.3, 1.0, level=1.0)
    with pytest.raises(ValueError, match="eps_min"):
        cr.extreme_over_eps(lambda e: e, 1.0, 0.5)


# --- what the gain needs ------------------------------------------------------------------


@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (100, 0.3, 1.0), (40, 0.6, 0.5)])
def test_gain_p_known_is_chapter_4_metric_and_beta_binomial_matches_average_risk(n, p, eps):
    g = cr.gain_over_naive(n, p, eps, concentration=20.0)
    assert tuple(g) == cr.GAIN_COLUMNS
    # estimator_choice's Laplace + posterior mean equals chapter 4's eq. (12) with p known ...
    assert g["p known"] == pytest.approx(ct.mean_abs_error("mean", n, p, eps) * eps, rel=1e-7)
    # ... and this module's Beta-binomial prior centred on the truth
    assert g["Beta-binomial centred"] == pytest.approx(
        cr.misspecified_ratio("mean", n, p, p, eps, "beta-binomial", 20.0), rel=1e-6)
    # the known p is the best of the Laplace posterior means (Bayes for squared error, close for absolute)
    assert g["p known"] < min(g["flat prior on p"], g["Jeffreys prior on p"])


def test_gain_prior_free_columns_against_simulation():
    n, p, eps, runs = 60, 0.3, 0.7, 400_000
    g = cr.gain_over_naive(n, p, eps)
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
        cr.gain_over_naive(5000, 0.3, 1.0)
    with pytest.raises(ValueError, match="p"):
        cr.gain_over_naive(100, 0.0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        cr.gain_over_naive(100, 0.3, -1.0)
    with pytest.raises(ValueError, match="concentration"):
        cr.gain_over_naive(100, 0.3, 1.0, concentration=0.0)


def test_monte_carlo_resolution_against_simulated_standard_errors():
    n, p, eps, runs = 40, 0.3, 0.5, 100_000
    res = cr.monte_carlo_resolution(n, p, eps, runs)
    rng = np.random.default_rng(7)
    reps = 4000  # draws of size `runs` are too many: the variances scale as 1/runs, check them on `reps` draws
    c = rng.binomial(n, p, reps * 50)
    y = c + rng.laplace(0.0, 1.0 / eps, c.size)
    m = ct.bayes_estimate(y, n, p, eps)
    eb, en = np.abs(c - m), np.abs(c - y)
    assert res["gap"] == pytest.approx(1 / eps - ct.mean_abs_error("mean", n, p, eps), rel=1e-7)
    se_u = eb.std() / np.sqrt(runs)
    se_p = (en - eb).std() / np.sqrt(runs)
    # sample standard deviations from 200,000 draws: ~0.3 % accurate
    assert res["se_unpaired"] == pytest.approx(se_u, rel=0.02)
    assert res["se_paired"] == pytest.approx(se_p, rel=0.02)
    assert res["z_unpaired"] == pytest.approx(res["gap"] / res["se_unpaired"])
    with pytest.raises(ValueError, match="runs"):
        cr.monte_carlo_resolution(n, p, eps, 1)


def test_plugin_estimate_is_the_paper_mean_at_its_own_p_hat():
    n, eps = 50, 0.4
    y = np.array([0.5, 3.2, 17.0, 25.5, 49.5])
    expected = [ct.bayes_estimate(v, n, v / n, eps) for v in y]
    np.testing.assert_allclose(cr.plugin_estimate(y, n, eps), expected, rtol=1e-9)
    # constant outside [0, n], clamped p_hat near the ends
    assert cr.plugin_estimate(-30.0, n, eps) == pytest.approx(cr.plugin_estimate(0.0, n, eps))
    assert cr.plugin_estimate(n + 30.0, n, eps) == pytest.approx(cr.plugin_estimate(float(n), n, eps))
    assert cr.plugin_estimate(0.2, n, eps) == pytest.approx(ct.bayes_estimate(0.2, n, 0.5 / n, eps))
    with pytest.raises(ValueError, match="y"):
        cr.plugin_estimate([np.nan], n, eps)


def test_plugin_ratio_against_brute_force_and_simulation():
    n, p, eps = 30, 0.3, 0.5
    fn = lambda v: cr.plugin_estimate(v, n, eps)  # noqa: E731
    a = np.arange(n + 1)
    exact = cr._function_risk(fn, a.astype(float), n, eps, "abs")

    def brute(av):
        f = lambda v: 0.5 * eps * np.exp(-eps * abs(v - av)) * abs(av - float(fn(np.array([v]))[0]))  # noqa: E731
        pts = np.concatenate(([-60 / eps], np.arange(0, n + 1, 0.5), [n + 60 / eps]))
        return sum(integrate.quad(f, x0, x1, limit=200, epsabs=1e-12)[0] for x0, x1 in zip(pts[:-1], pts[1:]))

    for av in (0, 9, 30):
        assert exact[av] == pytest.approx(brute(av), rel=1e-5, abs=1e-7)
    ratio = cr.plugin_ratio(n, p, eps)
    assert ratio == pytest.approx(float(stats.binom.pmf(a, n, p) @ exact) * eps, rel=1e-9)
    rng = np.random.default_rng(3)
    c = rng.binomial(n, p, 200_000)
    err = np.abs(cr.plugin_estimate(c + rng.laplace(0, 1 / eps, c.size), n, eps) - c) * eps
    assert abs(err.mean() - ratio) < 4 * err.std() / np.sqrt(c.size)


@pytest.mark.parametrize("estimate", ["rounded clamped count", "truncated geometric"])
def test_prior_free_fixed_count_ratio_against_simulation_and_the_gain_table(estimate):
    n, p, eps, runs = 25, 0.3, 0.8, 200_000
    r = cr.prior_free_fixed_count_ratio(estimate, n, eps)
    assert r.shape == (n + 1,)
    # averaged over the prior it is the gain table's column
    g = cr.gain_over_naive(n, p, eps)
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
        cr.prior_free_fixed_count_ratio("naive", n, eps)


def test_credible_width_against_simulation_and_limits():
    n, p, eps, level = 40, 0.3, 0.5, 0.9
    a = np.array([0, 12, 40])
    width = cr.credible_width(a, n, p, eps, level)
    post = cr.PriorPosterior(cr.prior_logpmf(n, p), eps)
    rng = np.random.default_rng(4)
    for av, w in zip(a, width):
        y = av + rng.laplace(0, 1 / eps, 20_000)
        span = post.quantile(y, 0.5 * (1 + level)) - post.quantile(y, 0.5 * (1 - level))
        assert abs(span.mean() - w) < 4 * span.std() / np.sqrt(y.size) + 1e-9
    # no noise to speak of: the interval is the single count
    assert cr.credible_width([7], n, p, 30.0, level)[0] == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(ValueError, match="level"):
        cr.credible_width([1], n, p, eps, 1.0)
