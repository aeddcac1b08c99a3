"""Online SMC samplers (paper Algorithms 2-4 and the exact-likelihood SMC) against quadrature."""

import numpy as np
import pytest

from dpbayes.smc import mcmc, samplers as smc, truncation

EPS = 5.0
INTERVAL = (40.0, 60.0)


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(3)
    n = 30
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(n)
    noise = rng.laplace(size=n)
    # The releases are fixed by x, the interval and the noise, whatever the sampler's seed.
    ref = smc.smc_latent(x, EPS, np.random.default_rng(0), n_particles=10, fixed_interval=INTERVAL, noise=noise)
    grid = mcmc.grid_posterior(ref.y, ref.lower, ref.upper, EPS, np.linspace(40, 62, 221), np.linspace(0.05, 12, 240))
    return x, noise, ref, grid


def test_systematic_resample_counts():
    rng = np.random.default_rng(1)
    w = rng.random(50)
    w /= w.sum()
    idx = smc.systematic_resample(w, rng)
    counts = np.bincount(idx, minlength=50)
    # Systematic resampling: every count is floor or ceil of N w_i.
    assert np.all(counts >= np.floor(50 * w)) and np.all(counts <= np.ceil(50 * w))


def test_releases_are_truncated_laplace(small_problem):
    x, noise, ref, _ = small_problem
    expected = np.clip(x, *INTERVAL) + (INTERVAL[1] - INTERVAL[0]) * noise / EPS
    np.testing.assert_allclose(ref.y, expected)
    assert np.all(ref.lower == INTERVAL[0]) and np.all(ref.upper == INTERVAL[1])


def _run_means(sampler, x, noise, n_runs, **kw):
    means = np.array(
        [
            [(r := sampler(x, EPS, np.random.default_rng(100 + s), fixed_interval=INTERVAL, noise=noise, **kw)).mean_mu[-1], r.mean_sigma[-1]]
            for s in range(n_runs)
        ]
    )
    return means.mean(axis=0), means.std(axis=0, ddof=1) / np.sqrt(n_runs)


@pytest.mark.parametrize("sampler,n_particles", [(smc.smc_latent, 2000), (smc.smc_exact, 1000)])
def test_posterior_means_match_quadrature(small_problem, sampler, n_particles):
    x, noise, _, grid = small_problem
    mean, se = _run_means(sampler, x, noise, 6, n_particles=n_particles)
    target = np.array([grid.mean_mu, grid.mean_sigma])
    sd = np.array([grid.sd_mu, grid.sd_sigma])
    # Within Monte-Carlo error (4 standard errors over independent runs), and in any case within
    # 5 % of a posterior standard deviation (a wrong likelihood moves the means by far more).
    assert np.all(np.abs(mean - target) < np.maximum(4 * se, 0.05 * sd)), (mean, se, target, sd)
    assert np.all(np.abs(mean - target) < 0.1 * sd)


def _wide_grid_posterior(res, eps):
    # The likelihood is flat in mu far outside the intervals (every x clamped to the same end), so
    # the posterior has prior-shaped tails: the grid must reach far out (coarse) as well as resolve
    # the mode (fine).
    mu_grid = np.unique(np.concatenate([np.linspace(-400.0, 400.0, 201), np.linspace(35.0, 65.0, 161)]))
    grid = mcmc.grid_posterior(res.y, res.lower, res.upper, eps, mu_grid, np.geomspace(0.02, 60.0, 120))
    edges = grid.prob[0].sum() + grid.prob[-1].sum() + grid.prob[:, 0].sum() + grid.prob[:, -1].sum()
    assert edges < 1e-4
    return grid


