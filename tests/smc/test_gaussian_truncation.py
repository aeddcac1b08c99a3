"""Truncate-then-Gaussian releases: privacy calibration, exact likelihood, Fisher information, interval search."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.smc import gaussian_truncation as gt
from dpbayes.smc import truncation as tr

CASES = [  # (mu, sigma, l, r, kappa)
    (0.0, 1.0, -1.0, 1.0, 1.0),
    (0.3, 2.0, -0.5, 2.0, 0.2),
    (50.0, np.sqrt(10.0), 45.0, 55.0, 0.05),
    (0.0, 1.0, -0.06, 0.06, 4.2),
    (3.0, 0.5, -1.0, 1.0, 2.0),
]


def hockey_stick(x: float, x_prime: float, sd: float, eps: float) -> float:
    """``int max(0, p(y) - e^eps p'(y)) dy`` for two normal release densities, by adaptive quadrature."""
    def excess(y: float) -> float:
        return max(0.0, stats.norm.pdf(y, x, sd) - np.exp(eps) * stats.norm.pdf(y, x_prime, sd))

    lo, hi = min(x, x_prime) - 40 * sd, max(x, x_prime) + 40 * sd
    return integrate.quad(excess, lo, hi, points=[x, x_prime], limit=500, epsabs=1e-15, epsrel=1e-10)[0]


# --------------------------------------------------------------------------------------------
# privacy
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kappa", "eps"), [(0.5, 1.0), (1.0, 0.5), (3.7, 1.0), (0.3, 5.0), (2.0, 0.1)])
def test_privacy_profile_is_the_hockey_stick_divergence(kappa: float, eps: float) -> None:
    assert gt.gaussian_mechanism_delta(kappa, eps) == pytest.approx(hockey_stick(0.0, 1.0, kappa, eps), rel=1e-7, abs=1e-15)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-3), (1.0, 1e-5), (1.0, 1e-6), (2.0, 1e-6), (5.0, 1e-6), (10.0, 1e-6), (10.0, 1e-12)])
def test_calibration_is_the_smallest_private_noise(eps: float, delta: float) -> None:
    kappa = gt.gaussian_noise_multiplier(eps, delta)
    assert gt.gaussian_mechanism_delta(kappa, eps) <= delta
    assert gt.gaussian_mechanism_delta(kappa, eps) == pytest.approx(delta, rel=1e-8)
    assert gt.gaussian_mechanism_delta(kappa * (1 - 1e-6), eps) > delta
    if eps < 1:  # the classical calibration (valid for eps < 1) adds more noise than needed
        assert kappa < np.sqrt(2 * np.log(1.25 / delta)) / eps


def test_a_release_is_eps_delta_private_for_every_pair_of_inputs() -> None:
    # the clamped values of any two individuals differ by at most r - l; the worst pair is (l, r)
    l, r, eps, delta = -0.5, 1.5, 1.0, 1e-6
    kappa = gt.gaussian_noise_multiplier(eps, delta)
    sd = kappa * (r - l)
    xs = [-3.0, l, 0.0, 0.7, r, 4.0]
    worst = max(hockey_stick(*np.clip([x, xp], l, r), sd, eps) for x in xs for xp in xs)
    assert worst <= delta * (1 + 1e-6)
    assert worst == pytest.approx(delta, rel=1e-5)  # attained by x = l, x' = r
    # the same mechanism with the author's kind of slip (sd divided by sqrt 2) is not
    assert hockey_stick(l, r, sd / np.sqrt(2), eps) > 10 * delta


# --------------------------------------------------------------------------------------------
# likelihood
# --------------------------------------------------------------------------------------------
def brute_force_density(y: float, mu: float, sigma: float, l: float, r: float, kappa: float) -> float:
    """``p(y) = E[phi_s(y - clamp(X))]`` by adaptive quadrature over ``x`` (independent of the closed form)."""
    sd = kappa * (r - l)
    atoms = stats.norm.cdf(l, mu, sigma) * stats.norm.pdf(y, l, sd) + stats.norm.sf(r, mu, sigma) * stats.norm.pdf(y, r, sd)
    cont = integrate.quad(lambda x: stats.norm.pdf(x, mu, sigma) * stats.norm.pdf(y, x, sd), l, r, limit=200,
                          epsabs=1e-300, epsrel=1e-11)[0]
    return atoms + cont


