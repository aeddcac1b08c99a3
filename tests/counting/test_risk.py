"""Tests for dpbayes.counting.risk (the posterior under any prior, fixed-count risk, wrong prior, geometric + median at fixed counts)."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.counting import model as ct
from dpbayes.counting import geometric as cgeo
from dpbayes.counting import metrics as cmet
from dpbayes.counting import credible as cc
from dpbayes.counting import risk as cr


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


@pytest.mark.parametrize("estimator", ["mean", "median"])


@pytest.mark.parametrize("n,p,eps", [(100, 0.3, 0.1), (100, 0.3, 1.0), (20, 0.1, 3.0)])
def test_prior_average_of_fixed_count_risk_is_the_paper_metric(estimator, n, p, eps):
    a = np.arange(n + 1)
    w = stats.binom.pmf(a, n, p)
    abs_risk = cr.fixed_count_risk(a, estimator, n, p, eps, "abs")
    closer = cr.fixed_count_risk(a, estimator, n, p, eps, "closer")
    assert w @ abs_risk == pytest.approx(cmet.mean_abs_error(estimator, n, p, eps), rel=1e-9)
    assert w @ closer == pytest.approx(cmet.prob_lower_error(estimator, n, p, eps), rel=1e-8, abs=1e-10)
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
    cover = float(cc.credible_coverage(a, n, p, eps, 0.9, prior, conc))
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


def test_geometric_fixed_count_averages_to_counting():
    n, p = 40, 0.3
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    for eps in (0.1, 1.0):
        risk = cr.geometric_fixed_count_risk(np.arange(n + 1), n, p, eps, "abs")
        assert w @ risk == pytest.approx(cgeo.geometric_mean_abs_error("median", n, p, eps), rel=1e-12)


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