@pytest.mark.parametrize("sampler,seed", [(smc.smc_latent, 7), (smc.smc_exact, 10)])
def test_adaptive_smc_matches_quadrature_of_its_own_releases(sampler, seed):
    rng = np.random.default_rng(seed)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(40)
    res = sampler(x, 2.0, rng, n_particles=4000, ab=(-0.12, 0.12), first_interval=(44.0, 56.0))
    assert res.lower[0] == 44.0 and res.upper[0] == 56.0
    grid = _wide_grid_posterior(res, 2.0)
    assert abs(res.mean_mu[-1] - grid.mean_mu) < 0.15 * grid.sd_mu
    assert abs(res.mean_sigma[-1] - grid.mean_sigma) < 0.15 * grid.sd_sigma


def test_adaptive_intervals_are_scaled_base_interval():
    rng = np.random.default_rng(2)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(25)
    ab = (-0.54, 0.54)
    for sampler in (smc.smc_latent, smc.smc_exact):
        res = sampler(x, 5.0, np.random.default_rng(4), n_particles=200, ab=ab)
        assert res.lower[0] == ab[0] and res.upper[0] == ab[1]  # standard normal's optimum at 0
        centre = 0.5 * (res.lower + res.upper)
        # Each later interval is [m + a c, m + b c] for one particle (m, c): symmetric about m,
        # width (b - a) c > 0.
        assert np.all(res.upper > res.lower)
        np.testing.assert_allclose(res.upper - centre, centre - res.lower)


def test_adaptive_protocol_is_eps_dp_per_individual():
    # The interval for individual k depends on earlier releases only: changing x_k (with the same
    # randomness) leaves l_{1:k}, r_{1:k} unchanged, and release k then has privacy loss
    # |log p(y|x_k) - log p(y|x_k')| <= eps (exact Laplace densities).
    rng = np.random.default_rng(5)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(20)
    k = 12
    x[k] = -1e6  # the two extremes: clamped to opposite ends of whatever interval is asked for
    x2 = x.copy()
    x2[k] = 1e6
    eps = 2.0
    a = smc.smc_latent(x, eps, np.random.default_rng(9), n_particles=100, ab=(-0.12, 0.12))
    b = smc.smc_latent(x2, eps, np.random.default_rng(9), n_particles=100, ab=(-0.12, 0.12))
    np.testing.assert_array_equal(a.lower[: k + 1], b.lower[: k + 1])
    np.testing.assert_array_equal(a.upper[: k + 1], b.upper[: k + 1])
    y_grid = np.linspace(a.lower[k] - 50, a.upper[k] + 50, 2001)
    loss = truncation.log_density_privatised_given_x(y_grid, x[k], a.lower[k], a.upper[k], eps) - truncation.log_density_privatised_given_x(
        y_grid, x2[k], a.lower[k], a.upper[k], eps
    )
    assert np.max(np.abs(loss)) <= eps + 1e-9
    assert np.max(np.abs(loss)) > 0.99 * eps  # the bound is attained


def test_bad_input_is_rejected():
    rng = np.random.default_rng(0)
    x = np.ones(5)
    with pytest.raises(ValueError, match="exactly one of ab"):
        smc.smc_latent(x, 1.0, rng)
    with pytest.raises(ValueError, match="exactly one of ab"):
        smc.smc_exact(x, 1.0, rng, ab=(-1, 1), fixed_interval=(0, 1))
    with pytest.raises(ValueError, match="eps must be > 0"):
        smc.smc_latent(x, 0.0, rng, ab=(-1, 1))
    with pytest.raises(ValueError, match="ab must be a pair"):
        smc.smc_latent(x, 1.0, rng, ab=(1, -1))
    with pytest.raises(ValueError, match="n_particles must be an integer"):
        smc.smc_exact(x, 1.0, rng, ab=(-1, 1), n_particles=1)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        smc.smc_latent(x, 1.0, 1, ab=(-1, 1))
    with pytest.raises(ValueError, match="noise must be a finite array"):
        smc.smc_latent(x, 1.0, rng, ab=(-1, 1), noise=np.ones(3))
    with pytest.raises(ValueError, match="x must be a non-empty 1-D array"):
        smc.smc_latent([], 1.0, rng, ab=(-1, 1))


