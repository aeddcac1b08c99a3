"""Tests of dpbayes.posterior.geometric: the exact cost factors of LSHist over the geometric mechanism, and the
closed-form certificate of the geometric mechanism's optimality (checked against the LP and in exact arithmetic)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpbayes.posterior import geometric as pg
from dpbayes.posterior import release as pr


def _risks(mechanism, n, eps, prior, loss="hellinger"):
    """Mean loss of ``mechanism`` at every data set (exact output law)."""
    P = np.exp(pr.exact_log_output_distribution(mechanism, n, eps, prior))
    return pr.release_risks(P, pr.binary_loss_matrix(n, prior, loss))


# --------------------------------------------------------------------------------------------
# The offsets and the cost factors
# --------------------------------------------------------------------------------------------
def test_cost_factor_values_and_validation():
    e = np.array([0.01, 1.0, 3.0, 10.0])
    assert np.allclose(pg.cost_factor("continuous", e), np.cosh(e / 2))
    assert np.allclose(pg.cost_factor("floor", e), np.cosh(e / 2))
    assert np.allclose(pg.cost_factor("lshist", e), (1 + np.cosh(e)) / 2)
    assert isinstance(pg.cost_factor("lshist", 1.0), float)
    with pytest.raises(ValueError, match="kind"):
        pg.cost_factor("ceil", 1.0)
    with pytest.raises(ValueError, match="eps"):
        pg.cost_factor("floor", 0.0)


@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0])
def test_offset_laws_and_their_mixture_identities(eps):
    d = np.arange(-2000, 2001)
    geo, rnd, flo = (pg.offset_pmf(k, d, eps) for k in pg.OFFSET_KINDS)
    for p in (geo, rnd, flo):
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
    c = math.cosh(eps / 2)
    # rounded Laplace = cosh * geometric - (cosh - 1) * point mass at 0
    assert np.allclose(rnd, c * geo - (c - 1) * (d == 0), rtol=1e-12, atol=1e-280)
    # floored Laplace = geometric, shifted by -1 with probability 1/2
    shifted = pg.offset_pmf("geometric", d + 1, eps)
    assert np.allclose(flo, 0.5 * geo + 0.5 * shifted, rtol=1e-12, atol=1e-280)
    # the floor's symmetrised law is cosh^2 times the geometric one off 0
    sym = 0.5 * (flo + flo[::-1])
    assert np.allclose(sym[d != 0], c * c * geo[d != 0], rtol=1e-12, atol=1e-280)
    with pytest.raises(ValueError, match="integers"):
        pg.offset_pmf("floor", 0.5, eps)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.02, 3.0), (0.05, 0.05)])
@pytest.mark.parametrize("loss", ["hellinger", "tv", "kl_release_true", "mean_sq"])
def test_rounding_costs_cosh_at_every_data_set(prior, loss):
    for n, eps in ((10, 0.05), (37, 1.0), (37, 4.0)):
        rnd, geo = _risks("LSHist-round", n, eps, prior, loss), _risks("Geometric", n, eps, prior, loss)
        assert np.allclose(rnd, math.cosh(eps / 2) * geo, rtol=1e-9, atol=0)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.05, 0.05), (4.0, 4.0)])
@pytest.mark.parametrize("loss", ["hellinger", "kl_true_release", "mean_abs"])
def test_flooring_costs_cosh_squared_averaged_under_a_symmetric_prior(prior, loss):
    for n, eps in ((10, 0.05), (25, 0.7), (25, 5.0)):
        w = pr.beta_binomial_data_prior(n, prior)
        flo, rnd, geo = (w @ _risks(m, n, eps, prior, loss) for m in ("LSHist", "LSHist-round", "Geometric"))
        assert flo / geo == pytest.approx(pg.cost_factor("lshist", eps), rel=1e-9)
        assert flo / rnd == pytest.approx(pg.cost_factor("floor", eps), rel=1e-9)


def test_the_floor_identity_needs_the_symmetry():
    # at one data set, or averaged under an asymmetric prior, the factor is not cosh^2
    n, eps = 25, 2.0
    flo, geo = _risks("LSHist", n, eps, (1.0, 1.0)), _risks("Geometric", n, eps, (1.0, 1.0))
    assert abs(flo[3] / geo[3] - pg.cost_factor("lshist", eps)) > 1e-3
    prior = (0.02, 3.0)
    w = pr.beta_binomial_data_prior(n, prior)
    ratio = (w @ _risks("LSHist", n, eps, prior)) / (w @ _risks("Geometric", n, eps, prior))
    assert abs(ratio / pg.cost_factor("lshist", eps) - 1) > 1e-3


@pytest.mark.parametrize("n", [10, 30])
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_ratios_to_the_lp_optimum(n, eps):
    prior = (1.0, 1.0)
    w = pr.beta_binomial_data_prior(n, prior)
    lp = pr.optimal_release_lp(n, eps, prior, data_prior=w)
    flo, geo = (w @ _risks(m, n, eps, prior) for m in ("LSHist", "Geometric"))
    cert = pg.binary_geometric_certificate(n, eps, prior)
    # the LP's optimum lies between the certificate's lower bound and the geometric mechanism
    assert cert.lower_bound <= lp.solver_value * (1 + 1e-7)
    assert lp.solver_value <= geo * (1 + 1e-7)
    if cert.optimal:
        assert geo == pytest.approx(lp.solver_value, rel=1e-7)
        assert flo / lp.solver_value == pytest.approx(pg.cost_factor("lshist", eps), rel=1e-7)
    else:
        assert geo > lp.value * (1 + 1e-4)  # the optimum beats the geometric mechanism


# --------------------------------------------------------------------------------------------
# The certificate and the threshold
# --------------------------------------------------------------------------------------------
def test_certificate_agrees_with_the_remap_and_bounds_the_optimum():
    n, prior = 20, (1.0, 1.0)
    th = pg.binary_geometric_threshold(n, prior)
    assert th.sign_changes == 1 and not th.optimal_at_low and th.optimal_at_high
    for eps, expect in ((th.eps_star_exact * (1 - 1e-3), False), (th.eps_star_exact * (1 + 1e-3), True)):
        cert = pg.binary_geometric_certificate(n, eps, prior)
        assert cert.optimal is expect
        remap = pr.optimal_release_bayes_exact(n, eps, prior, data_prior=pr.beta_binomial_data_prior(n, prior)).info["remap"]
        assert np.array_equal(remap, np.arange(n + 1)) is expect
    cert = pg.binary_geometric_certificate(n, 2.0, prior)
    assert cert.lower_bound <= cert.primal_risk
    assert cert.relative_gap < 1e-11
    geo = pr.beta_binomial_data_prior(n, prior) @ _risks("Geometric", n, 2.0, prior)
    assert cert.primal_risk == pytest.approx(geo, rel=1e-12)
    below = pg.binary_geometric_certificate(n, 0.2, prior)
    assert below.margin < 0 and below.relative_gap > 1e-3


def test_margin_is_continuous_and_changes_sign_at_the_threshold():
    n, prior = 12, (1.0, 1.0)
    L, w = pr.binary_loss_matrix(n, prior), pr.beta_binomial_data_prior(n, prior)
    th = pg.geometric_threshold(L, w)
    lo = pg.geometric_certificate(L, w, th.eps_star_exact - 1e-7, lower_bound=False).margin
    hi = pg.geometric_certificate(L, w, th.eps_star_exact + 1e-7, lower_bound=False).margin
    assert lo < 0 <= hi and hi - lo < 1e-5


def _exact_tails(C, a):
    """Exact rational dual nu = A^{-1} b and every tail sum of the module docstring (a = e^-eps rational)."""
    m = len(C)
    b = [sum(C[k][y] * a ** abs(k - y) for y in range(m)) for k in range(m)]
    one = 1 - a * a
    nu = [((1 + a * a) * b[y] - a * (b[y - 1] if y > 0 else 0) - a * (b[y + 1] if y < m - 1 else 0)) / one for y in range(m)]
    nu[0] = (b[0] - a * b[1]) / one
    nu[-1] = (b[-1] - a * b[-2]) / one
    tails = []
    for k in range(m):
        d = [C[k][y] - nu[y] for y in range(m)]
        assert sum(d[y] * a ** abs(k - y) for y in range(m)) == 0  # complementary slackness, exactly
        tails += [sum(a ** (z - y) * d[z] for z in range(y, m)) for y in range(k + 1, m)]
        tails += [sum(a ** (y - z) * d[z] for z in range(0, y + 1)) for y in range(0, k)]
    return nu, b, tails


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.05, 0.05)])
def test_certificate_in_exact_rational_arithmetic(prior):
    # eps = ln 2 makes a = 1/2 rational; the losses are the double-precision values, read as exact rationals
    n, a = 7, Fraction(1, 2)
    eps = math.log(2.0)
    L, w = pr.binary_loss_matrix(n, prior), pr.beta_binomial_data_prior(n, prior)
    C = [[Fraction(float(w[y])) * Fraction(float(L[y, k])) for y in range(n + 1)] for k in range(n + 1)]
    nu, b, tails = _exact_tails(C, a)
    cert = pg.binary_geometric_certificate(n, eps, prior)
    assert (min(tails) >= 0) is cert.optimal
    if cert.optimal:
        c = [1 / (1 + a)] + [(1 - a) / (1 + a)] * (n - 1) + [1 / (1 + a)]
        assert sum(nu) == sum(ck * bk for ck, bk in zip(c, b))  # zero duality gap, exactly
        assert float(sum(nu)) == pytest.approx(cert.primal_risk, rel=1e-12)


def test_certificate_in_exact_arithmetic_detects_a_suboptimal_geometric_mechanism():
    n, a = 7, Fraction(9, 10)  # eps = ln(10/9), far below eps*(7)
    eps = math.log(10 / 9)
    L, w = pr.binary_loss_matrix(n, (1.0, 1.0)), pr.uniform_data_prior(n)
    C = [[Fraction(float(w[y])) * Fraction(float(L[y, k])) for y in range(n + 1)] for k in range(n + 1)]
    _, _, tails = _exact_tails(C, a)
    assert min(tails) < 0
    assert not pg.binary_geometric_certificate(n, eps).optimal


def test_validation():
    L, w = pr.binary_loss_matrix(5, (1.0, 1.0)), pr.uniform_data_prior(5)
    with pytest.raises(ValueError, match="L must"):
        pg.geometric_certificate(L[:, :3], w, 1.0)
    with pytest.raises(ValueError, match="pi must"):
        pg.geometric_certificate(L, w * 2, 1.0)
    with pytest.raises(ValueError, match="eps"):
        pg.geometric_certificate(L, w, -1.0)
    with pytest.raises(ValueError, match="eps_range"):
        pg.geometric_threshold(L, w, (1.0, 0.5))
    with pytest.raises(ValueError, match="n"):
        pg.binary_geometric_threshold(0)


def test_small_parameter_priors_raise_the_threshold_and_can_favour_the_floor():
    # the page's finding: under Beta(0.02, 3) the geometric mechanism stops being optimal well above the uniform
    # prior's threshold, and at eps = 3 (still below it) the floored LSHist beats it on the averaged error
    n = 50
    uniform = pg.binary_geometric_threshold(n, (1.0, 1.0)).eps_star
    skewed = pg.binary_geometric_threshold(n, (0.02, 3.0))
    assert skewed.sign_changes >= 1 and skewed.eps_star > 3 * uniform
    w = pr.beta_binomial_data_prior(n, (0.02, 3.0))
    flo, geo = (w @ _risks(m, n, 3.0, (0.02, 3.0)) for m in ("LSHist", "Geometric"))
    assert flo < geo
    assert not pg.binary_geometric_certificate(n, 3.0, (0.02, 3.0)).optimal


def test_threshold_with_a_tolerance_ignores_data_sets_of_negligible_mass():
    # Beta(50, 5), n = 50: the exact root sits near 4.2, set by data sets the prior almost excludes;
    # the relative excess over the optimum is already about 1e-6 at eps = 1.4
    n, prior = 50, (50.0, 5.0)
    L, w = pr.binary_loss_matrix(n, prior), pr.beta_binomial_data_prior(n, prior)
    exact = pg.geometric_threshold(L, w, rtol=0.0)
    tol = pg.geometric_threshold(L, w)
    assert tol.rtol == 1e-6 and exact.eps_star == exact.eps_star_exact == tol.eps_star_exact
    assert exact.eps_star > 4.0 and 1.3 < tol.eps_star < 1.6
    assert pg.relative_excess(L, w, tol.eps_star) == pytest.approx(1e-6, rel=1e-6)
    assert pg.relative_excess(L, w, 1.0) > 1e-2 and pg.relative_excess(L, w, 2.0) < 1e-12
    # the excess against the LP optimum, at a point below the exact root
    lp = pr.optimal_release_lp(n, 1.0, prior, data_prior=w)
    geo = float(w @ _risks("Geometric", n, 1.0, prior))
    assert pg.relative_excess(L, w, 1.0) == pytest.approx(geo / lp.value - 1, rel=1e-4)
    # where the certificate holds the excess is 0
    assert pg.relative_excess(L, w, exact.eps_star_exact * 1.01) == 0.0
    with pytest.raises(ValueError, match="rtol"):
        pg.geometric_threshold(L, w, rtol=-1.0)


def test_threshold_tolerance_barely_moves_the_uniform_prior():
    n = 20
    th = pg.binary_geometric_threshold(n, (1.0, 1.0))
    assert th.eps_star <= th.eps_star_exact < th.eps_star * 1.05


@pytest.mark.parametrize("n, prior", [(1, (1.0, 1.0)), (7, (0.05, 0.05)), (300, (0.02, 3.0)), (1200, (1.0, 1.0))])
def test_excess_by_recursions_equals_the_matrix_product(n, prior):
    # _excess sums G C^T by two recursions; the optimum it divides by is the same as through the dense
    # matrix product G (w L) with G the truncated geometric matrix
    from dpbayes.core.geometric import truncated_geometric_logmatrix

    L, w = pr.binary_loss_matrix(n, prior), pr.beta_binomial_data_prior(n, prior)
    for eps in (0.01, 0.5, 3.0, 12.0):
        G = np.exp(truncated_geometric_logmatrix(n, eps))
        best = float((G @ (w[:, None] * L)).min(axis=1).sum())
        primal = float(w @ (G * L.T).sum(axis=0))  # the geometric mechanism's own averaged loss
        expected = max(primal / best - 1.0, 0.0)
        got = pg._excess((w[:, None] * L).T, eps, primal, -1.0)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-13), (n, eps)
