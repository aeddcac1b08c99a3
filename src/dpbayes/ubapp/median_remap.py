"""The Bayes remap of the truncated geometric mechanism under absolute loss: the posterior median of theta.

Chapter 1's optimal private estimate of a proportion (the UBaPP paper's linear program (11) and its
exact solver, :func:`dpbayes.ubapp.optimal.ubapp_exact`) post-processes the truncated geometric mechanism's
noisy count ``z`` in ``{0..n}`` with the Bayes action of the loss: under absolute loss, the median of
the posterior of ``theta`` given ``z``. With a ``Beta(a, b)`` prior that posterior is a mixture over
the true counts ``y``, ``sum_y P(y | z) Beta(a + y, b + n - y)``, so the remap needs, for every ``z``,
the median of a mixture of ``n + 1`` Betas and its expected absolute deviation (the Bayes risk).

Done densely that is ``O(n^2)``. Here it is ``O(n)`` (up to logarithms): each ``z`` keeps only the
counts whose mixture weight is not negligible (:func:`beta_posterior_median_remap_window`, with a
stated neglected share), and for large ``n`` the mixture's distribution function is expanded in
Taylor series around shared expansion levels in ``t`` (:func:`beta_posterior_median_remap`), with the
window method as the fallback where an expansion is not trusted; its memory is that of the log weights,
the windows and the estimates (about three arrays of ``n + 1`` float64), the rest going chunk by chunk.
The squared-loss counterpart (the posterior mean) is :func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap`;
the release that uses both is :class:`dpbayes.release.statistic.OptimalProportionRelease`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpbayes.core._extras import lazy_module
from dpbayes.core.allocator import warm_allocator
from dpbayes.core.compiled import compile_kernel, compiled_enabled
from dpbayes.core.executors import thread_map
from dpbayes.core.geometric import geometric_kernel_sums_by_chunk, geometric_log_normalisers, geometric_row_factors_at
from dpbayes.ubapp.optimal import _log_poch, _log_space_mean_offset, betabinom_logpmf

optimize = lazy_module("scipy.optimize")

__all__ = ["beta_posterior_median_remap", "beta_posterior_median_remap_window", "beta_mixture_median", "beta_abs_deviation"]


def beta_mixture_median(weights: NDArray[np.float64], alpha: NDArray[np.float64], beta: NDArray[np.float64]) -> float:
    """Median of ``sum_y weights[y] Beta(alpha[y], beta[y])`` (weights sum to 1), by Brent's method."""
    f = lambda t: float(weights @ special.betainc(alpha, beta, t)) - 0.5  # noqa: E731
    return float(optimize.brentq(f, 0.0, 1.0, xtol=1e-14, rtol=4 * np.finfo(float).eps))


def beta_abs_deviation(alpha: NDArray[np.float64], beta: NDArray[np.float64], m: float) -> NDArray[np.float64]:
    """``E|theta - m|`` for ``theta ~ Beta(alpha, beta)``, closed form with regularised incomplete betas.

    ``|theta - m| = (theta - m) + 2 (m - theta)_+`` and ``E[(m - theta)_+] = m I_m(alpha, beta) -
    mu I_m(alpha + 1, beta)`` with ``mu = alpha / (alpha + beta)``.
    """
    mu = alpha / (alpha + beta)
    return mu - m + 2.0 * (m * special.betainc(alpha, beta, m) - mu * special.betainc(alpha + 1.0, beta, m))


#: Neglected share of ``P(z)`` in the absolute-loss remap: each ``z`` sums over the ``y`` whose term
#: ``P(z, y)`` is at least ``_WINDOW_TOL / (n + 1)`` times ``P(z)`` (so at most ``_WINDOW_TOL`` is left out).
_WINDOW_TOL = 1e-20
_CHUNK_ENTRIES = 1 << 20  # (z, y) entries of one block of the absolute-loss remap (8 MB per array)


_SWEEP_CHUNK = 1 << 16  # z per chunk of the sweeps over all counts (0.5 MB per float64 array)