@pytest.mark.parametrize("case", CASES)
def test_loglik_matches_brute_force_convolution(case: tuple) -> None:
    mu, sigma, l, r, kappa = case
    sd = kappa * (r - l)
    for y in [l - 3 * sd, l, 0.5 * (l + r), l + 0.9 * (r - l), r, r + 5 * sd]:
        exact = gt.loglik_privatised_normal_gaussian(y, mu, sigma, l, r, kappa)
        assert exact == pytest.approx(np.log(brute_force_density(y, mu, sigma, l, r, kappa)), abs=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_density_integrates_to_one(case: tuple) -> None:
    mu, sigma, l, r, kappa = case
    sd = kappa * (r - l)

    def density(y: float) -> float:
        return float(np.exp(gt.loglik_privatised_normal_gaussian(y, mu, sigma, l, r, kappa)))

    total = integrate.quad(density, min(l, mu - 12 * sigma) - 30 * sd, max(r, mu + 12 * sigma) + 30 * sd,
                           points=[l, r], limit=500)[0]
    assert total == pytest.approx(1.0, abs=1e-8)


def test_loglik_is_finite_far_out_and_matches_the_samplers_histogram() -> None:
    far = gt.loglik_privatised_normal_gaussian([-1e3, 1e3], 0.0, 1.0, -1.0, 1.0, 0.5)
    assert np.all(np.isfinite(far))
    # far out: the blurred atom at r = 1 (noise sd 1), plus the normal mass just below r, which adds
    # about phi(1) sd^2 / ((y - r) Phi(-1)) relative (Laplace's method), up to O(1/(y - r)^2)
    atom = stats.norm.logcdf(-1.0) + stats.norm.logpdf(1e3 - 1.0)
    assert far[1] - atom == pytest.approx(np.log1p(stats.norm.pdf(1.0) / (999.0 * stats.norm.cdf(-1.0))), abs=1e-5)
    mu, sigma, l, r, kappa = 0.3, 2.0, -0.5, 2.0, 0.2
    rng = np.random.default_rng(7)
    y = gt.sample_privatised_gaussian(rng.normal(mu, sigma, 400_000), l, r, kappa, rng)
    edges = np.linspace(-2.0, 3.5, 23)
    counts, _ = np.histogram(y, edges)
    nodes, weights = np.polynomial.legendre.leggauss(30)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
    dens = np.exp(gt.loglik_privatised_normal_gaussian(mid[:, None] + half[:, None] * nodes, mu, sigma, l, r, kappa))
    expected = y.size * (dens * weights).sum(axis=1) * half
    z = (counts - expected) / np.sqrt(expected)
    assert np.max(np.abs(z)) < 4.5


# --------------------------------------------------------------------------------------------
# Fisher information
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_fisher_information_is_independent_of_the_panels(case: tuple) -> None:
    mu, sigma, l, r, kappa = case
    coarse = gt._fisher_exact(mu, sigma, l, r, kappa)
    fine = gt._fisher_exact(mu, sigma, l, r, kappa, panel_width=0.1)
    # the finite-difference score limits the accuracy where the information is tiny (case 4: ~1e-10)
    np.testing.assert_allclose(coarse, fine, rtol=1e-6, atol=1e-8 * np.max(np.abs(fine)))


def test_fisher_information_matches_adaptive_quadrature_and_monte_carlo() -> None:
    mu, sigma, l, r, kappa = 0.0, 1.0, -0.5, 0.5, 3.7
    F = gt.fisher_information_normal_gaussian(mu, sigma, l, r, kappa)
    h = 1e-5

    def score_mu(y: np.ndarray) -> np.ndarray:
        return (gt.loglik_privatised_normal_gaussian(y, mu + h, sigma, l, r, kappa)
                - gt.loglik_privatised_normal_gaussian(y, mu - h, sigma, l, r, kappa)) / (2 * h)

    sd = kappa * (r - l)
    quad = integrate.quad(lambda y: float(np.exp(gt.loglik_privatised_normal_gaussian(y, mu, sigma, l, r, kappa))
                                          * score_mu(np.array(y)) ** 2), l - 15 * sd, r + 15 * sd, limit=500)[0]
    assert F[0, 0] == pytest.approx(quad, rel=1e-7)
    rng = np.random.default_rng(3)
    y = gt.sample_privatised_gaussian(rng.normal(mu, sigma, 200_000), l, r, kappa, rng)
    s2 = score_mu(y) ** 2
    assert abs(s2.mean() - F[0, 0]) < 4 * s2.std() / np.sqrt(y.size)
    assert F[0, 1] == pytest.approx(0.0, abs=1e-10)  # symmetric interval around the mean


def test_theorem3_location_scale_reduction() -> None:
    a, b, kappa = -0.4, 0.9, 1.3
    base = gt.fisher_information_gaussian(a, b, kappa)
    for m, c in [(50.0, np.sqrt(10.0)), (-3.0, 0.2)]:
        scaled = gt.fisher_information_normal_gaussian(m, c, m + a * c, m + b * c, kappa) * c**2
        np.testing.assert_allclose(scaled, base, rtol=1e-7, atol=1e-9 * np.max(np.abs(base)))


def test_little_noise_gives_the_laplace_limit() -> None:
    # as the noise vanishes both mechanisms release the clamped value: the same information
    a, b = -0.8, 1.1
    gauss = gt.fisher_information_gaussian(a, b, 1e-4)
    laplace = tr.fisher_information(a, b, 1e4)
    np.testing.assert_allclose(gauss, laplace, rtol=2e-3, atol=2e-3 * np.max(np.abs(laplace)))


def test_best_interval_is_a_local_maximum_off_the_grid() -> None:
    kappa = gt.gaussian_noise_multiplier(2.0, 1e-6)
    for score in ("paper", "harmonic"):
        b, value = gt.best_interval_gaussian(kappa, score)
        grid = np.geomspace(0.005, 4.0, 300)
        assert not np.any(np.isclose(b, grid, rtol=1e-6, atol=0))
        scores = tr.fisher_score(gt.fisher_information_gaussian(-grid, grid, kappa), score)
        assert value >= scores.max()
        for step in (0.99, 1.01):
            assert tr.fisher_score(gt.fisher_information_gaussian(-b * step, b * step, kappa), score) < value


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "message"), [
    (lambda: gt.gaussian_noise_multiplier(0.0, 1e-6), "eps"),
    (lambda: gt.gaussian_noise_multiplier(1.0, 0.0), r"delta must lie in \(0.0, 1.0\)"),
    (lambda: gt.gaussian_noise_multiplier(1.0, 1.0), "delta"),
    (lambda: gt.gaussian_noise_multiplier([1.0, 2.0], 1e-6), "eps must be a scalar"),
    (lambda: gt.gaussian_mechanism_delta(-1.0, 1.0), "noise_multiplier"),
    (lambda: gt.gaussian_mechanism_delta(1.0, -0.5), "eps"),
    (lambda: gt.loglik_privatised_normal_gaussian(0.0, 0.0, 1.0, 1.0, 1.0, 1.0), "r > l"),
    (lambda: gt.loglik_privatised_normal_gaussian(0.0, 0.0, 0.0, -1.0, 1.0, 1.0), "sigma"),
    (lambda: gt.loglik_privatised_normal_gaussian("a", 0.0, 1.0, -1.0, 1.0, 1.0), "y must be a real number"),
    (lambda: gt.fisher_information_gaussian(-1.0, 1.0, 0.0), "noise_multiplier"),
    (lambda: gt.best_interval_gaussian(1.0, "median"), "score"),
    (lambda: gt.best_interval_gaussian(1.0, grid=[-0.5, 0.5]), "grid"),
    (lambda: gt.sample_privatised_gaussian(0.0, -1.0, 1.0, 1.0, rng=1), "rng"),
])
def test_bad_input_fails_naming_the_parameter(call, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        call()
