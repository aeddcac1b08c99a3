"""Hellinger distances between Betas/Dirichlets: closed form against integration and exact identities."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.core.distances import hellinger_beta, hellinger_dirichlet, log_gamma_second_difference


def _hellinger_by_quadrature(a1, b1, a2, b2):
    def root_product(t):
        return np.exp(0.5 * (stats.beta.logpdf(t, a1, b1) + stats.beta.logpdf(t, a2, b2)))

    bc, _ = integrate.quad(root_product, 0.0, 1.0, epsabs=1e-14, epsrel=1e-13, limit=400)
    return math.sqrt(max(1.0 - bc, 0.0))


def test_matches_numerical_integration_on_random_pairs():
    rng = np.random.default_rng(20260523)
    # Parameters >= 1 keep the densities bounded, so quad reaches 1e-13 and the comparison is meaningful.
    params = rng.uniform(1.0, 60.0, size=(25, 4))
    for a1, b1, a2, b2 in params:
        assert hellinger_beta(a1, b1, a2, b2) == pytest.approx(_hellinger_by_quadrature(a1, b1, a2, b2), abs=1e-8)


def test_known_value_and_metric_properties():
    # H(Beta(2,1), Beta(1,2))^2 = 1 - B(3/2, 3/2)/B(2,1) = 1 - pi/4
    assert hellinger_beta(2, 1, 1, 2) == pytest.approx(math.sqrt(1 - math.pi / 4), abs=1e-15)
    assert hellinger_beta(3.5, 7.0, 3.5, 7.0) == 0.0
    a, b = np.array([2.0, 5.0, 1.5]), np.array([4.0, 1.0, 3.0])
    assert hellinger_dirichlet(a, b) == hellinger_dirichlet(b, a)
    c = np.array([1.0, 9.0, 2.0])
    assert hellinger_dirichlet(a, c) <= hellinger_dirichlet(a, b) + hellinger_dirichlet(b, c)
    assert 0.0 < hellinger_dirichlet(a, b) < 1.0


def test_beta_is_two_category_dirichlet():
    assert hellinger_beta(2.5, 4.0, 7.0, 1.5) == hellinger_dirichlet([2.5, 4.0], [7.0, 1.5])


@pytest.mark.parametrize("m", [3.0, 50.0, 1e3, 1e5, 1e6, 3e6])
def test_second_difference_against_exact_identities(m):
    # lnG(m+1) + lnG(m-1) - 2 lnG(m) = ln(m/(m-1)); with d = 2 it is ln(m(m+1)/((m-1)(m-2))).
    assert log_gamma_second_difference(m, 1.0) == pytest.approx(-0.5 * math.log1p(-1.0 / m), rel=1e-13)
    exact2 = 0.5 * (math.log1p(1.0 / m) - math.log1p(-1.0 / m) - math.log1p(-2.0 / m))
    assert log_gamma_second_difference(m, 2.0) == pytest.approx(exact2, rel=1e-12)


def _reference_hellinger_neighbours(a, b):
    """H(Beta(a+1, b), Beta(a, b+1)) to ~30 digits, independently of the library.

    BC = R(a) R(b) with R(z) = Gamma(z + 1/2) / (Gamma(z) sqrt(z)), and for large z
    ln R(z) = -1/(8z) + 1/(192 z^3) - 1/(640 z^5) + 17/(14336 z^7) - ... (Stirling series with Bernoulli
    polynomials at 1/2); evaluated in 50-digit decimal arithmetic.
    """
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 50

        def log_r(z):
            z = Decimal(z)
            return -1 / (8 * z) + 1 / (192 * z**3) - 1 / (640 * z**5) + Decimal(17) / (14336 * z**7)

        return float((1 - (log_r(a) + log_r(b)).exp()).sqrt())


@pytest.mark.parametrize("a, b", [(1e3, 2.5e3), (1e4, 7e3), (3e5 + 0.5, 7e5 + 0.25), (1e6, 1e6), (2.5e6, 1e4)])
def test_accurate_for_counts_up_to_a_million(a, b):
    # The plain betaln formula is off by ~1e-3 relative at 1e6; the library must stay at rounding level.
    assert hellinger_beta(a + 1, b, a, b + 1) == pytest.approx(_reference_hellinger_neighbours(a, b), rel=1e-12)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="a1 must be > 0"):
        hellinger_beta(0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="same number of categories"):
        hellinger_dirichlet([1.0, 2.0], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("a1, b1, a2, b2", [(3.0, 5.0, 4.0, 4.0), (1.05, 50.05, 2.05, 49.05), (0.02, 3.0, 1.02, 2.0), (40.5, 60.5, 45.5, 55.5)])
def test_total_variation_and_kl_against_quadrature(a1, b1, a2, b2):
    from scipy import integrate, stats

    from dpbayes.core.distances import kl_beta, total_variation_beta

    p, q = stats.beta(a1, b1), stats.beta(a2, b2)
    tv = integrate.quad(lambda t: abs(p.pdf(t) - q.pdf(t)) / 2, 0, 1, limit=400, points=[1e-3, 0.01, 0.1, 0.5])[0]
    assert total_variation_beta(a1, b1, a2, b2) == pytest.approx(tv, rel=1e-6)
    kl = integrate.quad(lambda t: p.pdf(t) * (p.logpdf(t) - q.logpdf(t)), 0, 1, limit=400, points=[1e-3, 0.01, 0.1, 0.5])[0]
    assert kl_beta(a1, b1, a2, b2) == pytest.approx(kl, rel=1e-6)
    assert total_variation_beta(a1, b1, a1, b1) == 0.0 and kl_beta(a1, b1, a1, b1) == 0.0
    # TV is symmetric, KL is not
    assert total_variation_beta(a2, b2, a1, b1) == pytest.approx(total_variation_beta(a1, b1, a2, b2), rel=1e-10)


def test_total_variation_needs_equal_sums():
    from dpbayes.core.distances import kl_beta, total_variation_beta

    with pytest.raises(ValueError, match="a1 \\+ b1 must equal"):
        total_variation_beta(1.0, 2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="b2 must be > 0"):
        kl_beta(1.0, 1.0, 1.0, 0.0)
