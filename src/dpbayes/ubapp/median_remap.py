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
window method as the fallback where an expansion is not trusted. The squared-loss counterpart (the
posterior mean) is :func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap`; the release that uses both is
:class:`dpbayes.release.statistic.OptimalProportionRelease`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpbayes.core._extras import lazy_module
from dpbayes.core.geometric import geometric_kernel_sums, geometric_row_factors
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


def _posterior_windows(log_w: NDArray[np.float64], eps: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``[lo[z], hi[z]]``: the counts ``y`` whose share of ``P(z) = sum_y G[z, y] w_y`` is not negligible.

    A count is kept when ``w_y a^|z - y| >= _WINDOW_TOL / (n + 1) * sum_y' w_y' a^|z - y'|``; the
    window is the hull of those counts (a superset), found with prefix / suffix maxima of
    ``log w_y +- eps y`` and binary search, ``O(n log n)``. The sums ``sum_y' w_y' a^|z - y'|`` only
    place the threshold: they come from two first-order recursions in linear scale (``log_w <= 0``
    with maximum 0), or from cumulative ``logaddexp`` when some of them fall below ``1e-280``. The
    second binary search of each side runs only on the ``z`` whose first one lands on the wrong side.
    """
    from scipy.signal import lfilter

    n = log_w.size - 1
    a = float(np.exp(-eps))
    eps_y = eps * np.arange(n + 1, dtype=float)
    with np.errstate(under="ignore"):
        w = np.exp(log_w)
    level = lfilter([1.0], [1.0, -a], w)  # sum_{y <= z} a^(z - y) w_y
    level += lfilter([0.0, a], [1.0, -a], w[::-1])[::-1]  # + sum_{y > z}
    del w
    if np.min(level) > 1e-280:
        np.log(level, out=level)
    else:  # log space where the linear sums underflow
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
        del right
    level += np.log(_WINDOW_TOL) - np.log(n + 1.0)
    z = np.arange(n + 1)
    # first y (overall) with A_y = log w_y + eps y >= level + eps z: kept on the left of z if it is <= z;
    # otherwise the first y >= z with B_y = log w_y - eps y >= level - eps z
    pre = np.maximum.accumulate(log_w + eps_y)
    lo = np.searchsorted(pre, level + eps_y, side="left")
    need = np.flatnonzero(lo > z)
    np.maximum.accumulate(log_w - eps_y, out=pre)
    lo[need] = np.maximum(np.searchsorted(pre, level[need] - eps_y[need], side="left"), need)
    # last y with B_y >= level - eps z: kept on the right of z if it is >= z; otherwise the last y <= z
    # with A_y >= level + eps z (reversed suffix maxima)
    np.maximum.accumulate((log_w - eps_y)[::-1], out=pre)
    hi = n - np.searchsorted(pre, level - eps_y, side="left")
    need = np.flatnonzero(hi < z)
    np.maximum.accumulate((log_w + eps_y)[::-1], out=pre)
    hi[need] = np.minimum(n - np.searchsorted(pre, level[need] + eps_y[need], side="left"), need)
    del pre, level, eps_y, z
    np.clip(lo, 0, n, out=lo)
    np.clip(hi, 0, n, out=hi)
    np.maximum(hi, lo, out=hi)
    return lo.astype(np.int64, copy=False), hi.astype(np.int64, copy=False)


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

    Returns
    -------
    estimates : ndarray, shape (n + 1,)
        Posterior median of ``theta`` given ``z``.
    risk : float
        Exact Bayes risk ``E|theta - estimate|``.
    """
    y_all = np.arange(n + 1, dtype=float)
    log_w = _betabinom_logpmf_all(y_all, n, a, b)
    scale_log = float(np.max(log_w))
    log_w -= scale_log
    lbeta = special.betaln(a + y_all, b + n - y_all)
    del y_all
    lo_all, hi_all = _posterior_windows(log_w, eps)
    estimates, risk_z = _median_by_levels(
        n, eps, a, b, log_w, lo_all, hi_all, lbeta, _posterior_mean_guess(n, eps, a, b, log_w)
    )
    rest = np.flatnonzero(~np.isfinite(estimates))
    if rest.size:
        est_rest, risk_rest = _window_median_rows(n, eps, a, b, log_w, lo_all, hi_all, lbeta, rest)
        estimates[rest], risk_z[rest] = est_rest, risk_rest
    return estimates, float(np.exp(scale_log) * np.sum(risk_z))


def _betabinom_logpmf_all(y_all: NDArray[np.float64], n: int, a: float, b: float) -> NDArray[np.float64]:
    """:func:`dpbayes.ubapp.optimal.betabinom_logpmf` at ``y_all = 0, 1, ..., n``, bit for bit, without the
    Pochhammer factors of exponent 0 (``a = 1`` or ``b = 1``: ``log poch(x, 0) = 0`` exactly), which
    cost two thirds of that function for a uniform prior."""
    if max(a, b) > 30.0:
        return betabinom_logpmf(y_all, n, a, b)
    out = _log_poch(y_all + 1.0, a - 1.0) if a != 1.0 else np.zeros(n + 1)
    if b != 1.0:
        out += _log_poch(n - y_all + 1.0, b - 1.0)
    else:
        out += 0.0  # the sum with log poch(x, 0) = 0, as in betabinom_logpmf
    if a + b != 1.0:
        out -= _log_poch(np.array([n + 1.0]), a + b - 1.0)[0]
    else:
        out -= 0.0
    out -= special.betaln(a, b)
    return out


def _posterior_mean_guess(n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E[theta | z]``, the starting points of ``_median_by_levels``: the estimates of
    :func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap` by the same arithmetic, from the already scaled
    Beta-binomial log weights ``log_w`` (maximum 0) and without that function's second moment and risk."""
    with np.errstate(under="ignore"):
        w = np.exp(log_w)
    s0, s1 = geometric_kernel_sums(w, eps, 1)
    del w
    ok = s0 > 1e-280
    shift = np.zeros(n + 1)
    shift[ok] = s1[ok] / s0[ok]
    if not np.all(ok):
        shift[~ok] = _log_space_mean_offset(log_w, eps)[~ok]
    shift += a + np.arange(n + 1, dtype=float)
    shift /= a + b + n
    return shift


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
    scale_log = float(np.max(log_w))
    log_w = log_w - scale_log
    lo_all, hi_all = _posterior_windows(log_w, eps)
    lbeta = special.betaln(a + y_all, b + n - y_all)
    estimates, risk_z = _window_median_rows(n, eps, a, b, log_w, lo_all, hi_all, lbeta, np.arange(n + 1))
    return estimates, float(np.exp(scale_log) * np.sum(risk_z))