def _chunk_bounds(n: int, chunk: int = _SWEEP_CHUNK) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]`` covering ``0..n`` in increasing chunks of at most ``chunk`` counts."""
    return [(lo, min(lo + chunk, n + 1)) for lo in range(0, n + 1, chunk)]


def _chunk_weights(log_w: NDArray[np.float64]) -> Callable[[int, int], NDArray[np.float64]]:
    """``weights(lo, hi) = exp(log_w[lo:hi])`` (underflow to 0 allowed): the chunks the kernel sums ask for."""

    def weights(lo: int, hi: int) -> NDArray[np.float64]:
        with np.errstate(under="ignore"):
            return np.exp(log_w[lo:hi])

    return weights


def _posterior_windows(log_w: NDArray[np.float64], eps: float) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """``[lo[z], hi[z]]``: the counts ``y`` whose share of ``P(z) = sum_y G[z, y] w_y`` is not negligible.

    A count is kept when ``w_y a^|z - y| >= _WINDOW_TOL / (n + 1) * sum_y' w_y' a^|z - y'|``; the
    window is the hull of those counts (a superset), found with prefix / suffix maxima of
    ``log w_y +- eps y`` and binary search, ``O(n log n)``. The sums ``sum_y' w_y' a^|z - y'|`` only
    place the threshold: they are ``P(z)`` over its row factor, ``P(z)`` from the mechanism's kernel
    sums (:func:`dpbayes.core.geometric.geometric_kernel_sums_by_chunk`, linear scale: ``log_w <= 0``
    with maximum 0), or from cumulative ``logaddexp`` when some of them fall below ``1e-280``. The
    second binary search of each side runs only on the ``z`` whose first one lands on the wrong side.

    Memory: besides ``log_w``, one array of ``n + 1`` float64 (the maxima searched) and the two int32
    results; the thresholds are recomputed chunk by chunk for each side (the same bits), and each
    chunk's keys are searched in the part of the maxima that holds their answers (the same indices as a
    search of the whole array, in cache).
    """
    n = log_w.size - 1
    bounds = _chunk_bounds(n)
    shift = np.log(_WINDOW_TOL) - np.log(n + 1.0)
    log_interior, log_end = geometric_log_normalisers(eps)
    weights = _chunk_weights(log_w)
    log_space: list[NDArray[np.float64]] = []  # the thresholds in log space, once a linear sum is below 1e-280

    def thresholds() -> Iterator[tuple[int, int, NDArray[np.float64] | None]]:
        """``(lo, hi, level)`` per chunk: the log threshold of each ``z``; ``level`` None where the linear
        sums underflow (the sweep then starts again in log space)."""
        if log_space:
            for lo_k, hi_k in bounds:
                yield lo_k, hi_k, log_space[0][lo_k:hi_k]
            return
        for lo_k, hi_k, (level,) in geometric_kernel_sums_by_chunk(weights, n, eps, 0, _SWEEP_CHUNK):
            if not np.min(level) > 1e-280:
                yield lo_k, hi_k, None
                return
            np.log(level, out=level)  # log P(z) less the row factor's log: log sum_y a^|z - y| w_y
            if n > 0:
                level -= log_interior
                if lo_k == 0:
                    level[0] += log_interior - log_end
                if hi_k == n + 1:
                    level[-1] += log_interior - log_end
            level += shift
            yield lo_k, hi_k, level

    pre = np.empty(n + 1)

    def prefix_max(sign: float, reverse: bool) -> None:
        """``pre`` = prefix maxima of ``log w_y + sign eps y`` (of the reversed sequence with ``reverse``)."""
        top = -np.inf
        for lo_k, hi_k in bounds:
            ys = n - np.arange(lo_k, hi_k, dtype=float) if reverse else np.arange(lo_k, hi_k, dtype=float)
            seg = (log_w[n - lo_k:n - hi_k if hi_k <= n else None:-1] if reverse else log_w[lo_k:hi_k]) + sign * (eps * ys)
            np.maximum.accumulate(seg, out=seg)
            np.maximum(seg, top, out=pre[lo_k:hi_k])
            top = float(pre[hi_k - 1])

    def search_in_range(keys: NDArray[np.float64]) -> NDArray[np.int64]:
        """``np.searchsorted(pre, keys, side="left")``, in the part of ``pre`` that holds the answers."""
        if keys.size == 0:
            return np.zeros(0, dtype=np.int64)
        if np.isnan(keys).any():  # NaN sorts last: no part of pre bounds its answer
            return np.searchsorted(pre, keys, side="left")
        first, last = np.searchsorted(pre, [np.min(keys), np.max(keys)], side="left")
        return first + np.searchsorted(pre[first:last], keys, side="left")

    def search(keys: NDArray[np.float64], step: int = 0) -> NDArray[np.int64]:
        """``np.searchsorted(pre, keys, side="left")``. With ``step`` (+1 or -1, the keys of consecutive ``z``),
        the answers are first guessed as the first key's answer plus ``step`` per key (a window that moves
        with ``z``) and kept where ``pre[i - 1] < key <= pre[i]`` says they are the answer; the other keys
        are searched in the part of ``pre`` that holds their answers (the same indices either way)."""
        if not step or keys.size == 0:
            return search_in_range(keys)
        if compiled_enabled():  # one walk from each answer to the next (the answers of consecutive z move little)
            got = np.empty(keys.size, dtype=np.int64)
            compile_kernel("median_sorted_walk", _sorted_walk_py)(pre, keys, got)
            nan_keys = np.flatnonzero(got < 0)
            if nan_keys.size:
                got[nan_keys] = np.searchsorted(pre, keys[nan_keys], side="left")
            return got
        got = np.searchsorted(pre, keys[0], side="left") + step * np.arange(keys.size)
        inside = (got >= 1) & (got <= n)
        at = np.clip(got, 1, n)
        hit = inside & (pre[at - 1] < keys) & (pre[at] >= keys)  # (False for a NaN key)
        miss = np.flatnonzero(~hit)
        if miss.size:
            got[miss] = search_in_range(keys[miss])
        return got

    lo = np.empty(n + 1, dtype=np.int32)
    hi = np.empty(n + 1, dtype=np.int32)
    # first y (overall) with A_y = log w_y + eps y >= level + eps z: kept on the left of z if it is <= z;
    # otherwise the first y >= z with B_y = log w_y - eps y >= level - eps z
    prefix_max(1.0, False)
    need: list[NDArray[np.int64]] = []
    keys: list[NDArray[np.float64]] = []
    for lo_k, hi_k, level in thresholds():
        if level is None:  # the linear sums underflow: this sweep again in log space
            log_space.append(_log_space_window_levels(log_w, eps) + shift)
            need, keys = [], []
            for lo_k, hi_k, level in thresholds():
                assert level is not None
                _first_side(lo, lo_k, hi_k, level, eps, n, search, need, keys)
            break
        _first_side(lo, lo_k, hi_k, level, eps, n, search, need, keys)
    need_z, need_keys = np.concatenate(need), np.concatenate(keys)
    if need_z.size:
        prefix_max(-1.0, False)
        lo[need_z] = np.maximum(search(need_keys), need_z)
    # last y with B_y >= level - eps z: kept on the right of z if it is >= z; otherwise the last y <= z
    # with A_y >= level + eps z (reversed suffix maxima)
    prefix_max(-1.0, True)
    need, keys = [], []
    for lo_k, hi_k, level in thresholds():
        assert level is not None  # the same sums as in the first sweep
        eps_z = eps * np.arange(lo_k, hi_k, dtype=float)
        got = n - search(level - eps_z, -1)
        hi[lo_k:hi_k] = np.maximum(got, -1)
        wrong = np.flatnonzero(got < np.arange(lo_k, hi_k))
        need.append(wrong + lo_k)
        keys.append(level[wrong] + eps_z[wrong])
    need_z, need_keys = np.concatenate(need), np.concatenate(keys)
    if need_z.size:
        prefix_max(1.0, True)
        hi[need_z] = np.minimum(n - search(need_keys), need_z)
    np.clip(lo, 0, n, out=lo)
    np.clip(hi, 0, n, out=hi)
    np.maximum(hi, lo, out=hi)
    return lo, hi


def _sorted_walk_py(pre: NDArray[np.float64], keys: NDArray[np.float64], out: NDArray[np.int64]) -> None:
    """``np.searchsorted(pre, keys, side="left")`` for sorted ``pre`` (compiled): the first answer by bisection,
    each next one by walking from the previous answer (``O(n + total movement)``); a NaN key gets ``-1``
    (NumPy sorts NaN last: the caller searches those)."""
    size = pre.shape[0]
    p = -1
    for i in range(keys.shape[0]):
        key = keys[i]
        if key != key:
            out[i] = -1
            continue
        if p < 0:
            lo, hi = 0, size
            while lo < hi:
                mid = (lo + hi) // 2
                if pre[mid] < key:
                    lo = mid + 1
                else:
                    hi = mid
            p = lo
        else:
            while p < size and pre[p] < key:
                p += 1
            while p > 0 and not pre[p - 1] < key:
                p -= 1
        out[i] = p


def _first_side(
    lo: NDArray[np.int32], lo_k: int, hi_k: int, level: NDArray[np.float64], eps: float, n: int,
    search: Callable[[NDArray[np.float64], int], NDArray[np.int64]], need: list[NDArray[np.int64]], keys: list[NDArray[np.float64]],
) -> None:
    """The first search of the left ends for the ``z`` in ``lo_k..hi_k - 1`` (``_posterior_windows``); the
    ``z`` whose answer lies right of ``z`` and their keys of the second search go to ``need`` and ``keys``."""
    eps_z = eps * np.arange(lo_k, hi_k, dtype=float)
    got = search(level + eps_z, 1)
    lo[lo_k:hi_k] = np.minimum(got, n + 1)
    wrong = np.flatnonzero(got > np.arange(lo_k, hi_k))
    need.append(wrong + lo_k)
    keys.append(level[wrong] - eps_z[wrong])


def _log_space_window_levels(log_w: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    """``log sum_y a^|z - y| w_y`` for every ``z`` by cumulative ``logaddexp`` (where the linear sums underflow)."""
    n = log_w.size - 1
    eps_y = eps * np.arange(n + 1, dtype=float)
    A = log_w + eps_y
    level = np.logaddexp.accumulate(A) - eps_y
    del A
    B = log_w - eps_y
    right = np.logaddexp.accumulate(B[::-1])[::-1]
    del B
    right[:-1] = right[1:]
    right[-1] = -np.inf
    right += eps_y
    np.logaddexp(level, right, out=level)
    return level


def beta_posterior_median_remap(n: int, eps: float, a: float, b: float) -> tuple[NDArray[np.float64], float]:
    """Posterior median remap and exact absolute-loss Bayes risk, ``Beta(a, b)`` prior, in ``O(n)``.

    Given the noisy count ``z`` of the truncated geometric mechanism, ``theta`` is a mixture of
    ``Beta(a + y, b + n - y)`` with weights ``P(y | z) ∝ G[z, y] w_y`` (``w`` Beta-binomial). The
    median solves ``sum_y P(y | z) I_t(a + y, b + n - y) = 1/2``; the risk is
    ``sum_z sum_y P(z, y) E|theta - m_z|`` with ``theta ~ Beta(a + y, b + n - y)``.

    Every ``z`` is solved by ``_median_by_levels`` (Taylor expansions around shared expansion
    points, sums over ``y`` against the geometric kernel: ``O(n + (levels) x (window))``, about ``n +
    10 sqrt(n) min(92 / eps, 30 sqrt(n))`` entries of a few elementwise operations, of which only the
    ``z`` themselves go through the kernel's recursions; the posterior mean,
    :func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap`, gives the starting points). The few ``z`` it
    cannot certify (a median within a few component widths of 0 or 1, an underflowing ``P(z)``)
    are solved by :func:`beta_posterior_median_remap_window`, the direct per-``z`` method. Tests
    compare both with the dense ``O(n^2)`` reference and check that the median is monotone in ``z``.

    Memory: the scaled log weights and the estimates (``n + 1`` float64 each), the windows (two int32
    arrays of ``n + 1``), and, while the windows are found, one more float64 array; everything else is
    formed chunk by chunk or block by block (a few tens of MB): about 300 MB at ``n = 10^7``. The risk
    is summed block by block (``math.fsum`` of the blocks' sums). With the optional compiled kernels
    (:mod:`dpbayes.core.compiled`) the kernel sums of the blocks run compiled, with the same bits. The
    windows and the starting levels are found side by side, and the blocks run, on threads
    (:func:`dpbayes.core.executors.thread_map`: as many as the CPUs, or ``DPBAYES_THREADS``), their results
    combined in block order: the same bits on any number of threads.

    Returns
    -------
    estimates : ndarray, shape (n + 1,)
        Posterior median of ``theta`` given ``z``.
    risk : float
        Exact Bayes risk ``E|theta - estimate|``.
    """
    warm_allocator()  # every block allocates and frees a few tens of MB: keep them in the heap (core.allocator)
    log_w = _betabinom_logpmf_all(n, a, b)
    scale_log = float(np.max(log_w))
    log_w -= scale_log
    _, hu, J = _level_grid(n, a, b)
    # the windows and the starting levels are independent sweeps over log_w: side by side on the threads
    swept = list(thread_map(lambda sweep: sweep(), [
        lambda: _posterior_windows(log_w, eps), lambda: _posterior_mean_levels(n, eps, a, b, log_w, hu, J),
    ]))
    lo_all, hi_all = swept[0]
    # the starting levels handed over, not kept: _median_by_levels frees them once read (n + 1 int32)
    estimates, risk_parts = _median_by_levels(n, eps, a, b, log_w, lo_all, hi_all, swept.pop())
    rest = np.flatnonzero(~np.isfinite(estimates))
    if rest.size:
        estimates[rest], risk_rest = _window_median_rows(n, eps, a, b, log_w, lo_all, hi_all, rest)
        risk_parts.append(float(np.sum(risk_rest)))
    return estimates, float(np.exp(scale_log) * math.fsum(risk_parts))


def _betabinom_logpmf_all(n: int, a: float, b: float) -> NDArray[np.float64]:
    """:func:`dpbayes.ubapp.optimal.betabinom_logpmf` at ``y = 0, 1, ..., n``, bit for bit, without the
    Pochhammer factors of exponent 0 (``a = 1`` or ``b = 1``: ``log poch(x, 0) = 0`` exactly), which
    cost two thirds of that function for a uniform prior. Computed chunk by chunk into one array
    (elementwise: the same bits), so that no other array of ``n + 1`` numbers is formed."""
    out = np.empty(n + 1)
    if max(a, b) > 30.0:
        for lo, hi in _chunk_bounds(n):
            out[lo:hi] = betabinom_logpmf(np.arange(lo, hi, dtype=float), n, a, b)
        return out
    log_norm = _log_poch(np.array([n + 1.0]), a + b - 1.0)[0] if a + b != 1.0 else 0.0
    log_beta = special.betaln(a, b)
    for lo, hi in _chunk_bounds(n):
        y = np.arange(lo, hi, dtype=float)
        part = _log_poch(y + 1.0, a - 1.0) if a != 1.0 else np.zeros(hi - lo)
        if b != 1.0:
            part += _log_poch(n - y + 1.0, b - 1.0)
        else:
            part += 0.0  # the sum with log poch(x, 0) = 0, as in betabinom_logpmf
        part -= log_norm
        part -= log_beta
        out[lo:hi] = part
    return out


def _level_grid(n: int, a: float, b: float) -> tuple[float, float, int]:
    """``(N, hu, J)`` of ``_median_by_levels``: ``N = n + a + b``, the levels ``t = sin(j hu)^2`` (``j =
    1..J - 1``) ``_LEVEL_STEP`` component standard deviations apart."""
    N = n + a + b
    hu = _LEVEL_STEP / (2.0 * np.sqrt(N))
    return N, float(hu), int(np.floor(0.5 * np.pi / hu))


def _level_of(t: NDArray[np.float64], hu: float, J: int) -> NDArray[np.int64]:
    """The level nearest each ``t`` (in ``arcsin(sqrt(t))``), clipped to ``1..J - 1``."""
    return np.clip(np.rint(np.arcsin(np.sqrt(np.clip(t, 0.0, 1.0))) / hu), 1, max(J - 1, 1)).astype(np.int64)


def _posterior_mean_levels(
    n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64], hu: float, J: int
) -> NDArray[np.int32]:
    """The level of ``E[theta | z]`` for every ``z``: the starting points of ``_median_by_levels``.

    The posterior means are those of :func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap`, by the same
    arithmetic (:func:`dpbayes.core.geometric.geometric_kernel_sums_by_chunk`, whose chunks give the bits
    of the one-array sums), from the already scaled Beta-binomial log weights ``log_w`` (maximum 0);
    each chunk is turned into level indices at once, so that only those (int32) fill an array of
    ``n + 1``."""
    levels = np.empty(n + 1, dtype=np.int32)
    log_offset: NDArray[np.float64] | None = None
    for lo, hi, (s0, s1) in geometric_kernel_sums_by_chunk(_chunk_weights(log_w), n, eps, 1, _SWEEP_CHUNK):
        ok = s0 > 1e-280
        shift = np.zeros(hi - lo)
        shift[ok] = s1[ok] / s0[ok]
        if not np.all(ok):  # E[y | z] - z in log space where P(z) underflows (a concentrated prior)
            if log_offset is None:
                log_offset = _log_space_mean_offset(log_w, eps)
            shift[~ok] = log_offset[lo:hi][~ok]
        shift += a + np.arange(lo, hi, dtype=float)
        shift /= a + b + n
        levels[lo:hi] = _level_of(shift, hu, J)
    return levels


def beta_posterior_median_remap_window(n: int, eps: float, a: float, b: float) -> tuple[NDArray[np.float64], float]:
    """:func:`beta_posterior_median_remap` by the direct per-``z`` method, ``O(n min(n, 90 / eps))`` time.

    For each ``z`` the sum runs over the window of ``_posterior_windows`` (neglected share of
    ``P(z)`` below ``1e-20``), of width about ``min(n, 90 / eps)``. The median solves
    ``sum_y P(y | z) I_t(a + y, b + n - y) = 1/2`` by safeguarded Newton (vectorised over ``z``,
    started at the posterior mean, bracket kept), where the regularised incomplete betas along the
    window come from one ``betainc`` and the recurrence ``I_t(al + 1, be - 1) = I_t(al, be) -
    t^al (1 - t)^(be - 1) / (al B(al, be))`` (DLMF 8.17.21). The risk uses the closed form
    ``E|theta - m| = (mu - m)(1 - 2 I_m(al, be)) + 2 m^al (1 - m)^be / ((al + be) B(al, be))`` for
    ``theta ~ Beta(al, be)``, ``mu = al / (al + be)``. Kept as a second reference for the tests and
    for the rows the level method leaves.
    """
    y_all = np.arange(n + 1, dtype=float)
    log_w = betabinom_logpmf(y_all, n, a, b)
    del y_all
    scale_log = float(np.max(log_w))
    log_w = log_w - scale_log
    lo_all, hi_all = _posterior_windows(log_w, eps)
    estimates, risk_z = _window_median_rows(n, eps, a, b, log_w, lo_all, hi_all, np.arange(n + 1))
    return estimates, float(np.exp(scale_log) * np.sum(risk_z))


def _window_median_rows(
    n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64], lo_all: NDArray[np.int32],
    hi_all: NDArray[np.int32], rows: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Median and ``sum_y P(z, y) E|theta - m_z| / exp(max log w)`` for the ``z`` in ``rows``, window sums."""
    estimates = np.empty(rows.size)
    risk_z = np.empty(rows.size)
    i0 = 0
    while i0 < rows.size:
        # a block of z whose padded window fits the budget
        width = int(hi_all[rows[i0]] - lo_all[rows[i0]] + 1)
        i1 = i0 + 1
        while i1 < rows.size:
            w_next = max(width, int(hi_all[rows[i1]] - lo_all[rows[i1]] + 1))
            if (i1 - i0 + 1) * w_next > _CHUNK_ENTRIES:
                break
            width, i1 = w_next, i1 + 1
        z = rows[i0:i1]
        ys = lo_all[z, None] + np.arange(width)[None, :]
        valid = ys <= hi_all[z, None]
        ys = np.minimum(ys, n)
        log_c = np.log(geometric_row_factors_at(z, n, eps))
        log_joint = np.where(valid, log_c[:, None] + log_w[ys] - eps * np.abs(ys - z[:, None]), -np.inf)
        top = np.max(log_joint, axis=1, keepdims=True)
        joint = np.exp(log_joint - top)
        p = joint / joint.sum(axis=1, keepdims=True)  # P(y | z) on the window
        yf = ys.astype(float)
        al, be = a + yf, b + n - yf
        lb = special.betaln(al, be)
        t = _mixture_median(p, al, be, lb)
        estimates[i0:i1] = t
        # exact risk of the block: sum_y P(z, y) E|theta - m_z| for theta ~ Beta(al, be)
        g = _incomplete_betas(t, al, be, lb)
        mu = al / (al + be)
        with np.errstate(divide="ignore"):
            tail = 2.0 * np.exp(al * np.log(t)[:, None] + be * np.log1p(-t)[:, None] - lb - np.log(al + be))
        dev = (mu - t[:, None]) * (1.0 - 2.0 * g) + tail
        risk_z[i0:i1] = np.exp(top[:, 0]) * np.sum(joint * dev, axis=1)
        i0 = i1
    return estimates, risk_z


def _incomplete_betas(
    t: NDArray[np.float64], al: NDArray[np.float64], be: NDArray[np.float64], lb: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``I_t(al, be)`` along each row's window (``al`` rising by 1 along a row): one ``betainc`` per
    row plus the recurrence ``I_t(al + 1, be - 1) = I_t(al, be) - t^al (1 - t)^(be - 1) / (al B(al, be))``."""
    with np.errstate(divide="ignore", under="ignore"):
        lt, l1t = np.log(t)[:, None], np.log1p(-t)[:, None]
        d = np.exp(al * lt + (be - 1.0) * l1t - lb) / al
    first = special.betainc(al[:, 0], be[:, 0], t)
    g = first[:, None] - np.concatenate((np.zeros((t.size, 1)), np.cumsum(d[:, :-1], axis=1)), axis=1)
    return np.clip(g, 0.0, 1.0)


def _mixture_median(
    p: NDArray[np.float64], al: NDArray[np.float64], be: NDArray[np.float64], lb: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Median of each row's Beta mixture ``sum_y p[r, y] Beta(al[r, y], be[r, y])`` (``al`` rising by 1).

    Summation by parts turns the mixture CDF into ``I_t(al_0, be_0) - t sum_y pdf_y(t) T_y / al_y``
    with ``T_y = sum_{y' > y} p_y'`` (fixed per row), so that each Newton step costs one ``betainc``
    per row and one ``exp`` per entry. Safeguarded Newton from the mixture mean: the bracket of the
    root is kept and a step leaving it is replaced by bisection; stops when the step is below
    ``1e-15 + 4 ulp`` (Brent's tolerance of the dense reference is ``1e-14``).
    """
    tails = np.concatenate((np.cumsum(p[:, ::-1], axis=1)[:, ::-1][:, 1:], np.zeros((p.shape[0], 1))), axis=1)
    t_over_al = tails / al
    a1, b1 = al - 1.0, be - 1.0
    t = np.clip(np.sum(p * al / (al + be), axis=1), 1e-300, 1.0 - 1e-16)  # start: the mixture mean
    lo_t, hi_t = np.zeros_like(t), np.ones_like(t)
    active = np.arange(t.size)
    for _ in range(200):
        tt = t[active]
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            pdf = np.exp(a1[active] * np.log(tt)[:, None] + b1[active] * np.log1p(-tt)[:, None] - lb[active])
            F = special.betainc(al[active, 0], be[active, 0], tt) - tt * np.sum(pdf * t_over_al[active], axis=1) - 0.5
            f = np.sum(pdf * p[active], axis=1)
            lo_t[active] = np.where(F < 0, tt, lo_t[active])
            hi_t[active] = np.where(F >= 0, tt, hi_t[active])
            new = tt - F / f
        inside = np.isfinite(new) & (new > lo_t[active]) & (new < hi_t[active])
        new = np.where(inside, new, 0.5 * (lo_t[active] + hi_t[active]))
        small = np.abs(new - tt) <= 1e-15 + 4 * np.finfo(float).eps * new
        t[active] = new
        active = active[~small]
        if active.size == 0:
            break
    return t


# ---------------------------------------------------------------- absolute loss in O(n): Taylor levels
#: Spacing of the expansion points of ``_median_by_levels``, in standard deviations of the posterior
#: components ``Beta(a + y, b + n - y)`` (uniform in ``arcsin(sqrt(t))``, where that width is constant).
_LEVEL_STEP = 0.3
#: Terms of the Taylor expansion in ``t`` around an expansion point (derivatives 0..``_TAYLOR_TERMS``).
_TAYLOR_TERMS = 12
#: An expansion is accepted for ``z`` when ``|t - level| <= _TRUST`` component standard deviations and
#: its last term is below ``_LAST_TERM`` times ``P(z)``; the rest go to the next round or to the window method.
_TRUST = 0.16
_LAST_TERM = 2e-15
_LEVEL_ENTRIES = 1 << 15  # (level, count) entries of one block (3 full-width sequences, 12 on the core, a dozen work arrays)
_BELL_LEVELS = 1024  # levels per run of blocks (one call of _bell_coefficients; a task of the threads)
_LEVEL_MIN_ROWS = 8  # levels per block at least (wide windows: fewer blocks, less per-block overhead)


def _kernel_sums_at(
    groups: list[tuple[NDArray[np.float64], int]], eps: float, row_of: NDArray[np.int64], col: NDArray[np.int64], c0: int, c1: int,
    factor: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``factor[i] sum_y a^|c - y| seqs[s, r, y]`` (``a = e^-eps``) at ``(r, c) = (row_of[i], col[i])`` for every
    sequence of every group: shape ``(S, len(col))``, ``S`` the number of sequences (the groups' in order).

    A group is ``(seqs, offset)``, ``seqs`` of shape ``(n_seq, n_row, width)`` (contiguous) whose column
    ``j`` is the block's column ``offset + j``. All wanted columns lie in ``[c0, c1]`` (block columns). The
    parts of the rows outside that segment enter through two tail sums per row and sequence, ``L =
    sum_(y < c0) a^(c0 - 1 - y) s_y`` and ``R = sum_(y > c1) a^(y - c1) s_y`` (two matrix-vector products
    against the kernel's powers ``e^(-eps m)``); inside the segment two first-order recursions started
    from the tails give ``left[c] = s_c + a left[c - 1]`` and ``right[c] = a s_(c + 1) + a right[c + 1]``
    (the arithmetic of ``lfilter([1], [1, -a])`` and ``lfilter([0, a], [1, -a])``). The recursions thus
    run over the ``z`` of the levels only, not over their whole windows (about ``92 / eps`` wider).
    Both run in one loop over the segment's columns, the right one on the reversed columns, each step
    one product and one sum over all rows, sequences and both sides at once (:func:`_column_recursion`).
    """
    ar = float(np.exp(-eps))
    n_row = groups[0][0].shape[1]
    n_all = sum(seqs.shape[0] for seqs, _ in groups)
    seg_len = c1 - c0 + 1
    tails = []
    for seqs, offset in groups:
        n_seq, _, width = seqs.shape
        a0, a1 = c0 - offset, c1 - offset
        flat = seqs.reshape(n_seq * n_row, width)  # a view: seqs is contiguous
        tails.append((
            flat[:, :a0] @ np.exp(-eps * np.arange(a0 - 1, -1, -1, dtype=float)),
            flat[:, a1 + 1:] @ np.exp(-eps * np.arange(1, width - a1, dtype=float)),
        ))
    if compiled_enabled():  # the same operations lane by lane, compiled (no transposed copies)
        out = np.empty((n_all, col.size))
        row_start = np.searchsorted(row_of, np.arange(n_row + 1))  # the z of a row are consecutive
        kernel = compile_kernel("median_lane_kernel_sums", _lane_kernel_sums_py)
        s0 = 0
        for (seqs, offset), (tail_l, tail_r) in zip(groups, tails):
            kernel(seqs, tail_l, tail_r, c0 - offset, seg_len, ar, row_start, col - c0, factor, out[s0:s0 + seqs.shape[0]])
            s0 += seqs.shape[0]
        return out
    # acc[c, 0, r, s]: left[c0 + c]; acc[c, 1, r, s]: right[c1 - c] (reversed columns)
    acc = np.empty((seg_len, 2, n_row, n_all))
    s0 = 0
    for (seqs, offset), (tail_l, tail_r) in zip(groups, tails):
        n_seq, a0 = seqs.shape[0], c0 - offset
        seg = seqs[:, :, a0:a0 + seg_len].transpose(2, 1, 0)  # (column, row, sequence)
        part = acc[:, :, :, s0:s0 + n_seq]
        part[1:, 0] = seg[1:]
        np.multiply(seg[:0:-1], ar, out=part[1:, 1])  # right[c] takes a s_(c + 1)
        np.multiply(tail_l.reshape(n_seq, n_row).T, ar, out=part[0, 0])
        part[0, 0] += seg[0]
        part[0, 1] = tail_r.reshape(n_seq, n_row).T
        s0 += n_seq
    _column_recursion(acc.reshape(seg_len, 2 * n_row * n_all), ar)
    flat_acc = acc.reshape(seg_len * 2 * n_row, n_all)
    out = np.take(flat_acc, ((col - c0) * 2) * n_row + row_of, axis=0)
    out += np.take(flat_acc, ((c1 - col) * 2 + 1) * n_row + row_of, axis=0)
    del acc, flat_acc
    sums = np.ascontiguousarray(out.T)
    sums *= factor
    return sums


def _lane_kernel_sums_py(
    seqs: NDArray[np.float64], tail_l: NDArray[np.float64], tail_r: NDArray[np.float64], a0: int, seg_len: int, ar: float,
    row_start: NDArray[np.int64], col: NDArray[np.int64], factor: NDArray[np.float64], out: NDArray[np.float64],
) -> None:
    """``_kernel_sums_at`` for one group (compiled): the left and right recursions over the segment ``a0 ..
    a0 + seg_len - 1`` of ``seqs`` with the operations of the NumPy path, all rows of a sequence at once (their
    chains are independent), and ``out[s, i] = left + right`` at the segment column ``col[i]`` of the ``z`` of
    each row (``row_start[r] <= i < row_start[r + 1]``), times ``factor[i]``."""
    n_seq, n_row = seqs.shape[0], seqs.shape[1]
    left = np.empty((seg_len, n_row))
    right = np.empty((seg_len, n_row))
    for s in range(n_seq):
        for r in range(n_row):
            left[0, r] = tail_l[s * n_row + r] * ar + seqs[s, r, a0]
            right[seg_len - 1, r] = tail_r[s * n_row + r]
        for c in range(1, seg_len):
            for r in range(n_row):
                left[c, r] = seqs[s, r, a0 + c] + left[c - 1, r] * ar
        for c in range(seg_len - 2, -1, -1):
            for r in range(n_row):
                right[c, r] = seqs[s, r, a0 + c + 1] * ar + right[c + 1, r] * ar
        for r in range(n_row):
            for i in range(row_start[r], row_start[r + 1]):
                out[s, i] = (left[col[i], r] + right[col[i], r]) * factor[i]


def _column_recursion(acc: NDArray[np.float64], ar: float) -> None:
    """``acc[c] += ar * acc[c - 1]`` for ``c = 1, 2, ...`` in place (rows of ``acc`` are columns of the recursion)."""
    tmp = np.empty(acc.shape[1])
    for c in range(1, acc.shape[0]):
        np.multiply(acc[c - 1], ar, out=tmp)
        acc[c] += tmp


def _bell_coefficients(levels: NDArray[np.integer], hu: float, N: float, K: int) -> NDArray[np.float64]:
    """``C[k, level, j]``: the coefficient of ``u^j`` in the complete Bell polynomial ``P_k`` of the scaled
    derivatives ``psi_m = p_m + q_m u`` at the levels ``t = sin(level hu)^2`` (see ``_median_by_levels``),
    for many levels at once."""
    fact = np.array([float(np.prod(np.arange(1, k + 1))) for k in range(K + 2)])
    binom = [[float(special.comb(k, i, exact=True)) for i in range(k + 1)] for k in range(K)]
    t = np.sin(levels * hu) ** 2
    sig = np.sqrt(t * (1.0 - t) / N)
    s_t, s_1t = sig / t, sig / (1.0 - t)
    d1 = sig / (t * (1.0 - t))
    p_m = [np.zeros_like(t), np.zeros_like(t)]
    q_m = [np.zeros_like(t), np.ones_like(t)]
    for m in range(2, K + 1):
        sgn = (-1.0) ** (m - 1)
        p_m.append(fact[m - 1] * (N - 2.0) * (sgn * t * s_t**m - (1.0 - t) * s_1t**m))
        q_m.append(fact[m - 1] * (sgn * s_t**m + s_1t**m) / d1)
    C = np.zeros((K, t.size, K))
    C[0, :, 0] = 1.0
    for k in range(K - 1):
        for i in range(k + 1):
            prev = binom[k][i] * C[k - i]
            C[k + 1] += p_m[i + 1][:, None] * prev
            C[k + 1, :, 1:] += q_m[i + 1][:, None] * prev[:, :-1]
    return C


def _median_by_levels(
    n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64], lo: NDArray[np.int32],
    hi: NDArray[np.int32], jz: NDArray[np.int32],
) -> tuple[NDArray[np.float64], list[float]]:
    """Posterior median and its expected loss for every ``z`` in ``O(n)``, by Taylor expansion around levels.

    With ``Phi_z(t) = sum_y G[z, y] w_y I_t(a + y, b + n - y)`` (``= P(z, theta <= t)``), the median
    solves ``Phi_z(t) = P(z) / 2``. At a fixed expansion point ``t_j`` (a *level*), every quantity is a
    sum over ``y`` against the geometric kernel, so for all ``z`` assigned to the level it costs two
    first-order recursions over the level's ``z`` plus two matrix-vector products for the rest of the
    counts that carry their posterior (``_posterior_windows``, :func:`_kernel_sums_at`): no
    per-``z`` window sum and no ``betainc`` per ``z``. The twelve moment sequences of the derivatives
    are formed only on the components' core (where ``sigma pdf_y(t) |u|^11 (n + 1) > e^-70``), which
    for small ``eps`` is narrower than the window.

    * ``I_t(a + y, ...)`` along ``y``: one ``betainc`` per level and the recurrence
      ``I_t(al + 1, be - 1) = I_t(al, be) - t pdf_y(t) / al`` (DLMF 8.17.21), absolute error a few ulps
      times the window length.
    * The ``t``-derivatives of ``Phi_z``: ``d/dt [w_y I_t] = g_y(t) = w_y pdf_y(t)``, and the ``k``-th
      derivative of ``g_y = exp(phi_y)`` is ``g_y P_k`` with the complete Bell polynomials
      ``P_(k+1) = sum_i C(k, i) phi_y^(i+1) P_(k-i)`` of the closed-form derivatives of
      ``phi_y = (al - 1) log t + (be - 1) log(1 - t)`` (scaled by the component width ``sigma``).
    * The expected loss ``D_y(t) = E|theta - t|`` under component ``y`` has ``D' = 2 I - 1`` and
      ``D'' = 2 pdf``, so the risk of ``z`` at the median follows from the same sums.

    The median of ``z`` is the root of the expansion around the level nearest to it (``|t - t_j| <=
    0.15 sigma`` with levels ``0.3 sigma`` apart); its truncation error (terms ``x^k / sqrt(k!)``, ``x
    <= 0.16``) is below ``1e-16`` relative. The levels come from ``jz`` (the posterior mean's), and a
    ``z`` whose root lies outside the trust region is moved to the level nearest the root and
    solved again. Rows that still fail (``t`` close to 0 or 1, underflowing ``P(z)``) are returned as
    NaN for the window method.

    The ``z`` are taken level by level: ``jz`` gives the first level of each (the level of its posterior
    mean, ``_posterior_mean_levels``); when these do not decrease in ``z`` (the posterior mean is
    monotone), the levels are runs of consecutive ``z`` and no permutation is formed. Memory: the
    estimates, and blocks of about ``_LEVEL_ENTRIES`` (level, count) entries.

    Returns
    -------
    estimates : ndarray, shape (n + 1,)
        Median of ``theta`` given ``z`` (NaN where not solved).
    risk_parts : list of float
        Partial sums of ``sum_y P(z, y) E|theta - median| / exp(max log w)`` over the solved ``z``.
    """
    K = _TAYLOR_TERMS
    N, hu, J = _level_grid(n, a, b)
    fact = np.array([float(np.prod(np.arange(1, k + 1))) for k in range(K + 2)])
    estimates: NDArray[np.float64] | None = None  # allocated once the first round's levels are known
    risk_parts: list[float] = []
    pending: NDArray[np.int64] | None = None  # the z of the round; None: all z, in increasing order
    for _ in range(8):
        if pending is not None and pending.size == 0:
            break
        zs: NDArray[np.int64] | None
        if pending is None and _non_decreasing(jz):  # runs of consecutive z: no permutation
            zs, js = None, jz
        else:
            if pending is None:
                pending = np.arange(n + 1)
            order = np.argsort(jz, kind="stable")
            zs, js = pending[order], jz[order]
            del order
        jz, pending = np.zeros(0, dtype=np.int32), None  # (the round's z are in zs / js: the arrays are freed)
        starts = _run_starts(js)
        levels = js[starts]
        ends = np.append(starts[1:], js.size)
        del js
        if estimates is None:
            estimates = np.full(n + 1, np.nan)
        if zs is None:
            zlo, zhi = starts, ends - 1
            ylo = np.minimum(np.minimum.reduceat(lo, starts), zlo)
            yhi = np.maximum(np.maximum.reduceat(hi, starts), zhi)
        else:
            zlo, zhi = np.minimum.reduceat(zs, starts), np.maximum.reduceat(zs, starts)
            ylo = np.minimum(np.minimum.reduceat(lo[zs], starts), zlo)
            yhi = np.maximum(np.maximum.reduceat(hi[zs], starts), zhi)
        blocks = []  # (r0, r1, pad_l, pad_r): blocks of levels; rows aligned on their smallest z, padded to the longest
        r0 = 0
        while r0 < levels.size:
            r1, pad_l, pad_r = r0, 0, 0
            while r1 < levels.size:
                pl, pr = max(pad_l, int(zlo[r1] - ylo[r1])), max(pad_r, int(yhi[r1] - zlo[r1]))
                if r1 - r0 >= _LEVEL_MIN_ROWS and (r1 - r0 + 1) * (pl + pr + 1) > _LEVEL_ENTRIES:
                    break
                pad_l, pad_r, r1 = pl, pr, r1 + 1
            blocks.append((r0, r1, pad_l, pad_r))
            r0 = r1
        # runs of blocks covering about _BELL_LEVELS levels share one call of _bell_coefficients (its values
        # are per level: the same bits whatever the run); the runs are independent and go to the threads
        runs: list[list[tuple[int, int, int, int]]] = [[]]
        for block in blocks:
            if runs[-1] and block[1] - runs[-1][0][0] > _BELL_LEVELS:
                runs.append([])
            runs[-1].append(block)

        def solve_run(run: list[tuple[int, int, int, int]]) -> list[tuple[float, NDArray[np.int64], NDArray[np.int64]]]:
            c_from = run[0][0]
            C_run = _bell_coefficients(levels[c_from:run[-1][1]], hu, N, K)
            return [solve_block(r0, r1, pad_l, pad_r, C_run[:, r0 - c_from:r1 - c_from]) for r0, r1, pad_l, pad_r in run]

        def solve_block(
            r0: int, r1: int, pad_l: int, pad_r: int, C: NDArray[np.float64]
        ) -> tuple[float, NDArray[np.int64], NDArray[np.int64]]:
            """Solve the z of levels ``r0..r1 - 1`` (``C[k, level, j]``: their Bell coefficients); writes their
            estimates, returns the risk of the solved ones and the z to retry with their new levels."""
            assert estimates is not None
            width = pad_l + pad_r + 1
            rows = slice(r0, r1)
            base = zlo[rows] - pad_l  # column c of row r is the count base[r] + c; zlo[r] is column pad_l
            t = np.sin(levels[rows] * hu) ** 2
            sig = np.sqrt(t * (1.0 - t) / N)
            ys = base[:, None] + np.arange(width)[None, :]
            valid = (ys >= ylo[rows, None]) & (ys <= yhi[rows, None])
            ysc = np.clip(ys, 0, n)
            yf = ysc.astype(float)
            al, be = a + yf, b + n - yf
            tc, lt, l1t = t[:, None], np.log(t)[:, None], np.log1p(-t)[:, None]
            y_first, y_last = int(ysc.min()), int(ysc.max())
            if y_last - y_first < ysc.size:  # log B(al, be) once per count of the block's range (the same bits)
                y_range = np.arange(y_first, y_last + 1, dtype=float)
                lbeta = special.betaln(a + y_range, b + n - y_range)[ysc - y_first]
                del y_range
            else:
                lbeta = special.betaln(al, be)
            with np.errstate(under="ignore", divide="ignore", over="ignore", invalid="ignore"):
                lw = np.where(valid, log_w[ysc], -np.inf)
                log_pdf = (al - 1.0) * lt + (be - 1.0) * l1t - lbeta
                w = np.exp(lw)
                g = np.exp(lw + log_pdf)
                d = np.where(valid, np.exp(log_pdf + lt - np.log(al)), 0.0)
            # I_t(al_y, be_y) from one betainc at the count whose component is centred nearest t
            anchor = np.clip(np.rint(t * N - a).astype(np.int64), ylo[rows], yhi[rows]) - base
            ridx = np.arange(r1 - r0)
            i_anchor = special.betainc(al[ridx, anchor], be[ridx, anchor], t)
            cex = np.concatenate((np.zeros((ridx.size, 1)), np.cumsum(d[:, :-1], axis=1)), axis=1)
            inc = np.clip(i_anchor[:, None] - (cex - cex[ridx, anchor][:, None]), 0.0, 1.0)
            v = w * inc
            wd = (al / N - tc) * (w - 2.0 * v) + 2.0 * tc * (1.0 - tc) * g / N
            # scaled derivatives psi_m = sigma^m phi_y^(m), each linear in y: psi_m = p_m + q_m u with
            # u = psi_1 (p_m, q_m per level); the Bell polynomials P_k are then polynomials in u whose
            # coefficients depend on the level only (:func:`_bell_coefficients`), so the sums need the
            # moments sum_y G g_y u^j
            d1 = sig / (t * (1.0 - t))
            # the moments need only the columns where some row's sigma pdf_y(t) |u|^(K - 1) (n + 1) is above
            # e^-70 (their terms are at most that share of P(z)): the components' core, not the whole window
            c0, c1 = pad_l, pad_l + int(np.max(zhi[rows] - zlo[rows]))
            u = (yf + (a - 1.0) - (N - 2.0) * tc) * d1[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                size = log_pdf + np.log(sig)[:, None] + (K - 1) * np.log(np.maximum(np.abs(u), 1.0)) + np.log(n + 1.0)
            kept = np.flatnonzero(np.any(valid & (size > -70.0), axis=0))
            g0 = min(c0, int(kept[0])) if kept.size else c0
            g1 = max(c1, int(kept[-1])) if kept.size else c1
            del size, kept
            seqs = np.empty((3,) + w.shape)
            seqs[0], seqs[1], seqs[2] = w, v, wd
            moms = np.empty((K,) + (w.shape[0], g1 - g0 + 1))
            moms[0] = g[:, g0:g1 + 1]
            u = u[:, g0:g1 + 1]
            for j in range(1, K):
                np.multiply(moms[j - 1], u, out=moms[j])
            # the z of these levels: their row and column; the two one-sided sums only at those columns
            z_blk = np.arange(starts[r0], ends[r1 - 1]) if zs is None else zs[starts[r0]:ends[r1 - 1]]
            row_of = np.repeat(np.arange(r1 - r0), ends[r0:r1] - starts[r0:r1])
            col = z_blk - base[row_of]
            S = _kernel_sums_at([(seqs, 0), (moms, g0)], eps, row_of, col, c0, c1, geometric_row_factors_at(z_blk, n, eps))
            del seqs, moms, ys, valid, ysc, yf, al, be, lbeta, lw, log_pdf, w, g, d, cex, inc, v, wd, u
            pz, phi0, rd0 = S[0], S[1], S[2]
            # T_k = sum_y G g_y P_k(u_y) = sum_j C[k, level, j] M_j: one matrix product per level
            T = np.empty((K, z_blk.size))  # rows T_k contiguous
            for r in range(r1 - r0):  # the z of a level are consecutive in z_blk
                first, last = starts[r0 + r] - starts[r0], ends[r0 + r] - starts[r0]
                np.matmul(C[:, r, :], S[3:, first:last], out=T[:, first:last])
            s_z, t_z = sig[row_of], t[row_of]
            x, rk, last = _roots_and_risks(T, s_z, t_z, pz, phi0, rd0, fact)
            ok = (np.abs(x) <= _TRUST) & (last <= _LAST_TERM * pz) & (pz > 1e-280) & np.isfinite(rk)
            estimates[z_blk[ok]] = t_z[ok] + s_z[ok] * x[ok]
            bad = ~ok
            j_new = _level_of(t_z[bad] + s_z[bad] * np.clip(x[bad], -8.0, 8.0), hu, J)
            moved = j_new != levels[r0 + row_of[bad]]
            return float(np.sum(rk[ok])), z_blk[bad][moved], j_new[moved]

        retry_z, retry_j = [], []
        for solved in thread_map(solve_run, runs):  # in block order: the same risk parts and retries as one thread
            for risk_part, z_again, j_again in solved:
                risk_parts.append(risk_part)
                retry_z.append(z_again)
                retry_j.append(j_again)
        pending = np.concatenate(retry_z) if retry_z else np.zeros(0, dtype=np.int64)
        jz = np.concatenate(retry_j).astype(np.int32) if retry_j else np.zeros(0, dtype=np.int32)
    assert estimates is not None
    return estimates, risk_parts


def _roots_and_risks(
    T: NDArray[np.float64], s_z: NDArray[np.float64], t_z: NDArray[np.float64], pz: NDArray[np.float64],
    phi0: NDArray[np.float64], rd0: NDArray[np.float64], fact: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The roots ``x`` of ``s_z sum_k T_(k-1) x^k / k! = P(z) / 2 - Phi_z(level)`` (``_median_by_levels``: the
    median is ``t_z + s_z x``), the risk at each root and the size of the expansion's last term there.

    ``T[k - 1]`` is the ``k``-th scaled derivative of ``Phi_z`` at the level; ``pz``, ``phi0`` and ``rd0`` are
    ``P(z)``, ``Phi_z`` and the component-averaged ``D_y`` there. Newton's method by :func:`_taylor_newton`;
    the risk ``rd0 + (2 phi0 - pz) s_z x + 2 s_z^2 x sum_(k >= 2) T_(k-2) x^k / k!`` by Horner.
    """
    K = T.shape[0]
    x = np.zeros(T.shape[1])
    target = 0.5 * pz - phi0
    tol = (1e-17 + 2e-16 * t_z) / s_z  # a step below 2e-16 t (in sigma units): converged
    coef_v = T / fact[1:K + 1, None]  # x^k / k! coefficients of the value (k = 1..K)
    coef_d = T / fact[0:K, None]  # and of its x-derivative
    _taylor_newton(coef_v, coef_d, s_z, target, tol, K, x)
    xk = x * x  # x^K by repeated products (only a threshold below)
    xk *= xk
    xk = xk * xk * xk if K == 12 else x**K
    last = np.abs(s_z * T[K - 1] * xk / fact[K])
    del xk
    acc = np.zeros_like(x)
    for k in range(K + 1, 1, -1):  # Horner: sum_(k >= 2) T_(k-2) x^k / k!, in place
        acc += T[k - 2] / fact[k]
        acc *= x
    rk = rd0 + (2.0 * phi0 - pz) * s_z * x + 2.0 * s_z**2 * x * acc
    return x, rk, last


def _taylor_newton(
    coef_v: NDArray[np.float64], coef_d: NDArray[np.float64], s_z: NDArray[np.float64], target: NDArray[np.float64],
    tol: NDArray[np.float64], K: int, x: NDArray[np.float64],
) -> None:
    """Newton's method on ``s_z sum_k coef_v[k - 1] x^k = target`` for every column, from ``x`` (updated in place).

    The value and its derivative by Horner (``coef_d`` the derivative's coefficients); a non-finite step
    counts as 0 and ``x`` stays in ``[-8, 8]``. The first four steps run on every column, the first two
    with the leading four terms only (``|x| <= 0.16``: about ``1e-6``); later steps only on the columns
    whose previous step exceeded ``tol``, until none does (at most 40 steps).
    """
    active = np.arange(x.size)
    for it in range(40):
        full = it < 4  # the first steps on every row (no gathers), then on the rows still moving
        kk = 4 if it < 2 else K  # the first two with the leading terms only (|x| <= 0.16: ~1e-6)
        xa = x if full else x[active]
        cv = coef_v if full else coef_v[:, active]
        cd = coef_d if full else coef_d[:, active]
        if it == 0:  # at x = 0: value 0 and derivative coef_d[0] (NaN, like Horner, if a coefficient is not finite)
            val = np.where(np.isfinite(cv[:kk]).all(axis=0), 0.0, np.nan)
            der = cd[0]
        else:
            val, der = np.zeros_like(xa), np.zeros_like(xa)
            for k in range(kk, 0, -1):  # Horner, in place
                val += cv[k - 1]
                val *= xa
                der *= xa
                der += cd[k - 1]
        sa, ta = (s_z, target) if full else (s_z[active], target[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = (sa * val - ta) / (sa * der)
        step = np.where(np.isfinite(step), step, 0.0)
        x_new = np.clip(xa - step, -8.0, 8.0)
        moving = np.abs(x_new - xa) > (tol if full else tol[active])
        if full:
            x[:] = x_new
            active = np.flatnonzero(moving)
        else:
            x[active] = x_new
            active = active[moving]
        if active.size == 0:
            break


def _non_decreasing(values: NDArray[np.int32]) -> bool:
    """Whether ``values`` never decreases, chunk by chunk (no array of ``len(values)`` booleans)."""
    for lo, hi in _chunk_bounds(values.size - 1):
        seg = values[max(lo - 1, 0):hi]
        if np.any(seg[1:] < seg[:-1]):
            return False
    return True


def _run_starts(values: NDArray[np.int32]) -> NDArray[np.int64]:
    """The indices where a run of equal ``values`` starts (``0`` first), chunk by chunk."""
    parts = [np.zeros(1, dtype=np.int64)]
    for lo, hi in _chunk_bounds(values.size - 1):
        seg = values[max(lo - 1, 0):hi]
        parts.append(np.flatnonzero(seg[1:] != seg[:-1]) + max(lo, 1))
    return np.concatenate(parts)