def test_realised_fisher_information_adds_up():
    F1 = truncation.fisher_information_normal(50.0, 3.0, 40.0, 60.0, 2.0)
    F = smc.realised_fisher_information(np.full(7, 40.0), np.full(7, 60.0), 50.0, 3.0, 2.0)
    np.testing.assert_allclose(F, 7 * F1)
    np.testing.assert_allclose(smc.cramer_rao_sd(np.diag([4.0, 0.25])), [0.5, 2.0])
    with pytest.raises(ValueError, match="2 x 2"):
        smc.cramer_rao_sd(np.eye(3))


def test_county_income_loader():
    from dpbayes.core import datasets

    income = datasets.county_income(1996)
    assert income.size == 2197 and np.all(income > 0)
    assert 12.0 < income.mean() < 13.0  # thousand dollars
    with pytest.raises(ValueError, match="year must be an integer in"):
        datasets.county_income(2016)


def test_fixed_interval_releases_are_the_samplers_releases():
    rng = np.random.default_rng(11)
    x = 50 + 3 * rng.standard_normal(40)
    noise = rng.laplace(size=40)
    interval = (20.0, 80.0)
    y, lo, hi = smc.fixed_interval_releases(x, interval, 2.0, noise)
    run = smc.smc_latent(x, 2.0, np.random.default_rng(1), n_particles=20, fixed_interval=interval, noise=noise)
    assert np.array_equal(y, run.y) and np.array_equal(lo, run.lower) and np.array_equal(hi, run.upper)
    with pytest.raises(ValueError, match="noise"):
        smc.fixed_interval_releases(x, interval, 2.0, None)
    with pytest.raises(ValueError, match="eps"):
        smc.fixed_interval_releases(x, interval, 0.0, noise)
    with pytest.raises(ValueError, match="interval"):
        smc.fixed_interval_releases(x, (80.0, 20.0), 2.0, noise)


def test_smc_latent_author_initialisation_starts_every_particle_at_the_first_release() -> None:
    # the author's code puts every particle at (y_1, 1); after the first step the posterior mean of mu
    # is still y_1 exactly (no rejuvenation at t = 1, Gibbs moves start at t = 2)
    rng = np.random.default_rng(5)
    x = np.array([3.0, 4.0, 5.0])
    res = smc.smc_latent(x, 1.0, rng, n_particles=50, fixed_interval=(0.0, 10.0), init="author", store_every=1)
    assert res.mean_mu[0] == pytest.approx(res.y[0])
    assert np.allclose(res.stored_sigma[0], 1.0)
    fixed = smc.smc_latent(x, 1.0, np.random.default_rng(5), n_particles=50, fixed_interval=(0.0, 10.0),
                           init=(2.0, 4.0), store_every=1)
    assert fixed.mean_mu[0] == pytest.approx(2.0) and np.allclose(fixed.stored_sigma[0], 2.0)


def test_smc_latent_prior_initialisation_is_the_default() -> None:
    x = np.array([3.0, 4.0, 5.0, 6.0])
    a = smc.smc_latent(x, 1.0, np.random.default_rng(6), n_particles=40, fixed_interval=(0.0, 10.0))
    b = smc.smc_latent(x, 1.0, np.random.default_rng(6), n_particles=40, fixed_interval=(0.0, 10.0), init="prior")
    assert np.array_equal(a.mean_mu, b.mean_mu)


@pytest.mark.parametrize("bad", ["mle", (0.0, -1.0), (np.nan, 1.0), (1.0,)])
def test_smc_latent_rejects_a_bad_init(bad) -> None:
    with pytest.raises(ValueError, match="init"):
        smc.smc_latent(np.array([1.0, 2.0]), 1.0, np.random.default_rng(0), n_particles=10, fixed_interval=(0.0, 3.0),
                       init=bad)