def _window_median_rows(
    n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64], lo_all: NDArray[np.int64],
    hi_all: NDArray[np.int64], lbeta: NDArray[np.float64], rows: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Median and ``sum_y P(z, y) E|theta - m_z| / exp(max log w)`` for the ``z`` in ``rows``, window sums."""
    y_all = np.arange(n + 1, dtype=float)
    alpha_all, beta_all = a + y_all, b + n - y_all
    log_c = np.log(geometric_row_factors(n, eps))
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
        log_joint = np.where(valid, log_c[z, None] + log_w[ys] - eps * np.abs(ys - z[:, None]), -np.inf)
        top = np.max(log_joint, axis=1, keepdims=True)
        joint = np.exp(log_joint - top)
        p = joint / joint.sum(axis=1, keepdims=True)  # P(y | z) on the window
        al, be, lb = alpha_all[ys], beta_all[ys], lbeta[ys]
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
_LEVEL_MIN_ROWS = 8  # levels per block at least (wide windows: fewer blocks, less per-block overhead)


def _kernel_sums_at(
    seqs: NDArray[np.float64], eps: float, row_of: NDArray[np.int64], col: NDArray[np.int64], c0: int, c1: int,
) -> NDArray[np.float64]:
    """``sum_y a^|c - y| seqs[s, r, y]`` (``a = e^-eps``) at ``(r, c) = (row_of[i], col[i])``: shape ``(S, len(col))``.

    All wanted columns lie in ``[c0, c1]``. The parts of the rows outside that segment enter through
    two tail sums per row and sequence, ``L = sum_(y < c0) a^(c0 - 1 - y) s_y`` and ``R = sum_(y > c1)
    a^(y - c1) s_y`` (two matrix-vector products against the kernel's powers ``e^(-eps m)``); inside the
    segment two first-order recursions (``lfilter`` started from the tails) give ``left[c] = s_c + a
    left[c - 1]`` and ``right[c] = a (s_(c + 1) + right[c + 1])``. The recursions thus run over the
    ``z`` of the levels only, not over their whole windows (about ``92 / eps`` wider).
    """
    from scipy.signal import lfilter

    ar = float(np.exp(-eps))
    den = [1.0, -ar]
    n_seq, n_row, width = seqs.shape
    flat = seqs.reshape(n_seq * n_row, width)  # a view: seqs is contiguous
    tail_l = flat[:, :c0] @ np.exp(-eps * np.arange(c0 - 1, -1, -1, dtype=float))
    tail_r = flat[:, c1 + 1:] @ np.exp(-eps * np.arange(1, width - c1, dtype=float))
    seg_len = c1 - c0 + 1
    if n_seq * n_row >= 512:  # many rows: a loop over the segment's columns (the arithmetic of lfilter)
        seg = np.ascontiguousarray(seqs[:, :, c0:c1 + 1].transpose(2, 1, 0))  # (column, row, sequence)
        acc = np.empty_like(seg)
        np.multiply(tail_l.reshape(n_seq, n_row).T, ar, out=acc[0])
        acc[0] += seg[0]
        for c in range(1, seg_len):
            np.multiply(acc[c - 1], ar, out=acc[c])
            acc[c] += seg[c]
        idx = (col - c0) * n_row + row_of
        out_l: NDArray[np.float64] = np.take(acc.reshape(seg_len * n_row, n_seq), idx, axis=0)
        acc[seg_len - 1] = tail_r.reshape(n_seq, n_row).T
        tmp = np.empty_like(seg[0])
        for c in range(seg_len - 2, -1, -1):
            np.multiply(seg[c + 1], ar, out=tmp)
            np.multiply(acc[c + 1], ar, out=acc[c])
            acc[c] += tmp
        out_l += np.take(acc.reshape(seg_len * n_row, n_seq), idx, axis=0)
        return out_l.T
    idx = row_of * seg_len + (col - c0)
    left = lfilter([1.0], den, flat[:, c0:c1 + 1], axis=-1, zi=(ar * tail_l)[:, None])[0]
    out: NDArray[np.float64] = np.take(left.reshape(n_seq, n_row * seg_len), idx, axis=1)
    del left
    right = lfilter([0.0, ar], den, flat[:, c1:c0 - 1 if c0 > 0 else None:-1], axis=-1, zi=tail_r[:, None])[0]
    idx = row_of * seg_len + (c1 - col)
    out += np.take(right.reshape(n_seq, n_row * seg_len), idx, axis=1)
    return out


def _bell_coefficients(levels: NDArray[np.int64], hu: float, N: float, K: int) -> NDArray[np.float64]:
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
    n: int, eps: float, a: float, b: float, log_w: NDArray[np.float64], lo: NDArray[np.int64],
    hi: NDArray[np.int64], lbeta: NDArray[np.float64], guess: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
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
    <= 0.16``) is below ``1e-16`` relative. The levels come from ``guess`` (the posterior mean), and a
    ``z`` whose root lies outside the trust region is moved to the level nearest the root and
    solved again. Rows that still fail (``t`` close to 0 or 1, underflowing ``P(z)``) are returned as
    NaN for the window method.

    Returns
    -------
    estimates, risk_z : ndarray, shape (n + 1,)
        Median of ``theta`` given ``z`` and ``sum_y P(z, y) E|theta - median| / exp(max log w)``
        (NaN where not solved).
    """
    K = _TAYLOR_TERMS
    N = n + a + b
    hu = _LEVEL_STEP / (2.0 * np.sqrt(N))
    J = int(np.floor(0.5 * np.pi / hu))
    c_row = geometric_row_factors(n, eps)
    fact = np.array([float(np.prod(np.arange(1, k + 1))) for k in range(K + 2)])
    estimates = np.full(n + 1, np.nan)
    risk_z = np.full(n + 1, np.nan)

    def level_of(t: NDArray[np.float64]) -> NDArray[np.int64]:
        return np.clip(np.rint(np.arcsin(np.sqrt(np.clip(t, 0.0, 1.0))) / hu), 1, max(J - 1, 1)).astype(np.int64)

    pending = np.arange(n + 1)
    jz = level_of(guess)
    del guess  # the caller keeps no reference: freed here
    for _ in range(8):
        if pending.size == 0:
            break
        order = np.argsort(jz, kind="stable")
        zs, js = pending[order], jz[order]
        del order
        starts = np.flatnonzero(np.concatenate(([True], js[1:] != js[:-1])))
        levels = js[starts]
        zlo, zhi = np.minimum.reduceat(zs, starts), np.maximum.reduceat(zs, starts)
        ylo = np.minimum(np.minimum.reduceat(lo[zs], starts), zlo)
        yhi = np.maximum(np.maximum.reduceat(hi[zs], starts), zhi)
        ends = np.append(starts[1:], zs.size)
        retry_z, retry_j = [], []
        c_from, c_to = 0, 0  # the Bell coefficients of levels[c_from:c_to] (at most ~1024 levels at a time)
        C_chunk = np.zeros((K, 0, K))
        r0 = 0
        while r0 < levels.size:  # blocks of levels; rows aligned on their smallest z, padded to the longest
            r1, pad_l, pad_r = r0, 0, 0
            while r1 < levels.size:
                pl, pr = max(pad_l, int(zlo[r1] - ylo[r1])), max(pad_r, int(yhi[r1] - zlo[r1]))
                if r1 - r0 >= _LEVEL_MIN_ROWS and (r1 - r0 + 1) * (pl + pr + 1) > _LEVEL_ENTRIES:
                    break
                pad_l, pad_r, r1 = pl, pr, r1 + 1
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
            with np.errstate(under="ignore", divide="ignore", over="ignore", invalid="ignore"):
                lw = np.where(valid, log_w[ysc], -np.inf)
                log_pdf = (al - 1.0) * lt + (be - 1.0) * l1t - lbeta[ysc]
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
            if r1 > c_to:
                c_from, c_to = r0, min(levels.size, max(r1, r0 + 1024))
                C_chunk = _bell_coefficients(levels[c_from:c_to], hu, N, K)
            C = C_chunk[:, r0 - c_from:r1 - c_from]  # C[k, level, j]: coefficient of u^j in P_k
            seqs = np.empty((3,) + w.shape)
            seqs[0], seqs[1], seqs[2] = w, v, wd
            moms = np.empty((K,) + (w.shape[0], g1 - g0 + 1))
            moms[0] = g[:, g0:g1 + 1]
            u = u[:, g0:g1 + 1]
            for j in range(1, K):
                np.multiply(moms[j - 1], u, out=moms[j])
            # the z of these levels: their row and column; the two one-sided sums only at those columns
            z_blk = zs[starts[r0]:ends[r1 - 1]]
            row_of = np.repeat(np.arange(r1 - r0), ends[r0:r1] - starts[r0:r1])
            col = z_blk - base[row_of]
            S = np.concatenate((
                _kernel_sums_at(seqs, eps, row_of, col, c0, c1),
                _kernel_sums_at(moms, eps, row_of, col - g0, c0 - g0, c1 - g0),
            ))
            S *= c_row[z_blk]
            pz, phi0, rd0 = S[0], S[1], S[2]
            # T_k = sum_y G g_y P_k(u_y) = sum_j C[k, level, j] M_j: a batched product per level
            counts = ends[r0:r1] - starts[r0:r1]
            slot = np.arange(z_blk.size) - np.repeat(starts[r0:r1] - starts[r0], counts)
            M = np.zeros((r1 - r0, int(counts.max()), K))
            M[row_of, slot] = S[3:].T
            T = np.ascontiguousarray(np.matmul(M, C.transpose(1, 2, 0))[row_of, slot].T)  # rows T_k contiguous
            s_z, t_z = sig[row_of], t[row_of]
            x = np.zeros(z_blk.size)
            target = 0.5 * pz - phi0
            tol = (1e-17 + 2e-16 * t_z) / s_z  # a step below 2e-16 t (in sigma units): converged
            coef_v = T / fact[1:K + 1, None]  # x^k / k! coefficients of the value (k = 1..K)
            coef_d = T / fact[0:K, None]  # and of its x-derivative
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
                    x = x_new
                    active = np.flatnonzero(moving)
                else:
                    x[active] = x_new
                    active = active[moving]
                if active.size == 0:
                    break
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
            ok = (np.abs(x) <= _TRUST) & (last <= _LAST_TERM * pz) & (pz > 1e-280) & np.isfinite(rk)
            estimates[z_blk[ok]] = t_z[ok] + s_z[ok] * x[ok]
            risk_z[z_blk[ok]] = rk[ok]
            bad = ~ok
            j_new = level_of(t_z[bad] + s_z[bad] * np.clip(x[bad], -8.0, 8.0))
            moved = j_new != levels[r0 + row_of[bad]]
            retry_z.append(z_blk[bad][moved])
            retry_j.append(j_new[moved])
            r0 = r1
        pending = np.concatenate(retry_z) if retry_z else np.zeros(0, dtype=np.int64)
        jz = np.concatenate(retry_j) if retry_j else np.zeros(0, dtype=np.int64)
    return estimates, risk_z
