"""Tests for dpbayes.ubapp.median_remap: the posterior-median remap of the truncated geometric mechanism in O(n)."""

import numpy as np
import pytest

from dpbayes.core import compiled as compiled_switch
from dpbayes.ubapp import median_remap

_needs_numba = pytest.mark.skipif(not compiled_switch.HAVE_NUMBA, reason="numba not installed")


def _mp_median_uniform_prior(n: int, eps: float, z: int, start: float) -> float:
    """Posterior median of theta given an interior noisy count z, Beta(1, 1) prior, in 40-digit mpmath.

    Independent of the library: ``I_t(1 + y, 1 + n - y) = P(Binomial(n + 1, t) >= y + 1)`` summed
    term by term, ``P(y | z) ∝ e^(-eps |z - y|)`` (the weights are uniform), secant iteration.
    """
    import mpmath as mp

    mp.mp.dps = 40
    a = mp.e ** (-mp.mpf(eps))
    span = int(95 / eps) + 5  # a^span < 1e-40
    ys = list(range(max(0, z - span), min(n, z + span) + 1))
    wts = [a ** abs(z - y) for y in ys]
    total = mp.fsum(wts)

    def F(t):
        m = n + 1
        sd = mp.sqrt(m * t * (1 - t))
        lo, hi = max(0, int(m * t - 60 * sd) - span), min(m, int(m * t + 60 * sd) + span)
        lt, l1t = mp.log(t), mp.log(1 - t)
        tails, acc = {}, mp.mpf(0)
        for j in range(hi, lo - 1, -1):
            acc += mp.exp(mp.loggamma(m + 1) - mp.loggamma(j + 1) - mp.loggamma(m - j + 1) + j * lt + (m - j) * l1t)
            tails[j] = acc
        tail = lambda j: mp.mpf(1) if j < lo else tails.get(j, mp.mpf(0))  # noqa: E731
        return mp.fsum(w * tail(y + 1) for w, y in zip(wts, ys)) / total - mp.mpf(1) / 2

    t0 = mp.mpf(start)
    return float(mp.findroot(F, (t0 - mp.mpf(1e-7), t0 + mp.mpf(1e-7)), solver="secant", tol=mp.mpf(10) ** -30))


@pytest.mark.parametrize(("n", "eps", "z"), [(2000, 1.0, 777), (2000, 1.0, 1000), (2000, 1.0, 3), (2000, 0.05, 60), (20000, 1.0, 9000)])
def test_absolute_loss_median_against_a_40_digit_reference(n, eps, z):
    """The O(n) median (Taylor levels) to 5e-15 of an mpmath reference. Measured: <= 4e-16 at n = 2000,
    eps = 1; 3.3e-15 at n = 2000, eps = 0.05, z = 60 (relative 1e-13); 2e-15 at n = 10**4; 1.7e-14 at
    10**5 (the cancellation in log B(a + y, b + n - y), ~ n log 2 in size, limits it there);
    the per-z window method, the previous reference, is off by 1e-14 (n = 2000) to 1.4e-13 (eps = 0.01)."""
    est, _ = median_remap.beta_posterior_median_remap(n, eps, 1.0, 1.0)
    ref = _mp_median_uniform_prior(n, eps, z, est[z])
    assert abs(est[z] - ref) <= 5e-15


@pytest.mark.parametrize(
    ("n", "eps", "ab"),
    [(30, 0.5, (2.0, 5.0)), (2000, 1.0, (1.0, 1.0)), (500, 0.05, (0.5, 0.5)), (300, 0.001, (2.0, 2.0)), (3000, 0.01, (0.3, 3.0)), (3000, 2.0, (400.0, 400.0))],
)
def test_absolute_loss_levels_match_the_window_method_and_are_monotone(n, eps, ab):
    """The O(n) level method against the per-z window method (the window method's own error reaches
    1.4e-13 at eps = 0.01, see the mpmath test), and the claim the level method relies on for its
    starting points: the posterior median is non-decreasing in z (the geometric kernel and the
    binomial likelihood are totally positive of order 2, so theta | z increases stochastically in z).
    A decrease beyond the solver's rounding (2e-15; medians of z far below a concentrated prior's mass
    are equal in exact arithmetic) fails the test."""
    est, risk = median_remap.beta_posterior_median_remap(n, eps, *ab)
    ref, ref_risk = median_remap.beta_posterior_median_remap_window(n, eps, *ab)
    np.testing.assert_allclose(est, ref, rtol=0, atol=5e-14 if eps >= 0.05 else 1e-12)
    assert risk == pytest.approx(ref_risk, rel=1e-12)
    assert np.min(np.diff(est)) >= -2e-15


