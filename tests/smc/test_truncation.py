"""Truncate-then-Laplace observations: sampler, exact likelihood, Fisher information, interval search."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.smc import truncation as tr

CASES = [  # (mu, sigma, l, r, eps)
    (0.0, 1.0, -1.0, 1.0, 1.0),
    (0.3, 2.0, -0.5, 2.0, 5.0),
    (50.0, np.sqrt(10.0), 45.0, 55.0, 10.0),
    (0.0, 1.0, -0.06, 0.06, 1.0),
    (3.0, 0.5, -1.0, 1.0, 2.0),
]


def brute_force_density(y, mu, sigma, l, r, eps):
    """p(y) = E[Laplace(y - clamp(X))] by adaptive quadrature over x (independent of the closed form)."""
    beta = (r - l) / eps

    def lap(v):
        return np.exp(-abs(v) / beta) / (2 * beta)

    atoms = stats.norm.cdf(l, mu, sigma) * lap(y - l) + stats.norm.sf(r, mu, sigma) * lap(y - r)
    pts = [y] if l < y < r else None
    cont = integrate.quad(lambda x: stats.norm.pdf(x, mu, sigma) * lap(y - x), l, r, points=pts, limit=200)[0]
    return atoms + cont


@pytest.mark.parametrize("case", CASES)
def test_loglik_matches_brute_force_convolution(case):
    mu, sigma, l, r, eps = case
    for y in [l - 3.0, l, 0.5 * (l + r) - 0.01, 0.5 * (l + r), l + 0.9 * (r - l), r, r + 2.0]:
        exact = tr.loglik_privatised_normal(y, mu, sigma, l, r, eps)
        assert exact == pytest.approx(np.log(brute_force_density(y, mu, sigma, l, r, eps)), abs=1e-9)


@pytest.mark.parametrize("case", CASES + [(0.0, 1.0, -1e-3, 1e-3, 1.0), (40.0, 1.0, -1.0, 1.0, 3.0)])
def test_density_integrates_to_one(case):
    mu, sigma, l, r, eps = case
    beta = (r - l) / eps

    def density(y):
        return float(np.exp(tr.loglik_privatised_normal(y, mu, sigma, l, r, eps)))

    segments = [(l - 60 * beta, l), (l, r), (r, r + 60 * beta)]
    total = sum(integrate.quad(density, lo, hi, limit=200)[0] for lo, hi in segments)
    assert total == pytest.approx(1.0, abs=1e-8)


def _bin_probabilities(edges, mu, sigma, l, r, eps):
    """Exact bin probabilities of Y (Gauss-Legendre per bin; bins are split at the kinks l, r)."""
    nodes, weights = np.polynomial.legendre.leggauss(40)
    lo, hi = edges[:-1], edges[1:]
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    y = mid[:, None] + half[:, None] * nodes[None, :]
    dens = np.exp(tr.loglik_privatised_normal(y, mu, sigma, l, r, eps))
    return (dens * weights[None, :]).sum(axis=1) * half


@pytest.mark.parametrize("noise_factor, should_pass", [(1.0, True), (1 / np.sqrt(2), False)])
def test_density_matches_a_million_samples(noise_factor, should_pass):
    # The same chi-square check rejects samples drawn with the author's mis-scaled noise,
    # so the test has power against exactly the discrepancy discussed in the chapter.
    mu, sigma, l, r, eps = 0.2, 1.0, -0.8, 0.8, 2.0
    rng = np.random.default_rng(20240207)
    x = rng.normal(mu, sigma, 1_000_000)
    if noise_factor == 1.0:
        y = tr.sample_privatised(x, l, r, eps, rng)
    else:
        y = np.clip(x, l, r) + noise_factor * (r - l) / eps * rng.laplace(0.0, 1.0, x.size)
    beta = (r - l) / eps
    inner = np.linspace(l - 4 * beta, r + 4 * beta, 61)
    inner = np.union1d(inner, [l, r])
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    counts = np.histogram(y, bins=edges)[0]
    probs = _bin_probabilities(inner, mu, sigma, l, r, eps)
    # the two infinite end bins from the exact exponential tails: P(Y < t) = beta p(t) for t <= l
    p_left = beta * np.exp(tr.loglik_privatised_normal(inner[0], mu, sigma, l, r, eps))
    p_right = beta * np.exp(tr.loglik_privatised_normal(inner[-1], mu, sigma, l, r, eps))
    probs = np.concatenate([[p_left], probs, [p_right]])
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    chi2, pvalue = stats.chisquare(counts, probs * x.size)
    assert (pvalue > 1e-3) == should_pass, (chi2, pvalue)


def test_loglik_is_stable_and_log_linear_in_the_tails():
    mu, sigma, l, r, eps = 0.0, 1.0, -1e-7, 1e-7, 10.0
    beta = (r - l) / eps
    y = np.array([-1e6, -1.0, l, r, 1.0, 1e6])
    ll = tr.loglik_privatised_normal(y, mu, sigma, l, r, eps)
    assert np.all(np.isfinite(ll))
    # outside [l, r] the density is exactly p(edge) exp(-distance / beta)
    assert ll[1] - ll[2] == pytest.approx(-(l - y[1]) / beta, rel=1e-12)
    assert ll[4] - ll[3] == pytest.approx(-(y[4] - r) / beta, rel=1e-12)
    # particles far from the interval, and very small sigma
    far = tr.loglik_privatised_normal(0.0, np.array([-1e4, 1e4, 0.0]), 1.0, -1.0, 1.0, 1.0)
    assert np.all(np.isfinite(far)) and far[0] == pytest.approx(far[1])
    tiny_sigma = tr.loglik_privatised_normal(0.5, 0.0, 1e-9, -1.0, 1.0, 100.0)
    beta = 2.0 / 100.0
    assert tiny_sigma == pytest.approx(-np.log(2 * beta) - 0.5 / beta, abs=1e-6)


def test_loglik_broadcasts_over_particles():
    rng = np.random.default_rng(0)
    mu = rng.normal(50, 3, 7)
    sigma = rng.uniform(1, 5, 7)
    out = tr.loglik_privatised_normal(51.0, mu, sigma, 40.0, 60.0, 2.0)
    assert out.shape == (7,)
    grid = tr.loglik_privatised_normal(np.array([40.0, 51.0, 70.0]), mu[:, None], sigma[:, None], 40.0, 60.0, 2.0)
    assert grid.shape == (7, 3)
    assert np.allclose(grid[:, 1], out)
    per_obs = tr.loglik_privatised_normal(
        np.array([1.0, 2.0]), 0.0, 1.0, np.array([0.0, -1.0]), np.array([1.5, 3.0]), 1.0
    )
    assert per_obs.shape == (2,)


def test_score_matches_fishers_identity():
    # grad log p(y) = E[grad log N(X; mu, sigma) | Y = y], computed by quadrature over x
    mu, sigma, l, r, eps = 0.4, 1.5, -0.5, 1.0, 3.0
    beta = (r - l) / eps
    for y in [-2.0, 0.1, 0.7, 2.5]:
        def post(x, h):
            return stats.norm.pdf(x, mu, sigma) * np.exp(-abs(y - np.clip(x, l, r)) / beta) * h(x)

        grads = [lambda x: 1.0, lambda x: (x - mu) / sigma**2, lambda x: (x - mu) ** 2 / sigma**3 - 1 / sigma]
        pieces = [(-np.inf, l), (l, r), (r, np.inf)]
        m = [sum(integrate.quad(post, lo, hi, args=(g,), limit=200)[0] for lo, hi in pieces) for g in grads]
        expected = np.array(m[1:]) / m[0]
        assert np.allclose(tr.score_privatised_normal(y, mu, sigma, l, r, eps), expected, atol=1e-7)


def test_exact_fisher_quadrature_against_adaptive_quadrature():
    mu, sigma, l, r, eps = 0.0, 1.0, -0.7, 1.1, 4.0
    F = tr.fisher_information_normal(mu, sigma, l, r, eps)

    def integrand(y, i, j):
        s = tr.score_privatised_normal(y, mu, sigma, l, r, eps)
        return s[i] * s[j] * np.exp(tr.loglik_privatised_normal(y, mu, sigma, l, r, eps))

    beta = (r - l) / eps
    pieces = [(l - 50 * beta, l), (l, r), (r, r + 50 * beta)]
    for i, j in [(0, 0), (0, 1), (1, 1)]:
        ref = sum(integrate.quad(integrand, lo, hi, args=(i, j), limit=200)[0] for lo, hi in pieces)
        assert F[i, j] == pytest.approx(ref, rel=1e-8, abs=1e-12)
    assert np.allclose(F, F.T)
    assert np.all(np.linalg.eigvalsh(F) > 0)


def test_fisher_location_scale_theorem_3():
    a, b, eps = -0.4, 1.3, 5.0
    base = tr.fisher_information(a, b, eps)
    for m, c in [(50.0, np.sqrt(10.0)), (-3.0, 0.2)]:
        F = tr.fisher_information_normal(m, c, m + a * c, m + b * c, eps)
        assert np.allclose(F, base / c**2, rtol=1e-7, atol=1e-12)


def test_fisher_limits():
    # symmetric interval at mu = 0: no information shared between mu and sigma
    F = tr.fisher_information(-0.5, 0.5, 2.0)
    assert abs(F[0, 1]) < 1e-10
    # zero-width limit: the release is a noisy sign of X, information about sigma vanishes
    F0 = tr.fisher_information(-1e-6, 1e-6, 2.0)
    assert F0[1, 1] < 1e-9 and 0 < F0[0, 0] < 2 / np.pi
    # no truncation, no noise: the N(0, 1) information diag(1, 2)
    F_wide = tr.fisher_information(-12.0, 12.0, 1e6)
    assert np.allclose(F_wide, np.diag([1.0, 2.0]), atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "a, b, eps, factor", [(-0.06, 0.06, 1.0, 1.0), (-0.7, 0.7, 5.0, 1.0), (-0.5, 1.5, 10.0, 1 / np.sqrt(2))]
)
def test_exact_and_mc_fisher_agree_within_mc_error(a, b, eps, factor):
    rng = np.random.default_rng(7)
    F_mc, se, is_bias = tr.fisher_information_mc(a, b, eps, rng, n_obs=20000, n_is=2000, noise_scale_factor=factor)
    F = tr.fisher_information(a, b, eps, noise_scale_factor=factor)
    z = (F_mc - is_bias - F) / se
    assert np.all(np.abs(z) < 4.5), z
    assert np.all(is_bias.diagonal() > 0)


def test_mc_method_dispatch_and_bias_visible():
    rng = np.random.default_rng(3)
    F = tr.fisher_information(-1.0, 1.0, 10.0, method="mc", rng=rng, n_obs=400, n_is=500)
    assert F.shape == (2, 2) and np.allclose(F, F.T)
    with pytest.raises(ValueError, match="rng must be"):
        tr.fisher_information(-1.0, 1.0, 10.0, method="mc")


def test_sampler_noise_scale_and_privacy():
    rng = np.random.default_rng(11)
    x = rng.normal(0.0, 3.0, 200_000)
    l, r, eps = -1.0, 2.0, 0.5
    y = tr.sample_privatised(x, l, r, eps, rng)
    noise = (y - np.clip(x, l, r)) / (r - l)
    assert stats.kstest(noise, stats.laplace(scale=1 / eps).cdf).pvalue > 1e-3
    # the author's scale (std instead of scale) is rejected by the same test
    assert stats.kstest(noise / np.sqrt(2), stats.laplace(scale=1 / eps).cdf).pvalue < 1e-6
    # exact privacy loss: sup over x, x', y of log p(y|x) - log p(y|x') equals eps
    xs = np.linspace(-5, 5, 201)
    ys = np.linspace(-10, 10, 401)
    logp = tr.log_density_privatised_given_x(ys[:, None], xs[None, :], l, r, eps)
    loss = logp.max(axis=1) - logp.min(axis=1)
    assert loss.max() <= eps + 1e-12
    assert loss.max() == pytest.approx(eps, abs=1e-12)


def test_sampler_broadcasts():
    rng = np.random.default_rng(0)
    y = tr.sample_privatised(np.zeros((3, 1)), np.array([-1.0, -2.0]), np.array([1.0, 2.0]), 1.0, rng)
    assert y.shape == (3, 2)


def test_scores_and_interval_search():
    F = np.array([[2.0, 0.0], [0.0, 2.0]])
    assert tr.fisher_score(F, "paper") == 2.0
    assert tr.fisher_score(F, "harmonic") == pytest.approx(1.0)
    a, b = tr.best_interval(5.0, "paper")
    assert b == -a and np.isclose(tr.PAPER_A_GRID, a).any()
    Fg, scores = tr.interval_scores(5.0, "paper")
    assert scores.shape == (50,) and scores.max() == pytest.approx(tr.fisher_score(tr.fisher_information(a, b, 5.0)))
    ar, br = tr.best_interval(5.0, "paper", refine=True)
    assert abs(ar - a) <= 0.06 + 1e-12
    assert tr.fisher_score(tr.fisher_information(ar, br, 5.0)) >= scores.max()
    a2, b2, value = tr.best_interval_asymmetric(5.0, "paper", grid=np.linspace(-3, 3, 21))
    assert value >= scores.max() - 1e-9 and a2 < b2


def test_mc_interval_search_uses_common_observations():
    rng = np.random.default_rng(5)
    a, b = tr.best_interval(2.0, "paper", "mc", grid=[-1.5, -0.3], rng=rng, n_obs=300, n_is=300)
    assert (a, b) in [(-1.5, 1.5), (-0.3, 0.3)]
    with pytest.raises(ValueError, match="refine=True needs method='exact'"):
        tr.best_interval(2.0, "paper", "mc", grid=[-1.5, -0.3], rng=rng, n_obs=300, n_is=300, refine=True)


def test_bad_input_is_rejected_before_computation():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="r > l"):
        tr.sample_privatised(0.0, 1.0, 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="eps must be > 0"):
        tr.sample_privatised(0.0, 0.0, 1.0, 0.0, rng)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        tr.sample_privatised(0.0, 0.0, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        tr.loglik_privatised_normal(0.0, 0.0, -1.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="y must be finite"):
        tr.loglik_privatised_normal(np.nan, 0.0, 1.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        tr.fisher_information(-1, 1, 1.0, method="quad")
    with pytest.raises(ValueError, match="score must be one of"):
        tr.best_interval(1.0, score="trace")
    with pytest.raises(ValueError, match="grid must hold values a < 0"):
        tr.interval_scores(1.0, grid=[-1.0, 0.0])


def test_fisher_information_normal_batches():
    l = np.array([-1.0, -0.5, 0.2])
    r = np.array([1.0, 1.5, 0.9])
    batch = tr.fisher_information_normal(0.1, 1.2, l, r, 3.0)
    assert batch.shape == (3, 2, 2)
    for i in range(3):
        assert np.allclose(batch[i], tr.fisher_information_normal(0.1, 1.2, l[i], r[i], 3.0), rtol=1e-9, atol=1e-13)


def _loglik_where_everywhere(y, mu, sigma, l, r, eps):
    """The former formulation: every branch evaluated everywhere and selected with np.where (reference)."""
    from scipy import special

    y, mu, sigma, l, r, eps = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (y, mu, sigma, l, r, eps)))
    s2 = np.sqrt(2.0)

    def log_ndtr(x):
        e = special.erfcx(np.abs(x) / s2)
        with np.errstate(over="ignore"):
            return np.where(x < 0, np.log(0.5 * e) - 0.5 * x * x, np.log1p(-0.5 * e * np.exp(-0.5 * x * x)))

    def log1mexp(x):
        x = np.minimum(x, 0.0)
        with np.errstate(divide="ignore"):
            return np.where(x > -np.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))

    def tilted(lo, hi, d, z):
        w_lo, w_hi = lo - z, hi - z
        le_lo = np.log(special.erfcx(np.abs(w_lo) / s2))
        le_hi = np.log(special.erfcx(np.abs(w_hi) / s2))
        spread = 0.5 * (hi - lo) * (hi + lo - 2.0 * z)
        lower = le_hi - np.log(2.0) - 0.5 * hi * hi - z * (d - hi) + log1mexp(le_lo - le_hi + spread)
        upper = le_lo - np.log(2.0) - 0.5 * lo * lo - z * (d - lo) + log1mexp(le_hi - le_lo - spread)
        straddle = np.log(0.5 * (special.erf(w_hi / s2) - special.erf(w_lo / s2))) + z * (0.5 * z - d)
        return np.where(w_hi <= 0, lower, np.where(w_lo >= 0, upper, straddle))

    beta = (r - l) / eps
    z = sigma / beta
    alpha, rho, d = (l - mu) / sigma, (r - mu) / sigma, (y - mu) / sigma
    dc = np.clip(d, alpha, rho)
    a_l = log_ndtr(alpha) - np.abs(y - l) / beta
    a_r = log_ndtr(-rho) - np.abs(y - r) / beta
    with np.errstate(divide="ignore", invalid="ignore"):
        below, above = tilted(alpha, dc, d, z), tilted(-rho, -dc, -d, z)
        top = np.maximum(np.maximum(a_l, a_r), np.maximum(below, above))
        total = np.exp(a_l - top) + np.exp(a_r - top) + np.exp(below - top) + np.exp(above - top)
    return top + np.log(total) - np.log(2.0 * beta)


@pytest.fixture
def numpy_path():
    """The NumPy path of the likelihood (the reference), also where numba is installed."""
    from dpbayes.smc import _kernels as _smc_kernels

    previous = _smc_kernels.use_compiled(False)
    yield
    _smc_kernels.use_compiled(previous)


LOGLIK_CASES = [(45.0, 55.0, 1.0), (49.999, 50.001, 1e3), (-1e3, 1e3, 1e-3), (60.0, 61.0, 10.0)]


@pytest.mark.parametrize("l,r,eps", LOGLIK_CASES)
def test_loglik_branches_only_where_they_apply_give_the_same_bits(l, r, eps, numpy_path):
    rng = np.random.default_rng(4)
    y = np.concatenate([np.linspace(-1e4, 1e4, 301), 50.0 + 8.0 * rng.standard_normal(300)])
    mu = np.array([[50.0], [0.0], [100.0], [49.0]])
    sigma = np.array([[3.0], [0.01], [100.0], [2.5]])
    got = tr._loglik(y[None, :], mu, sigma, np.asarray(l), np.asarray(r), np.asarray(eps))
    ref = _loglik_where_everywhere(y[None, :], mu, sigma, l, r, eps)
    assert got.shape == ref.shape == (4, y.size) and got.flags.writeable
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))
    # not a constant: the comparison can fail
    assert np.isfinite(got).all() and np.unique(got).size > got.size // 2
    # an argument that alone carries the shape (here sigma) still gives the broadcast shape, writeable
    one = tr._loglik(np.asarray(50.0), np.asarray(50.0), np.array([1.0, 2.0, 3.0]), np.asarray(l), np.asarray(r), np.asarray(eps))
    assert one.shape == (3,) and one.flags.writeable
    assert np.array_equal(one, _loglik_where_everywhere(50.0, 50.0, np.array([1.0, 2.0, 3.0]), l, r, eps))


@pytest.mark.parametrize("l,r,eps", LOGLIK_CASES)
def test_compiled_loglik_agrees_with_the_numpy_path(l, r, eps):
    """The compiled likelihood (optional extra 'fast') against the np.where reference: the same special
    functions (SciPy's C erf and erfcx), the C library's exp and log instead of NumPy's, so equal to a
    few units in the last place; the same -inf and nan, shape and writeable result."""
    from dpbayes.smc import _kernels as _smc_kernels

    if not _smc_kernels.HAVE_NUMBA:
        pytest.skip("numba not installed (optional extra 'fast')")
    rng = np.random.default_rng(5)
    y = np.concatenate([np.linspace(-1e4, 1e4, 301), 50.0 + 8.0 * rng.standard_normal(300), [l, r, 0.5 * (l + r)]])
    mu = np.array([[50.0], [0.0], [100.0], [49.0], [l], [r]])
    sigma = np.array([[3.0], [0.01], [100.0], [2.5], [1e-6], [1e4]])
    ref = _loglik_where_everywhere(y[None, :], mu, sigma, l, r, eps)
    got = _smc_kernels.loglik(y[None, :], mu, sigma, np.asarray(l), np.asarray(r), np.asarray(eps))
    assert got.shape == ref.shape and got.flags.writeable
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(got), finite) and np.array_equal(got[~finite], ref[~finite])
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-13, atol=0)
    assert np.mean(got[finite] == ref[finite]) > 0.9  # mostly the same bits
    # through the library's entry point with the compiled path on, and for scalars
    previous = _smc_kernels.use_compiled(True)
    try:
        np.testing.assert_allclose(tr.loglik_privatised_normal(y, 50.0, 3.0, l, r, eps), ref[0], rtol=1e-13)
        one = tr._loglik(np.asarray(50.0), np.asarray(50.0), np.asarray(2.0), np.asarray(l), np.asarray(r), np.asarray(eps))
        assert one.shape == () and one == pytest.approx(float(_loglik_where_everywhere(50.0, 50.0, 2.0, l, r, eps)), rel=1e-13)
    finally:
        _smc_kernels.use_compiled(previous)


def test_compiled_loglik_on_wide_random_arguments():
    from dpbayes.smc import _kernels as _smc_kernels

    if not _smc_kernels.HAVE_NUMBA:
        pytest.skip("numba not installed (optional extra 'fast')")
    rng = np.random.default_rng(6)
    n = 50_000
    mu = rng.normal(50, 100, n)
    sigma = np.exp(rng.normal(0, 3, n))
    l = mu + rng.normal(0, 5, n) * sigma
    r = l + np.exp(rng.normal(0, 3, n)) * sigma
    y = rng.normal(0.5 * (l + r), 3 * (r - l))
    eps = np.exp(rng.normal(0, 2, n))
    ref = _loglik_where_everywhere(y, mu, sigma, l, r, eps)
    got = _smc_kernels.loglik(y, mu, sigma, l, r, eps)
    assert np.isfinite(ref).all() and np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


def test_no_numba_environment_variable_selects_the_numpy_path(numpy_path):
    """``DPBAYES_NO_NUMBA=1`` (README) gives the NumPy reference path, bit for bit, in a new process."""
    import json
    import os
    import subprocess
    import sys

    code = ("import json, numpy as np; from dpbayes.smc import _kernels as _smc_kernels, truncation as tr; "
            "v = tr.loglik_privatised_normal(np.linspace(-50, 150, 41), 50.0, 3.0, 40.0, 60.0, 0.7); "
            "print(json.dumps([_smc_kernels.compiled_enabled(), v.view(np.int64).tolist()]))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DPBAYES_NO_NUMBA="1"),
                         capture_output=True, text=True, check=True).stdout
    enabled, bits = json.loads(out)
    ref = tr.loglik_privatised_normal(np.linspace(-50, 150, 41), 50.0, 3.0, 40.0, 60.0, 0.7)
    assert enabled is False and bits == ref.view(np.int64).tolist()