# ---------------------------------------------------------------------------------------------
# compiled kernel (optional extra "fast") against the NumPy reference path
# ---------------------------------------------------------------------------------------------
@pytest.fixture(params=["compiled", "numpy"])
def sweep_path(request):
    """Run a test once with the compiled kernels and once on the forced NumPy fallback."""
    from dpbayes.smc import _kernels as _smc_kernels

    if request.param == "compiled" and not _smc_kernels.HAVE_NUMBA:
        pytest.skip("numba not installed (optional extra 'fast')")
    previous = _smc_kernels.use_compiled(request.param == "compiled")
    assert _smc_kernels.compiled_enabled() == (request.param == "compiled")
    yield request.param
    _smc_kernels.use_compiled(previous)


def _latent_fields(res):
    return {k: v for k, v in vars(res).items()}


@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("design", [dict(fixed_interval=INTERVAL), dict(ab=(-1.5, 1.5)), dict(ab=(-1.0, 2.0), init="author")])
def test_latent_compiled_and_numpy_paths_give_the_same_bits(small_problem, design, seed):
    """The compiled step (resampling copy, both moves and the Gibbs sums in one kernel, double-buffered)
    against the NumPy path: every array of the result bit for bit (int64 views), every number equal."""
    from dpbayes.smc import _kernels as _smc_kernels

    if not _smc_kernels.HAVE_NUMBA:
        pytest.skip("numba not installed (optional extra 'fast')")
    x = small_problem[0]
    out = {}
    previous = _smc_kernels.compiled_enabled()
    try:
        for flag in (True, False):
            _smc_kernels.use_compiled(flag)
            out[flag] = _latent_fields(smc.smc_latent(x, EPS, np.random.default_rng(seed), n_particles=64, **design))
    finally:
        _smc_kernels.use_compiled(previous)
    assert out[True].keys() == out[False].keys()
    for key, value in out[False].items():
        other = out[True][key]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, key
            assert np.array_equal(value.view(np.int64), other.view(np.int64)), key
        else:
            assert value == other, key
    # the comparison can fail: the run is random and moved (not a copy of the initial particles)
    assert out[False]["acceptance"] > 0 and np.unique(out[False]["final_mu"]).size > 1


@pytest.mark.parametrize("subset", [None, [0, 3, 4, 11, 24]])
def test_latent_step_kernel_matches_numpy_reference_directly(subset):
    """One step of the kernel (the parents' rows read from one buffer, moved rows written to the other,
    row sums) against the NumPy path's resampling copy, sweep and ``sum(axis=1)``, bit for bit."""
    from dpbayes.smc import _kernels as _smc_kernels

    rng = np.random.default_rng(21)
    N, n, t = 40, 31, 25
    mu = 50.0 + rng.standard_normal(N)
    sigma2 = 10.0 * rng.random(N) + 1.0
    lower, upper = np.full(n, 45.0), np.full(n, 55.0)
    y = 50.0 + 10.0 * rng.standard_normal(n)
    slope = np.full(n, 0.5)
    latent = 50.0 + 3.0 * rng.standard_normal((N, n))
    loglap = -slope * np.abs(y - np.clip(latent, lower, upper))
    parent = np.sort(rng.integers(N, size=N)).astype(np.int64)
    cols = np.arange(t) if subset is None else np.asarray(subset)
    lo, hi, yy, sl = lower[cols], upper[cols], y[cols], slope[cols]
    # the NumPy path: copy, gather, sweep, write back, sum
    ref, ref_lap = latent.copy(), loglap.copy()
    ref[:, :t], ref_lap[:, :t] = ref[parent, :t], ref_lap[parent, :t]
    cur, cur_lap = ref[:, cols], ref_lap[:, cols]
    acc_ref = smc._latent_mh_sweep_numpy(
        cur, cur_lap, mu[:, None], np.sqrt(sigma2)[:, None], sigma2, lo, hi, yy, sl, 3.0, np.random.default_rng(9)
    )
    ref[:, cols], ref_lap[:, cols] = cur, cur_lap
    ref_sum = ref[:, :t].sum(axis=1)
    m = cols.size
    draw = np.random.default_rng(9)
    z1, lu1 = draw.standard_normal((N, m)), np.log(draw.random((N, m)))
    z2, lu2 = draw.standard_normal((N, m)), np.log(draw.random((N, m)))
    kernels = [_smc_kernels._latent_step_py]
    if _smc_kernels.HAVE_NUMBA:
        kernels.append(_smc_kernels.latent_step)
    for kernel in kernels:
        src, src_lap = latent.copy(), loglap.copy()
        dst, dst_lap = np.full((N, n), np.nan), np.full((N, n), np.nan)
        row_sum = np.full(N, np.nan)
        acc = kernel(src, src_lap, dst, dst_lap, parent, t, cols.astype(np.int64), z1, lu1, z2, lu2, mu, np.sqrt(sigma2),
                     sigma2, lo, hi, yy, sl, 3.0, row_sum)
        assert acc == acc_ref
        assert np.array_equal(dst[:, :t].view(np.int64), ref[:, :t].view(np.int64))
        assert np.array_equal(dst_lap[:, :t].view(np.int64), ref_lap[:, :t].view(np.int64))
        assert np.array_equal(row_sum.view(np.int64), ref_sum.view(np.int64))
        assert np.isnan(dst[:, t:]).all()  # only the first t columns are written
        assert np.array_equal(src, latent) and np.array_equal(src_lap, loglap)  # the source buffer is read only
    # the comparison can fail: rows were resampled and moved, not copied
    assert 0 < acc_ref < 2 * N * m and not np.array_equal(ref[:, :t], latent[parent, :t])