def test_absolute_loss_falls_back_to_the_window_method_where_levels_cannot_certify(monkeypatch):
    """A prior so concentrated that P(z) underflows far from its mass: those z go to the window method."""
    calls = []
    window = median_remap._window_median_rows
    monkeypatch.setattr(median_remap, "_window_median_rows", lambda *args: calls.append(args[-1].size) or window(*args))
    est, risk = median_remap.beta_posterior_median_remap(4000, 1.0, 2000.0, 2000.0)
    assert calls and 0 < calls[0] < 4001
    ref, ref_risk = median_remap.beta_posterior_median_remap_window(4000, 1.0, 2000.0, 2000.0)
    np.testing.assert_allclose(est, ref, rtol=0, atol=5e-14)
    assert risk == pytest.approx(ref_risk, rel=1e-12)


# Estimates and risk of beta_posterior_median_remap as computed before its memory / speed rework (commit
# 5a1a169, NumPy path): (n, eps, (a, b)) -> (risk, {z: estimate}). The rework changed no arithmetic (the same
# bits on the machine that stored these); the tolerance leaves room for another
# platform's libm and BLAS rounding only: 4e-15 relative (18 ulps) on an estimate, 5e-13 on the risk (a
# sum of n + 1 differences: 5a1a169's own code gives risks 2.5e-14 to 1.5e-13 away from these on an AMD
# EPYC offering AVX2 only, 2026-12-07). A mistake in a recursion, a window or a sum moves them by far
# more (the perturbations tried are in the commit message).
_BEFORE_THE_REWORK = {
    (1000, 1.0, (1.0, 1.0)): (0.009968140309576339, {0: 0.0010950680605478604, 1: 0.001828549231303886, 2: 0.002711961467455784, 5: 0.00563681360992668, 10: 0.010634051304349518, 142: 0.1424750976819266, 333: 0.33322195353258344, 500: 0.5000000000000001, 666: 0.6657793749217723, 995: 0.9943631863900728, 999: 0.9981714507686966, 1000: 0.9989049319394518}),
    (1000, 0.1, (2.0, 3.0)): (0.015411987418839956, {0: 0.017226178933593295, 1: 0.017254099175089188, 2: 0.01732753029573172, 5: 0.01789764229233719, 10: 0.019999487784795735, 142: 0.14372015707239139, 333: 0.33320503132454155, 500: 0.4991710944027322, 666: 0.6640710419342057, 995: 0.9721330799149164, 999: 0.9722898284527016, 1000: 0.9722932018274938}),
    (100000, 1.0, (2.0, 3.0)): (0.0011147152418863448, {0: 2.6549597372967718e-05, 1: 3.309560411959893e-05, 2: 4.1357752934359274e-05, 5: 6.916775979196078e-05, 1030: 0.010316234360080567, 14285: 0.14286047673850583, 33333: 0.33333222222764763, 50000: 0.49999499984843276, 66666: 0.666647777810524, 99995: 0.9999185604954759, 99999: 0.9999525328914641, 100000: 0.9999576990695072}),
    (100000, 0.1, (1.0, 1.0)): (0.000998331059728366, {0: 7.283722579112761e-05, 1: 7.466359447347616e-05, 2: 7.787846134502951e-05, 5: 9.308318524902229e-05, 1030: 0.010306304840123777, 14285: 0.14285474326934186, 33333: 0.33333221735339447, 50000: 0.49999999999999806, 66666: 0.666657782779575, 99995: 0.9999069168147564, 99999: 0.9999253364055262, 100000: 0.9999271627742066}),
    (2000000, 1.0, (1.0, 1.0)): (0.0002215574563349116, {0: 5.482709778741474e-07, 1: 9.154745814421924e-07, 2: 1.3577360485876806e-06, 5: 2.8220504624041314e-06, 20618: 0.010309326453562688, 285714: 0.14285723809475534, 666666: 0.333333111111152, 1000000: 0.5000000000000101, 1333333: 0.6666663888891768, 1999995: 0.9999971779495377, 1999999: 0.9999990845254182, 2000000: 0.9999994517290222}),
    (2000000, 1.0, (2.0, 3.0)): (0.00024925165253192224, {0: 1.3275492704372234e-06, 1: 1.654862198022525e-06, 2: 2.0679866793040658e-06, 5: 3.458545039903053e-06, 20618: 0.01030981103224332, 285714: 0.1428575238103943, 666666: 0.3333331111114768, 1000000: 0.4999997499996243, 1333333: 0.666665888888597, 1999995: 0.999995927848721, 1999999: 0.999997626536456, 2000000: 0.9999978848546358}),
}


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=_needs_numba)], ids=["numpy", "compiled"])
@pytest.mark.parametrize("case", list(_BEFORE_THE_REWORK), ids=lambda c: f"n{c[0]}-eps{c[1]}-beta{c[2][0]:g},{c[2][1]:g}")
def test_absolute_loss_remap_unchanged_by_the_rework(case, compiled):
    """Both paths (NumPy and the optional compiled kernel sums) against the stored values."""
    n, eps, (a, b) = case
    risk_before, estimates_before = _BEFORE_THE_REWORK[case]
    previous = compiled_switch.use_compiled(compiled)
    try:
        est, risk = median_remap.beta_posterior_median_remap(n, eps, a, b)
    finally:
        compiled_switch.use_compiled(previous)
    z = np.array(list(estimates_before))
    np.testing.assert_allclose(est[z], list(estimates_before.values()), rtol=4e-15, atol=0)
    assert risk == pytest.approx(risk_before, rel=5e-13, abs=0)