# NumPy's float64 summation (numpy/_core/src/umath/loops_utils.h.src) written out independently, with the
# knobs a wrong replica would get wrong: the unroll, the block size and rounding the split to the unroll.
def _pairwise_variant(a, unroll=8, block=128, round_split=True):
    n = a.size
    if n < unroll:
        res = -0.0
        for v in a:
            res += v
        return res
    if n <= block:
        r = list(a[:unroll])
        end = n - n % unroll
        for i in range(unroll, end, unroll):
            for j in range(unroll):
                r[j] += a[i + j]
        while len(r) > 1:  # ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            r = [r[i] + r[i + 1] for i in range(0, len(r), 2)]
        res = r[0]
        for v in a[end:]:
            res += v
        return res
    half = n // 2
    if round_split:
        half -= half % unroll
    return _pairwise_variant(a[:half], unroll, block, round_split) + _pairwise_variant(a[half:], unroll, block, round_split)


AWKWARD_LENGTHS = [0, 1, 7, 8, 9, 127, 128, 129, 1000, 4097]


def _awkward_arrays():
    rng = np.random.default_rng(17)
    for n in AWKWARD_LENGTHS:
        # magnitudes over many orders, both signs: the order of the additions shows in the last bits
        base = rng.standard_normal(3 * n + 5) * np.exp(rng.normal(0.0, 4.0, 3 * n + 5))
        yield n, base[:n]  # contiguous
        yield n, base[: 3 * n : 3]  # strided
        yield n, base[n - 1 :: -1] if n else base[:0]  # reversed (negative stride)
        yield n, base[: 3 * n].reshape(n, 3)[:, 1] if n else base[:0]  # a column of a 2-D array
    yield 1, np.array([-0.0])  # NumPy's sum of -0.0 alone is +0.0 (initial value 0.0)
    yield 9, np.full(9, -0.0)


def _same_bits(a, b):
    return np.array([a], dtype=float).view(np.int64)[0] == np.array([b], dtype=float).view(np.int64)[0]