@pytest.mark.parametrize(("n", "eps", "ab"), [(5000, 1.0, (1.0, 1.0)), (20000, 0.1, (2.0, 3.0)), (4000, 1.0, (2000.0, 2000.0)), (3000, 2.0, (400.0, 400.0))])
def test_chunked_sweeps_are_the_one_array_bits(monkeypatch, n, eps, ab):
    """The log weights, windows and starting levels, computed in chunks of 1000 (a partial last chunk),
    are the same bits as in one chunk (the one-array arithmetic), including a prior whose linear kernel
    sums underflow (the log-space windows) and one above the Pochhammer range (``max(a, b) > 30``)."""
    from dpbayes.ubapp.optimal import betabinom_logpmf, beta_posterior_mean_remap

    a, b = ab

    def sweeps():
        log_w = median_remap._betabinom_logpmf_all(n, a, b)
        log_w -= np.max(log_w)
        _, hu, J = median_remap._level_grid(n, a, b)
        return (log_w, *median_remap._posterior_windows(log_w, eps), median_remap._posterior_mean_levels(n, eps, a, b, log_w, hu, J))

    whole = sweeps()
    monkeypatch.setattr(median_remap, "_SWEEP_CHUNK", 1000)
    pieces = sweeps()
    for got, ref in zip(pieces, whole):
        assert got.tobytes() == ref.tobytes()
    assert whole[0].tobytes() == (betabinom_logpmf(np.arange(n + 1.0), n, a, b) - np.max(betabinom_logpmf(np.arange(n + 1.0), n, a, b))).tobytes()
    _, hu, J = median_remap._level_grid(n, a, b)
    assert whole[3].tobytes() == median_remap._level_of(beta_posterior_mean_remap(n, eps, a, b)[0], hu, J).astype(np.int32).tobytes()
    if a == 2000.0:  # the log-space windows were taken
        log_w = whole[0]
        assert np.min(np.exp(log_w[: n // 4])) < 1e-280


@_needs_numba
@pytest.mark.parametrize(("n", "eps", "ab"), [(3000, 1.0, (1.0, 1.0)), (20000, 0.05, (2.0, 3.0)), (4000, 1.0, (2000.0, 2000.0))])
def test_compiled_kernel_sums_are_the_numpy_bits(n, eps, ab):
    """The compiled lane-by-lane kernel sums give the NumPy path's bits (the whole remap, both switches)."""
    results = []
    for use in (False, True):
        previous = compiled_switch.use_compiled(use)
        try:
            results.append(median_remap.beta_posterior_median_remap(n, eps, *ab))
        finally:
            compiled_switch.use_compiled(previous)
    assert results[0][0].tobytes() == results[1][0].tobytes()
    assert results[0][1] == results[1][1]


@_needs_numba
def test_sorted_walk_is_searchsorted():
    """The compiled walk from answer to answer gives ``np.searchsorted(..., side="left")`` on keys that rise, fall,
    jump, repeat, fall on ties of ``pre``, or are infinite or NaN."""
    from dpbayes.core.compiled import compile_kernel

    rng = np.random.default_rng(3)
    pre = np.maximum.accumulate(np.round(rng.normal(size=2000).cumsum(), 1))  # many ties
    pre[:5] = -np.inf
    keys = np.concatenate([
        np.sort(rng.uniform(pre[5] - 1, pre[-1] + 1, 500)), np.sort(rng.uniform(pre[5], pre[-1], 300))[::-1],
        rng.choice(pre, 200), rng.uniform(pre[5] - 5, pre[-1] + 5, 100), [np.nan, -np.inf, np.inf, pre[0], np.nan, pre[-1]],
    ])
    got = np.empty(keys.size, dtype=np.int64)
    compile_kernel("median_sorted_walk", median_remap._sorted_walk_py)(pre, keys, got)
    want = np.searchsorted(pre, keys, side="left")
    nan = np.isnan(keys)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.all(got[nan] == -1)  # left to the caller


@_needs_numba
@pytest.mark.parametrize(("n", "eps", "ab"), [(20000, 1.0, (1.0, 1.0)), (5000, 0.05, (2.0, 3.0)), (4000, 1.0, (2000.0, 2000.0)), (3000, 2.0, (0.3, 30.0))])
def test_compiled_windows_are_the_numpy_windows(n, eps, ab):
    """The windows found with the compiled walks are those of the NumPy searches (including the log-space sums)."""
    log_w = median_remap._betabinom_logpmf_all(n, *ab)
    log_w -= np.max(log_w)
    windows = []
    for use in (False, True):
        previous = compiled_switch.use_compiled(use)
        try:
            windows.append(median_remap._posterior_windows(log_w, eps))
        finally:
            compiled_switch.use_compiled(previous)
    for numpy_part, compiled_part in zip(*windows):
        assert numpy_part.tobytes() == compiled_part.tobytes()


@pytest.mark.parametrize(("n", "eps", "ab"), [(20000, 1.0, (1.0, 1.0)), (20000, 0.05, (2.0, 3.0)), (4000, 1.0, (2000.0, 2000.0))])
def test_threads_do_not_change_the_bits(n, eps, ab, monkeypatch):
    """The runs of blocks of levels solved on 1, 2 and 3 threads give the same estimates and risk, bit for bit
    (many small runs, so that the threads interleave; the third case retries rows and falls back to windows)."""
    monkeypatch.setattr(median_remap, "_BELL_LEVELS", 16)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("DPBAYES_THREADS", threads)
        results.append(median_remap.beta_posterior_median_remap(n, eps, *ab))
    for est, risk in results[1:]:
        assert est.tobytes() == results[0][0].tobytes()
        assert risk == results[0][1]


def test_absolute_loss_remap_memory():
    """Traced memory at n = 10**6: the peak within the design's arrays of n + 1 numbers (the log weights, the
    estimates and one float64 scratch array, the two int32 windows: 4 float64 arrays' worth) plus the
    blocks' working set (bounded by ``_LEVEL_ENTRIES``, not by n: about 40 MB, 48 MB allowed); after the
    call only the estimates are left (no reference cycle keeps a scratch array alive)."""
    import gc
    import tracemalloc

    n = 10**6
    median_remap.beta_posterior_median_remap(1000, 1.0, 2.0, 3.0)  # first-call costs outside the count
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # a cycle would hold its arrays until a collection
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        est, _ = median_remap.beta_posterior_median_remap(n, 1.0, 2.0, 3.0)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        if was_enabled:
            gc.enable()
    array = 8.0 * (n + 1)
    assert after - before < est.nbytes + 1e6
    assert peak - before < 4.0 * array + 48e6