def test_pairwise_sum_is_numpys_sum_bit_for_bit():
    from dpbayes.smc import _kernels as _smc_kernels

    sums = [_smc_kernels._pairwise_sum_py]
    if _smc_kernels.HAVE_NUMBA:
        sums.append(_smc_kernels.pairwise_sum)
    cases = list(_awkward_arrays())
    assert {n for n, _ in cases} >= set(AWKWARD_LENGTHS)
    assert any(not a.flags.c_contiguous for _, a in cases) and any(a.strides[0] < 0 for _, a in cases)
    for n, a in cases:
        ref = np.sum(a)
        assert _same_bits(0.0 + _pairwise_variant(a), ref), n  # the written-out replica
        for f in sums:
            assert _same_bits(f(a), ref), (f, n, a.strides)
    # the comparison can fail: each deliberately different order gives other bits on some input
    long_cases = [a for n, a in cases if n >= 129]
    sequential = [a for n, a in cases if n >= 9]
    assert any(not _same_bits(0.0 + sum(a.tolist()), np.sum(a)) for a in sequential)  # left to right
    for knobs in (dict(unroll=4), dict(block=64), dict(round_split=False)):
        assert any(not _same_bits(0.0 + _pairwise_variant(a, **knobs), np.sum(a)) for a in long_cases), knobs


@pytest.mark.parametrize("t", AWKWARD_LENGTHS)
def test_gibbs_row_sums_are_numpys_bit_for_bit(t):
    """The compiled Gibbs sums of the latent step against the NumPy path's expressions, on rows of a wider
    array (the sampler's ``latent[:, :t]``): ``sum(axis=1)`` and ``((x - mu) ** 2).sum(axis=1)``."""
    from dpbayes.smc import _kernels as _smc_kernels

    rng = np.random.default_rng(t)
    N, n = 6, t + 3
    x = 50.0 + rng.standard_normal((N, n)) * np.exp(rng.normal(0.0, 3.0, (N, n)))
    mu = 50.0 + rng.standard_normal(N)
    ref_ss = ((x[:, :t] - mu[:, None]) ** 2).sum(axis=1)
    ref_sum = x[:, :t].sum(axis=1)
    py = np.empty(N)
    _smc_kernels._row_sq_dev_sums_py(x, t, mu, py)
    assert np.array_equal(py.view(np.int64), ref_ss.view(np.int64))
    assert all(_same_bits(_smc_kernels._pairwise_sum_py(x[i, :t]), ref_sum[i]) for i in range(N))
    if _smc_kernels.HAVE_NUMBA:
        assert np.array_equal(_smc_kernels.row_sq_dev_sums(x, t, mu).view(np.int64), ref_ss.view(np.int64))
        assert all(_same_bits(_smc_kernels.pairwise_sum(x[i, :t]), ref_sum[i]) for i in range(N))


def test_latent_posterior_on_either_path_matches_quadrature(small_problem, sweep_path):
    x, noise, _, grid = small_problem
    mean, se = _run_means(smc.smc_latent, x, noise, 3, n_particles=1000)
    target = np.array([grid.mean_mu, grid.mean_sigma])
    sd = np.array([grid.sd_mu, grid.sd_sigma])
    assert np.all(np.abs(mean - target) < 0.15 * sd), (sweep_path, mean, target, sd)


def test_exact_loglik_sum_constant_interval_and_block_size_change_no_bit():
    rng = np.random.default_rng(8)
    y = 50.0 + 10.0 * rng.standard_normal(300)
    lo, hi = np.full(300, 40.0), np.full(300, 60.0)
    mu = 50.0 + rng.standard_normal(70)
    sigma = np.exp(1.0 + 0.1 * rng.standard_normal(70))
    ref = truncation.loglik_privatised_normal(y[None, :], mu[:, None], sigma[:, None], lo[None, :], hi[None, :], EPS).sum(axis=1)
    for chunk in (1, 1000, 16_384, 10**7):
        assert np.array_equal(smc._exact_loglik_sum(y, lo, hi, mu, sigma, EPS, chunk=chunk), ref)
    hi_var = hi.copy()
    hi_var[7] = 61.0  # one different interval: the per-observation path
    ref_var = truncation.loglik_privatised_normal(y[None, :], mu[:, None], sigma[:, None], lo[None, :], hi_var[None, :], EPS).sum(axis=1)
    assert np.array_equal(smc._exact_loglik_sum(y, lo, hi_var, mu, sigma, EPS), ref_var)
    assert not np.array_equal(ref_var, ref)


def test_logsumexp_1d_is_scipys_bit_for_bit():
    """The per-step normaliser of the SMC weights equals scipy.special.logsumexp exactly (ties and
    -inf entries included), so replacing the call changed no stored number."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(7)
    cases = [rng.normal(size=n) * scale + shift for n in (1, 2, 7, 300, 1000, 4097)
             for scale in (1e-3, 1.0, 50.0, 700.0) for shift in (-1e4, 0.0, 3.0)]
    tie = rng.normal(size=50)
    tie[[3, 17, 40]] = tie.max() + 1.0
    cases += [tie, np.array([0.0, -np.inf, -1.0]), np.full(10, -3.5), np.array([-800.0, -1e300, -800.0])]
    for a in cases:
        assert smc._logsumexp_1d(a) == float(logsumexp(a))


# ---------------------------------------------------------------------------------------------
# paper §3.1 (a): rejuvenate a random subset of k latent x's per step
# ---------------------------------------------------------------------------------------------
def _digest(res):
    import hashlib

    h = hashlib.sha256()
    for key, value in sorted(vars(res).items()):
        h.update(key.encode())
        h.update(np.ascontiguousarray(np.asarray(value, dtype=float)).tobytes())
    return h.hexdigest()


# Made with smc_latent before the keyword `rejuvenate` existed (commit 24ed108, same bits on the compiled and
# NumPy paths): the default must stay the old sampler, not draw anything more from rng. The last bits depend
# on the floating-point path, so each design has one digest per path the old code was run on: the machine
# that made the test (AVX2), an AVX-512 machine (AMD EPYC, NumPy's X86_V4/AVX512_ICL kernels), the
# narrow path of tests/narrow_cpu.py on that machine, and an AMD EPYC offering AVX2 only (NumPy's X86_V3
# kernels, OpenBLAS Haswell; 24ed108's code run there on 2026-12-07, both the compiled and the NumPy path).
_BEFORE_REJUVENATE = {
    "adaptive": {"8cb8cf737742f006ea4c541985869f569cee32e9a7d86bb483c3ed7c50551ef2",
                 "7e3d00f98c8b910d2a8bcd4bafe73620a2f17c4273298b331a302bd5dbcc98d0",
                 "524b7fb627389e79bd2ece8eaf3b4c7912b30d4b1a57a3ef07d53a294e38e76d",
                 "22546489e09a50f1b9f59055ac1a388d7bce1bb3663afc8b05e0823777101d48"},
    "fixed": {"2e65f76e5e749bde5eab11f9f3f17f41e22f73b3150c9113ba68dd10b5e9285f",
              "ac660b7b4cd9d573db120b49107ed136468014ae58adbf5d3a2f52abc23ee8ab",
              "2d6e80518a357cf15adfb6f3aaa7c3726b06f0d3bf39462930c0dc1eb75ae659",
              "874a05365b4ef556597e5e2b93cbce8d38aaee47c54ba46e192f3dd811f56128"},
}
_DESIGNS = {"adaptive": dict(ab=(-1.5, 1.5)), "fixed": dict(fixed_interval=(40.0, 60.0))}


def _digest_problem():
    return 50.0 + np.sqrt(10.0) * np.random.default_rng(3).standard_normal(30)


@pytest.mark.parametrize("design", ["adaptive", "fixed"])
def test_rejuvenate_none_and_k_at_least_n_are_the_old_sampler_bit_for_bit(sweep_path, design):
    # No subset is drawn while t <= k, so k >= n - 1 sweeps every value with the old rng calls: the
    # same bits as None (checked on this machine's arithmetic by the stored digest of a run made
    # before the change, and platform-free by the None / k = n identity).
    x = _digest_problem()
    runs = {k: smc.smc_latent(x, EPS, np.random.default_rng(11), n_particles=32, store_every=10, rejuvenate=k, **_DESIGNS[design])
            for k in (None, 29, 30)}
    assert _digest(runs[None]) in _BEFORE_REJUVENATE[design]
    assert _digest(runs[29]) == _digest(runs[None]) == _digest(runs[30])
    k_small = smc.smc_latent(x, EPS, np.random.default_rng(11), n_particles=32, store_every=10, rejuvenate=28, **_DESIGNS[design])
    assert _digest(k_small) != _digest(runs[None])  # the comparison can fail: a subset changes the run


def _count_swept(monkeypatch, compiled):
    """Record the number of latent values swept per step, on the path in use."""
    from dpbayes.smc import _kernels as _smc_kernels

    seen = []
    if compiled:
        kernel = _smc_kernels.latent_step

        def spy(*args):
            seen.append(args[7].shape)  # z_rw: one normal draw per (particle, moved value)
            return kernel(*args)

        monkeypatch.setattr(_smc_kernels, "latent_step", spy)
    else:
        ref = smc._latent_mh_sweep_numpy

        def spy_np(cur, *args):
            seen.append(cur.shape)
            return ref(cur, *args)

        monkeypatch.setattr(smc, "_latent_mh_sweep_numpy", spy_np)
    return seen


@pytest.mark.parametrize("k", [1, 5, 12])
def test_rejuvenate_k_sweeps_min_t_k_values_and_gibbs_uses_all(monkeypatch, sweep_path, k):
    from dpbayes.smc import cost as smc_cost

    x = _digest_problem()
    n, N = x.size, 16
    seen = _count_swept(monkeypatch, sweep_path == "compiled")
    res = smc.smc_latent(x, EPS, np.random.default_rng(5), n_particles=N, ab=(-1.5, 1.5), rejuvenate=k)
    assert seen == [(N, min(t, k)) for t in range(1, n)]
    assert sum(2 * a * b for a, b in seen) == smc_cost.latent_move_count(n, N, k)
    assert res.n_moves == n - 1 and 0 < res.acceptance < 1
    assert np.all(np.isfinite(res.final_mu)) and np.all(res.final_sigma > 0)


def test_rejuvenate_compiled_and_numpy_paths_give_the_same_bits():
    from dpbayes.smc import _kernels as _smc_kernels

    if not _smc_kernels.HAVE_NUMBA:
        pytest.skip("numba not installed (optional extra 'fast')")
    x = _digest_problem()
    out = {}
    previous = _smc_kernels.compiled_enabled()
    try:
        for flag in (True, False):
            _smc_kernels.use_compiled(flag)
            out[flag] = smc.smc_latent(x, EPS, np.random.default_rng(13), n_particles=24, ab=(-1.0, 2.0), rejuvenate=4)
    finally:
        _smc_kernels.use_compiled(previous)
    assert _digest(out[True]) == _digest(out[False])
    assert out[False].acceptance > 0 and np.unique(out[False].final_mu).size > 1


def test_rejuvenate_subset_still_targets_the_posterior(small_problem):
    # A subset sweep leaves the target invariant: with k = 3 the final cloud of (mu, sigma) is near
    # the quadrature posterior of the same releases (loose: 4 posterior sd on the mean).
    x, noise, ref, grid = small_problem
    res = smc.smc_latent(x, EPS, np.random.default_rng(2), n_particles=400, fixed_interval=INTERVAL, noise=noise, rejuvenate=3)
    assert np.array_equal(res.y, ref.y)
    m, s = grid.mean_mu, grid.sd_mu
    assert abs(float(np.average(res.final_mu, weights=res.final_weights)) - m) < 4 * s


@pytest.mark.parametrize("bad", [0, -2, 2.5, "3", True])
def test_rejuvenate_rejects_bad_k(bad):
    with pytest.raises((ValueError, TypeError), match="rejuvenate"):
        smc.smc_latent(_digest_problem(), EPS, np.random.default_rng(0), n_particles=8, ab=(-1.5, 1.5), rejuvenate=bad)
