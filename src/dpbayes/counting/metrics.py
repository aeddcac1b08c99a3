"""Exact error metrics of the Bayes estimates of a Laplace-noised count (Naldi & D'Acquisto, Section 4).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (equation numbers below refer to it).

The paper measures each estimator of the count ``C`` (``dpbayes.counting.model.ESTIMATORS``) by its
mean absolute error ``E|C - estimate(Y)|`` and by the probability that it lands strictly closer to
``C`` than the noisy response itself, both by Monte Carlo (its Section 4.2). Here both are integrals
over the response ``y`` of functions that are piecewise smooth between break points, computed exactly
(Gauss-Legendre on the pieces, break points located by root finding) on the posterior of
:mod:`dpbayes.counting.model`; :func:`monte_carlo_metrics` is the paper's simulation, as a cross-check.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbayes.counting.model import (
    _FULL_SUPPORT_MAX_N,
    _Y_MARGIN_LOG,
    ESTIMATORS,
    _binom_logpmf,
    _check_model,
    _estimator_values,
    _Posterior,
)
from dpbayes.core.validation import check_choice, check_int, check_rng

__all__ = ["mean_abs_error", "prob_lower_error", "monte_carlo_metrics"]


_SUBDIV = 8  # sub-intervals per unit interval scanned for break points (at least 2 eps)
#: The same on the prior's window: 8-point Gauss-Legendre on pieces of width <= 1/2 (and <= 1/(2 eps)).
#: Between break points the integrand is analytic in a strip of half-width pi / (2 eps) (the zeros of the
#: posterior's normaliser), so the rule's relative error is about rho^-16 with rho >= 4 pi: ~1e-17.
#: Measured against 1/4-unit pieces: within 2.3e-14 relative (eps = 1, n = 10**6) and 1.5e-13 (eps = 0.3,
#: n = 10**5, break points of the prob metric located to 3e-14); the naive MAE = 1/eps to 3e-15.
_SUBDIV_WINDOW = 2
_GAUSS = np.polynomial.legendre.leggauss(8)
_BISECT_STEPS = 44  # halves a sub-interval (<= 1/8) down to ~1e-14


def _labels(post: _Posterior, name: str, y: NDArray[np.float64], metric: str) -> NDArray[np.int64]:
    """Integer label that is constant wherever the metric's integrand is smooth."""
    m = _estimator_values(post, name, y)
    if metric == "abs":
        return np.floor(m).astype(np.int64)
    mid = np.floor(0.5 * (y + m)).astype(np.int64)
    return 3 * mid + np.sign(y - m).astype(np.int64)


def _mean_turning_points(post: _Posterior) -> NDArray[np.float64]:
    """Points of ``(j, j + 1)`` where the posterior mean has slope 1 (turning points of ``y - m``).

    On ``[j, j + 1)`` the posterior mean is ``m_L + (m_R - m_L) s(2 eps y + log(B0 / A0))`` with
    ``s`` the logistic function, ``m_L = A1 / A0`` and ``m_R = B1 / B0`` (left and right sums of
    the module docstring), so ``m' = 1`` where ``s (1 - s) = 1 / (2 eps (m_R - m_L))``.
    """
    j = np.arange(post.m)
    la0, la1 = post.log_left[0][j + 1], post.log_left[1][j + 1]
    lb0, lb1 = post.log_right[0][j + 1], post.log_right[1][j + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spread = np.exp(lb1 - lb0) - np.exp(la1 - la0)
        c = 1.0 / (2.0 * post.eps * spread)
        root = np.sqrt(1.0 - 4.0 * c)
        pts = []
        for sig in ((1.0 - root) / 2.0, (1.0 + root) / 2.0):
            logit = np.log(sig) - np.log1p(-sig)
            pts.append((logit - lb0 + la0) / (2.0 * post.eps))
    pts_arr = np.concatenate(pts)
    seg = np.concatenate((j, j)).astype(float)
    keep = np.isfinite(pts_arr) & (pts_arr > seg) & (pts_arr < seg + 1)
    return post.c0 + pts_arr[keep]


def _mean_integer_crossings(post: _Posterior) -> NDArray[np.float64]:
    """Every ``y`` where the posterior mean crosses an integer, in closed form (a window's posterior).

    On ``[j, j + 1)`` (window coordinates, ``d = y - c0 - j``) the mean is ``c0 + j + (u X - Y) / (L0 + u R0)``
    with ``u = e^{-eps (1 - 2 d)}``, ``X = R1c[j + 1] + R0[j + 1]``, ``Y = L1c[j]``, ``L0 = L0[j]``,
    ``R0 = R0[j + 1]`` (:attr:`_Posterior.lin`): increasing in ``d`` (the Laplace likelihood has a
    monotone likelihood ratio), so it equals ``c0 + j + s`` at ``u = (s L0 + Y) / (X - s R0)``. Outside
    the window's counts the mean is constant. Replaces 44 bisection steps per crossing.
    """
    assert post.lin is not None
    _, l0, l1c, r0, r1c = post.lin
    if post.m < 1:
        return np.empty(0)
    j = np.arange(post.m)  # segments [j, j + 1) inside the window's counts
    x = r1c[j + 1] + r0[j + 1]
    yy = l1c[j + 1]
    a0, b0 = l0[j + 1], r0[j + 1]
    ea = float(np.exp(-post.eps))
    e_left = (ea * x - yy) / (a0 + ea * b0)  # d = 0: u = e^-eps
    e_right = (x / ea - yy) / (a0 + b0 / ea)  # d = 1: u = e^eps
    first = np.floor(j + e_left).astype(np.int64) + 1
    last = np.floor(j + e_right).astype(np.int64)
    count = np.maximum(last - first + 1, 0)
    seg = np.repeat(np.arange(j.size), count)
    target = np.repeat(first, count) + (np.arange(seg.size) - np.repeat(np.cumsum(count) - count, count))
    sv = (target - j[seg]).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = (sv * a0[seg] + yy[seg]) / (x[seg] - sv * b0[seg])
        d = 0.5 * (1.0 + np.log(u) / post.eps)
    keep = np.isfinite(d) & (d > 0.0) & (d < 1.0)
    return post.c0 + (j[seg][keep] + d[keep])


_ROOT_MAX_ITER = 200  # Illinois steps (a bisection step whenever the secant point leaves the bracket)


def _illinois(
    h: Any, a: NDArray[np.float64], b: NDArray[np.float64], fa: NDArray[np.float64], fb: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Roots of ``h(idx, y)`` (vectorised; ``idx`` selects the problem) bracketed by ``h(a) < 0 <= h(b)``.

    Illinois (regula falsi with the kept end's value halved when the same end is kept twice), every
    problem at once, safeguarded: a secant point on or outside the bracket moves one ulp inside it, and
    a bracket that has not halved in three steps is bisected. Each problem stops where ``h`` is exactly
    0 or where its bracket holds no double strictly inside (the double-precision resolution of ``y``);
    returns the bracket's midpoint, the first ``y`` with ``h >= 0`` to an ulp, like a bisection run to
    the end.
    """
    out = np.empty(a.size)
    hit = fb == 0.0
    out[hit] = b[hit]
    idx = np.nonzero(~hit)[0]
    a, b, fa, fb = a[idx], b[idx], fa[idx], fb[idx]
    side = np.zeros(idx.size, dtype=np.int8)
    wref = b - a
    stall = np.zeros(idx.size, dtype=np.int8)
    for _ in range(_ROOT_MAX_ITER):
        done = np.nextafter(a, b) >= b
        if done.any():
            out[idx[done]] = 0.5 * (a[done] + b[done])
            keep = ~done
            idx, side, stall = idx[keep], side[keep], stall[keep]
            a, b, fa, fb, wref = a[keep], b[keep], fa[keep], fb[keep], wref[keep]
        if idx.size == 0:
            return out
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            c = a - fa * ((b - a) / (fb - fa))
        c = np.where(c > a, c, np.nextafter(a, b))
        c = np.where(c < b, c, np.nextafter(b, a))
        c = np.where(stall >= 3, 0.5 * (a + b), c)
        fc = h(idx, c)
        neg = fc < 0.0
        # Illinois: the end kept a second time in a row has its value halved
        fb = np.where(neg, np.where(side == -1, 0.5 * fb, fb), fc)
        fa = np.where(neg, fc, np.where(side == 1, 0.5 * fa, fa))
        a = np.where(neg, c, a)
        b = np.where(neg, b, c)
        side = np.where(neg, -1, 1).astype(np.int8)
        halved = (b - a) <= 0.5 * wref
        wref = np.where(halved, b - a, wref)
        stall = np.where(halved, 0, stall + 1).astype(np.int8)
        zero = fc == 0.0
        if zero.any():
            out[idx[zero]] = c[zero]
            keep = ~zero
            idx, side, stall = idx[keep], side[keep], stall[keep]
            a, b, fa, fb, wref = a[keep], b[keep], fa[keep], fb[keep], wref[keep]
    raise RuntimeError("break points of the prob metric: root finder did not converge")  # pragma: no cover


def _mean_local(
    post: _Posterior, y: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
    """The posterior mean on a window in window coordinates: ``(raw, d, jl, e, inside)``.

    ``raw = y - c0`` (exact on the window: Sterbenz), ``d = raw - jl`` (exact) and ``e = m - c0 - jl``
    from the centred sums, as in :meth:`_Posterior.mean`; ``inside`` where neither ``y`` nor the mean is
    clipped to the window's counts (elsewhere ``m - c0`` is ``jl + e`` clipped, see :meth:`_Posterior.mean`).
    """
    assert post.lin is not None
    _, l0, l1c, r0, r1c = post.lin
    raw = y - post.c0
    ys = np.clip(raw, 0.0, float(post.m))
    jl = np.minimum(np.floor(ys), post.m - 1).astype(np.int64) if post.m > 0 else np.zeros(ys.shape, np.int64)
    d = ys - jl
    fa, fb = np.exp(-post.eps * d), np.exp(-post.eps * (1.0 - d))
    e = (fb * (r1c[jl + 1] + r0[jl + 1]) - fa * l1c[jl + 1]) / (fa * l0[jl + 1] + fb * r0[jl + 1])
    m_loc = jl + e
    inside = (m_loc >= 0.0) & (m_loc <= post.m) & (raw == ys)
    return raw, d, jl, e, inside


def _y_minus_mean(post: _Posterior, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``y - m(y)`` for the posterior mean on a window, computed in window coordinates as ``d - e``.

    ``d`` is exact and ``e`` keeps its relative digits (:func:`_mean_local`), so the difference keeps
    its digits where ``y`` and ``m`` agree to many places; ``y - mean(y)`` in absolute coordinates rounds
    ``m`` to an ulp of ``c0 + m`` first (4e-12 at ``y ~ 3e4``, 5e-10 at ``3e6``), which moves the root by
    that over the slope of ``y - m`` (as small as 1e-3 near the prior's mean).
    """
    raw, d, jl, e, inside = _mean_local(post, y)
    return np.where(inside, d - e, raw - np.clip(jl + e, 0.0, post.m))


def _y_plus_mean_minus(post: _Posterior, y: NDArray[np.float64], two_k_loc: NDArray[np.float64]) -> NDArray[np.float64]:
    """``y + m(y) - 2K`` in window coordinates (``two_k_loc = 2K - 2 c0``), as ``(d + e) + (2 jl - two_k_loc)``."""
    raw, d, jl, e, inside = _mean_local(post, y)
    return np.where(inside, (d + e) + (2.0 * jl - two_k_loc), (raw + np.clip(jl + e, 0.0, post.m)) - two_k_loc)


def _mean_prob_breaks(post: _Posterior, grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Label changes of the ``mean`` estimator's prob metric between the points of ``grid``, exactly.

    ``grid`` must hold the turning points of ``y - m(y)`` (:func:`_mean_turning_points`), so that
    between two of its points ``y - m`` changes sign at most once; ``y + m(y)`` is increasing (the
    posterior mean is, by the Laplace likelihood's monotone likelihood ratio). The breaks are the
    roots of ``y + m(y) - 2K`` for every integer ``K`` that ``(y + m) / 2`` passes, and of ``y - m``,
    found together by :func:`_illinois`. The signs of these differences are those of the labels of
    :func:`_labels` exactly (``floor((y + m) / 2) >= K`` iff ``fl(y + m) >= 2K``), so the roots are
    the points the bisection converged to, to the resolution of ``y``.
    """
    m = post.mean(grid)
    s = grid + m
    kq = np.floor(0.5 * s)
    i1 = np.nonzero(kq[1:] > kq[:-1])[0]
    count = (kq[i1 + 1] - kq[i1]).astype(np.int64)
    seg1 = np.repeat(i1, count)
    k1 = np.repeat(kq[i1] + 1.0, count) + (np.arange(seg1.size) - np.repeat(np.cumsum(count) - count, count))
    ymm = _y_minus_mean(post, grid)
    sg = np.sign(ymm)
    i2 = np.nonzero(sg[1:] != sg[:-1])[0]
    at_lo = sg[i2] == 0.0  # y = m exactly at a grid point: the label changes there
    on_grid = grid[i2[at_lo]]
    i2 = i2[~at_lo]
    k2 = 2.0 * (k1 - post.c0)  # 2K in window coordinates (exact)
    sgn = -sg[i2]  # h >= 0 once y - m has left its sign at the interval's left end

    def h_mid(idx: NDArray[np.int64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        return _y_plus_mean_minus(post, y, k2[idx])

    def h_side(idx: NDArray[np.int64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        return sgn[idx] * _y_minus_mean(post, y)

    mid_lo, mid_hi = grid[seg1], grid[seg1 + 1]
    roots_mid = _illinois(h_mid, mid_lo, mid_hi, _y_plus_mean_minus(post, mid_lo, k2), _y_plus_mean_minus(post, mid_hi, k2))
    roots_side = _illinois(h_side, grid[i2], grid[i2 + 1], sgn * ymm[i2], sgn * ymm[i2 + 1])
    return np.concatenate((roots_mid, roots_side, on_grid))


def _pieces(post: _Posterior, name: str, metric: str, bisect: bool = False) -> NDArray[np.float64]:
    """Break points of the integrand on ``[0, n]``: a fine grid plus the label changes, bisected, or
    (``mean`` and ``prob`` on the prior's window, unless ``bisect``) found by :func:`_mean_prob_breaks`."""
    # features of the posterior have width ~1/eps: scan more finely for large eps
    full = post.c0 == 0 and post.m == post.n
    subdiv = int(min(64, max(_SUBDIV if full else _SUBDIV_WINDOW, np.ceil(2 * post.eps))))
    y_lo, y_hi = _response_window(post)
    grid = np.linspace(y_lo, y_hi, (y_hi - y_lo) * subdiv + 1)
    if name == "mean" and metric == "abs" and post.lin is not None:
        return np.unique(np.concatenate((grid, _mean_integer_crossings(post))))
    lab = _labels(post, name, grid, metric)
    change = np.nonzero(lab[1:] != lab[:-1])[0]
    start, end = grid[change], grid[change + 1]
    lab_start, lab_end = lab[change], lab[change + 1]
    found = [grid]
    if name == "mean" and metric == "prob":
        # y - m(y) need not be monotone; split at its turning points so that it changes sign at
        # most once between grid points
        turns = _mean_turning_points(post)
        found.append(turns)
        grid = np.unique(np.concatenate((grid, turns)))
        if post.lin is not None and not bisect:
            return np.unique(np.concatenate((grid, _mean_prob_breaks(post, grid))))
        lab = _labels(post, name, grid, metric)
        change = np.nonzero(lab[1:] != lab[:-1])[0]
        start, end = grid[change], grid[change + 1]
        lab_start, lab_end = lab[change], lab[change + 1]
    # A sub-interval may hold several changes (e.g. the midpoint crosses an integer and y - m
    # changes sign): bisect for the first change, then repeat on the rest of the interval.
    for _ in range(8):
        if start.size == 0:
            break
        lo, hi = start.copy(), end.copy()
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            same = _labels(post, name, mid, metric) == lab_start
            lo = np.where(same, mid, lo)
            hi = np.where(same, hi, mid)
        found.append(0.5 * (lo + hi))
        lab_hi = _labels(post, name, hi, metric)
        more = (lab_hi != lab_end) & (hi < end)
        start, end, lab_start, lab_end = hi[more], end[more], lab_hi[more], lab_end[more]
    return np.unique(np.concatenate(found))


def _integrand(post: _Posterior, name: str, y: NDArray[np.float64], metric: str) -> NDArray[np.float64]:
    """Marginal density times the posterior expected loss (abs) or win probability (prob)."""
    j = post.segment(y)
    lz0 = post.log_z(y, j, 0)
    lz1 = post.log_z(y, j, 1)
    density = 0.5 * post.eps * np.exp(lz0)
    e1 = np.exp(lz1 - lz0)  # posterior mean of c - c0
    m = post.c0 + np.clip(e1, 0.0, post.m) if name == "mean" else _estimator_values(post, name, y)
    if metric == "abs":
        t = np.floor(m).astype(np.int64)
        f0 = post.cdf(t, y, j, lz0, 0, lz0)
        f1 = post.cdf(t, y, j, lz0, 1, lz1)
        # E|C - m| = m (2 F0(m) - 1) - 2 F1(m) + E[C], all in the shifted coordinate c - c0
        loss = (m - post.c0) * (2.0 * f0 - 1.0) - 2.0 * f1 + e1
        return density * np.maximum(loss, 0.0)
    mid = 0.5 * (y + m)
    # |c - m| < |c - y|  <=>  c < mid when y > m,  c > mid when y < m
    win_low = post.cdf(np.ceil(mid).astype(np.int64) - 1, y, j, lz0, 0, lz0)
    win_high = 1.0 - post.cdf(np.floor(mid).astype(np.int64), y, j, lz0, 0, lz0)
    win = np.where(y > m, win_low, np.where(y < m, win_high, 0.0))
    return density * np.clip(win, 0.0, 1.0)


def _integrand_local(
    post: _Posterior, name: str, j: NDArray[np.int64], d: NDArray[np.float64], metric: str = "abs"
) -> NDArray[np.float64]:
    """:func:`_integrand` on a window, at ``y = c0 + j + d`` (``j`` an integer), from :attr:`_Posterior.lin`.

    The response is passed as an integer and a fraction so that the quadrature nodes keep their
    digits: at ``y ~ 10**7`` an ulp is ``2e-9``, and nodes shifted by it (the same way in every piece)
    left ``2e-12`` of error in the naive MAE at ``n = 10**7``, ``eps = 5``.

    With ``j`` the segment of ``ys``, ``d = ys - j``, ``A = e^{-eps d}`` and ``B = e^{-eps (1 - d)}``
    (sums of :attr:`_Posterior.lin`, relative to ``e^top``): ``Z = A L0[j] + B R0[j + 1]`` and
    ``Z E[C - c0 - j | y] = B (R1c[j + 1] + R0[j + 1]) - A L1c[j]``, two terms of the size of the
    posterior's spread around ``y``. With ``t = floor(m)``, ``E|C - m| = (m - t)(2 F0(t) - 1) + S_below
    + S_above``, ``S_below = sum_{c <= t} (t - c) P(c | y)``, ``S_above = sum_{c > t} (c - t) P(c | y)``:
    the side of ``t`` away from ``y`` comes straight from the centred sums, the other one from
    ``S_above - S_below = E[C] - t`` (``= m - t`` for the posterior mean). Every term is of the size of
    ``|m - y|`` plus the posterior's spread, never of the window's (13.6 sd): the log-space form
    subtracted terms of that size and lost ``1e-11`` at ``n = 10**6``, ``eps = 5``.
    """
    assert post.lin is not None
    _, l0, l1c, r0, r1c = post.lin
    eps, mm = post.eps, post.m
    # j outside [-1, m]: move it to the nearest end (the kernel factors then exceed 1 on the empty side)
    jc = np.clip(j, -1, mm)
    d = d + (j - jc)
    j = jc
    with np.errstate(over="ignore", invalid="ignore"):
        # A multiplies zero at j = -1 and B at j = m, where the other factor may be large
        a_fac = np.where(j >= 0, np.exp(-eps * d), 0.0)
        b_fac = np.where(j < mm, np.exp(-eps * (1.0 - d)), 0.0)
    left0, right0 = a_fac * l0[j + 1], b_fac * r0[j + 1]
    z = left0 + right0
    e = (b_fac * (r1c[j + 1] + r0[j + 1]) - a_fac * l1c[j + 1]) / z  # E[C - c0 - j | y]
    # the estimate minus c0 + j
    if name == "mean":
        m_j = np.clip(e, -j.astype(float), (mm - j).astype(float))
    elif name == "median":
        m_j = post.median(post.c0 + (j + d)) - (post.c0 + j)
    elif name == "clamped":
        m_j = np.clip(d, -float(post.c0) - j, float(post.n - post.c0) - j)
    else:
        m_j = d
    density = 0.5 * eps * np.exp(post.lin[0]) * z
    if metric == "prob":
        # |c - m| < |c - y|  <=>  c < mid when y > m,  c > mid when y < m  (mid = (y + m) / 2)
        mid = 0.5 * (d + m_j)
        t_low = np.clip(j + np.ceil(mid).astype(np.int64) - 1, -1, mm)
        t_high = np.clip(j + np.floor(mid).astype(np.int64), -1, mm)
        win_low = _cdf_local(post, j, d, z, t_low)
        win_high = 1.0 - _cdf_local(post, j, d, z, t_high)
        win = np.where(d > m_j, win_low, np.where(d < m_j, win_high, 0.0))
        return density * np.clip(win, 0.0, 1.0)
    t = np.clip(j + np.floor(m_j).astype(np.int64), -1, mm)
    frac = m_j - (t - j)
    mean_minus_t = (j - t) + e  # E[C - c0 - t | y]
    left_side = t <= j
    tl = np.where(left_side, t, j)  # keeps the unused branch's indices in range
    tr = np.where(left_side, j, t)
    with np.errstate(under="ignore"):
        kl = np.exp(-eps * ((j - tl) + d))  # kernel from count t (<= y) to y
        kr = np.exp(-eps * ((tr + 1 - j) - d))  # kernel from count t + 1 (> y) to y
    # t <= j: the left sums at t; t > j: the right sums at t + 1
    below_l = kl * l1c[tl + 1] / z
    f0_l = kl * l0[tl + 1] / z
    above_r = kr * (r1c[tr + 1] + r0[tr + 1]) / z
    f0_r = 1.0 - kr * r0[tr + 1] / z
    s_below = np.where(left_side, below_l, above_r - mean_minus_t)
    s_above = np.where(left_side, below_l + mean_minus_t, above_r)
    f0 = np.where(left_side, f0_l, f0_r)
    loss = frac * (2.0 * f0 - 1.0) + s_below + s_above
    return density * np.maximum(loss, 0.0)


def _prob_local(post: _Posterior, name: str, a_loc: NDArray[np.float64], b_loc: NDArray[np.float64]) -> float:
    """The ``prob`` integral over pieces ``[a_loc, b_loc]`` (window coordinates) in closed form.

    On a piece the label of :func:`_labels` is constant: the estimate is on one side of ``y`` and the
    threshold ``t`` of the win probability is fixed. The density times the win probability is then
    ``(eps / 2) e^top`` times ``z F0(t)`` or ``z (1 - F0(t))``, a combination of ``e^{-eps d}`` and
    ``e^{eps d}`` with constant coefficients (:func:`_cdf_local`): integrated exactly, no nodes.
    """
    assert post.lin is not None
    top, l0, _, r0, _ = post.lin
    eps, mm = post.eps, post.m
    jp = np.floor(0.5 * (a_loc + b_loc)).astype(np.int64)
    j = np.clip(jp, -1, mm)
    d1 = (a_loc - jp) + (jp - j)
    d2 = (b_loc - jp) + (jp - j)
    dm = 0.5 * (d1 + d2)
    # the estimate and the side of y at the piece's midpoint
    if name == "naive":
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        fa = np.where(j >= 0, np.exp(-eps * dm), 0.0)
        fb = np.where(j < mm, np.exp(-eps * (1.0 - dm)), 0.0)
        z = fa * l0[j + 1] + fb * r0[j + 1]
    if name == "mean":
        _, _, l1c, _, r1c = post.lin
        e = (fb * (r1c[j + 1] + r0[j + 1]) - fa * l1c[j + 1]) / z
        m_j = np.clip(e, -j.astype(float), (mm - j).astype(float))
    elif name == "median":
        m_j = post.median(post.c0 + (j + dm)) - (post.c0 + j)
    else:  # clamped
        m_j = np.clip(dm, -float(post.c0) - j, float(post.n - post.c0) - j)
    mid = 0.5 * (dm + m_j)
    above = dm > m_j  # y > m: wins for c <= t_low; y < m: wins for c > t_high
    t = np.where(above, j + np.ceil(mid).astype(np.int64) - 1, j + np.floor(mid).astype(np.int64))
    t = np.clip(t, -1, mm)
    width = -np.expm1(-eps * (d2 - d1)) / eps
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        ia = np.where(j >= 0, np.exp(-eps * d1) * width, 0.0)  # int e^{-eps d}
        ib = np.where(j < mm, np.exp(-eps * (1.0 - d2)) * width, 0.0)  # int e^{-eps (1 - d)}
        left_side = t <= j
        tl = np.where(left_side, t, j)
        tr = np.where(left_side, j, t)
        below_t = np.exp(-eps * (j - tl)) * l0[tl + 1] * ia  # int z F0(t), t <= j
        above_t = np.exp(-eps * (tr - j)) * r0[tr + 1] * ib  # int z (1 - F0(t)), t > j
    total = l0[j + 1] * ia + r0[j + 1] * ib
    low = np.where(left_side, below_t, total - above_t)  # int z F0(t)
    win = np.where(above, low, total - low)
    win = np.where(dm == m_j, 0.0, np.clip(win, 0.0, total))
    return float(0.5 * eps * np.exp(top) * np.sum(win))


def _cdf_local(
    post: _Posterior, j: NDArray[np.int64], d: NDArray[np.float64], z: NDArray[np.float64], t: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``P(C - c0 <= t | y)`` at ``y = c0 + j + d`` (``j`` in ``[-1, m]``, ``t`` in ``[-1, m]``; ``z`` as in
    :func:`_integrand_local`): the left sum at ``t`` when ``t <= j``, else one minus the right sum at ``t + 1``."""
    assert post.lin is not None
    _, l0, _, r0, _ = post.lin
    left_side = t <= j
    tl = np.where(left_side, t, j)
    tr = np.where(left_side, j, t)
    with np.errstate(under="ignore"):
        below = np.exp(-post.eps * ((j - tl) + d)) * l0[tl + 1] / z
        above = np.exp(-post.eps * ((tr + 1 - j) - d)) * r0[tr + 1] / z
    return np.where(left_side, below, 1.0 - above)


def _tails(post: _Posterior, name: str, metric: str) -> float:
    """Exact contribution of ``y < 0`` and ``y > n``, where every estimator but naive is constant."""
    n, eps = post.n, post.eps
    c = post.c0 + np.arange(post.m + 1, dtype=float)
    log_w = _binom_logpmf(c, n, post.p, accurate=post.m < n)
    # P(Y < 0 | c) = e^{-eps c} / 2 and P(Y > n | c) = e^{-eps (n - c)} / 2
    low_w = 0.5 * np.exp(log_w - eps * c)
    high_w = 0.5 * np.exp(log_w - eps * (n - c))
    if name == "naive":
        if metric == "prob":
            return 0.0
        # E[|c - Y| ; Y < 0 | c] = e^{-eps c} (c + 1/eps) / 2, and symmetrically above n
        return float(np.sum(low_w * (c + 1.0 / eps)) + np.sum(high_w * (n - c + 1.0 / eps)))
    m_low = float(_estimator_values(post, name, np.array([-1.0]))[0])
    m_high = float(_estimator_values(post, name, np.array([n + 1.0]))[0])
    if metric == "abs":
        return float(np.sum(low_w * np.abs(c - m_low)) + np.sum(high_w * np.abs(c - m_high)))
    # below 0 (y < m_low): wins for y < 2c - m_low; above n (y > m_high): wins for y > 2c - m_high
    low = low_w * np.exp(eps * np.minimum(0.0, 2 * c - m_low))
    high = high_w * np.exp(-eps * (np.maximum(n, 2 * c - m_high) - n))
    return float(np.sum(low) + np.sum(high))


def _response_window(post: _Posterior) -> tuple[int, int]:
    """Integer ``[y_lo, y_hi]`` inside ``[0, n]``: the kept counts widened by ``(40 + log(n + 1)) / eps``."""
    margin = (_Y_MARGIN_LOG + np.log(post.n + 1.0)) / post.eps
    y_lo = int(max(0.0, np.floor(post.c0 - margin)))
    y_hi = int(min(float(post.n), np.ceil(post.c0 + post.m + margin)))
    return y_lo, y_hi


_PIECES_PER_BLOCK = 1 << 15  # 262,144 quadrature nodes per block of the exact metrics


@functools.lru_cache(maxsize=4)
def _model_posterior(n: int, p: float, eps: float, window: bool) -> _Posterior:
    """:meth:`_Posterior.build` for the prior-averaged metrics, kept for the next metric of the same model
    (``mean_abs_error`` and ``prob_lower_error`` of one model share it; read-only)."""
    return _Posterior.build(n, p, eps, window)


def _exact_metric(estimator: str, n: int, p: float, eps: float, metric: str, window: bool = True) -> float:
    if estimator == "clamped" and metric == "prob" and n <= _FULL_SUPPORT_MAX_N:
        # it wins only for y outside [0, n], through counts near 0 and n: values like 1e-154, which the
        # window (mass < 1e-32 left out) would get right absolutely but not relatively
        window = False
    post = _model_posterior(n, p, eps, window)
    edges = _pieces(post, estimator, metric)
    a, b = edges[:-1], edges[1:]
    local = post.lin is not None
    if local and metric == "prob":
        return _prob_local(post, estimator, edges[:-1] - post.c0, edges[1:] - post.c0) + _tails(post, estimator, metric)
    if local:
        a_loc, b_loc = a - post.c0, b - post.c0  # grid edges exactly; bisected ones to an ulp of the edge
    nodes, weights = _GAUSS
    # the quadrature nodes in blocks of _PIECES_PER_BLOCK pieces (memory bounded at any n); one block,
    # so the same arithmetic as before, whenever the pieces fit in it (every chapter's n)
    per_piece = np.empty(a.size)
    for start in range(0, a.size, _PIECES_PER_BLOCK):
        sl = slice(start, start + _PIECES_PER_BLOCK)
        if local:
            # nodes as (integer, fraction) in window coordinates: they keep their digits at any n
            al, bl = a_loc[sl], b_loc[sl]
            jp = np.floor(0.5 * (al + bl))
            d = 0.5 * ((al - jp) + (bl - jp))[:, None] + 0.5 * (bl - al)[:, None] * nodes[None, :]
            jj = np.broadcast_to(jp.astype(np.int64)[:, None], d.shape)
            vals = _integrand_local(post, estimator, jj.ravel(), d.ravel(), metric).reshape(d.shape)
        else:
            y = 0.5 * (a[sl] + b[sl])[:, None] + 0.5 * (b[sl] - a[sl])[:, None] * nodes[None, :]
            vals = _integrand(post, estimator, y.ravel(), metric).reshape(y.shape)
        per_piece[sl] = 0.5 * (b[sl] - a[sl]) * (vals @ weights)
    middle = float(np.sum(per_piece))
    return middle + _tails(post, estimator, metric)


def mean_abs_error(estimator: str, n: int, p: float, eps: float) -> float:
    """Average absolute error ``E|C - estimate(Y)|`` (eq. (12)), computed exactly.

    The expectation over the binomial count and the Laplace response is written as
    ``int f(y) E[|C - m(y)| | y] dy``. On ``[0, n]`` the integrand is split where it is not
    smooth (integers, and the points where ``m(y)`` crosses an integer, located by bisection)
    and integrated by 8-point Gauss-Legendre on pieces of width ``<= min(1/8, 1/(2 eps))`` (all counts,
    ``n < 100`` or a prior too wide for a window) or ``<= min(1/2, 1/(2 eps))`` (the prior's effective
    support: the counts within ``e^-92`` of the largest weight, mass left out < 1e-32); outside ``[0, n]``
    the estimate is constant (or ``y`` itself for ``naive``) and the integral is closed form.
    On the window the posterior sums are kept in linear scale relative to each response's unit segment,
    with centred first moments (the private ``_integrand_local``): no term of the window's size cancels, and
    for ``naive`` the result is ``1/eps`` (eq. (14)) to 3e-15 relative up to ``n = 10**7``.

    Parameters
    ----------
    estimator : {"naive", "clamped", "mean", "median"}
    n, p, eps : model as in :func:`dpbayes.counting.model.bayes_estimate` (``n <= MAX_N = 10**7``; cost
        ``O(sqrt(n p (1 - p)) + log(n) / eps)`` on the prior's effective support, ``O(n)`` below 100).
    """
    estimator = check_choice("estimator", estimator, ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    return _exact_metric(estimator, n, p, eps, "abs")


def prob_lower_error(estimator: str, n: int, p: float, eps: float) -> float:
    """``P(|C - estimate(Y)| < |C - Y|)``: the estimator beats the naive one (eq. (13)), exactly.

    Given ``y`` the estimator ``m`` wins for the counts on ``m``'s side of ``(y + m) / 2``, so
    the conditional win probability is a posterior CDF value; it is integrated against the
    marginal density of ``y`` as in :func:`mean_abs_error`, with break points where
    ``(y + m(y)) / 2`` crosses an integer or ``y - m(y)`` changes sign. Strict inequality:
    ``naive`` gives 0. On the prior's window the integral between break points is closed form
    (the private ``_prob_local``); ``clamped`` keeps all counts up to ``n = 2000`` (its value, as small as
    1e-154, comes from the counts near 0 and ``n``).
    """
    estimator = check_choice("estimator", estimator, ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    return _exact_metric(estimator, n, p, eps, "prob")


def _simulated_estimates(n: int, p: float, eps: float, name: str, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """An estimator at responses drawn from the model, on the posterior the exact metrics use.

    The prior's window (:func:`_model_posterior`: ``O(sqrt n)`` counts instead of ``n + 1`` from
    ``n = _WINDOW_MIN_N`` on, where it covers at most half of ``[0, n]``) for every response within
    the exact metrics' margin ``(40 + log(n + 1)) / eps`` of its counts; a response beyond that margin
    (below ``e^-40`` of the model's density there) uses the posterior around that one response, exact
    for it.
    """
    post = _model_posterior(n, p, eps, True)
    if name in ("naive", "clamped") or (post.c0 == 0 and post.m == n):
        return _estimator_values(post, name, y)  # no posterior, or one over every count
    margin = (_Y_MARGIN_LOG + np.log(n + 1.0)) / eps
    inside = (y >= post.c0 - margin) & (y <= post.c0 + post.m + margin)
    out = np.empty_like(y)
    out[inside] = _estimator_values(post, name, y[inside])
    for i in np.flatnonzero(~inside):
        out[i] = _estimator_values(_Posterior.build(n, p, eps, around=float(y[i])), name, y[i : i + 1])[0]
    return out


def monte_carlo_metrics(
    n: int,
    p: float,
    eps: float,
    runs: int,
    rng: np.random.Generator,
    estimators: tuple[str, ...] = ESTIMATORS,
) -> dict[str, dict[str, float]]:
    """Both metrics by simulation, as in the paper's Section 4.2 (100,000 runs there).

    Draws ``C ~ Binomial(n, p)`` and ``Y = C + Laplace(1/eps)`` ``runs`` times. The estimates are
    computed on the windowed posterior the exact metrics use (the counts that carry the prior, and an
    exact posterior around each rare response outside its reach), so a comparison of the two
    methods' times compares the simulation with the integration, not two posteriors.

    Returns
    -------
    dict
        ``{estimator: {"mae", "mae_se", "prob", "prob_se"}}``: the mean absolute error, the
        probability of a strictly lower error than ``naive``, and their standard errors.
    """
    n, p, eps = _check_model(n, p, eps)
    runs = check_int("runs", runs, minimum=2)
    rng = check_rng("rng", rng)
    for name in estimators:
        check_choice("estimator", name, ESTIMATORS)
    c = rng.binomial(n, p, size=runs).astype(float)
    y = c + rng.laplace(0.0, 1.0 / eps, size=runs)
    naive_err = np.abs(c - y)
    out: dict[str, dict[str, float]] = {}
    for name in estimators:
        err = np.abs(c - _simulated_estimates(n, p, eps, name, y))
        win = (err < naive_err).astype(float)
        out[name] = {
            "mae": float(err.mean()),
            "mae_se": float(err.std(ddof=1) / np.sqrt(runs)),
            "prob": float(win.mean()),
            "prob_se": float(win.std(ddof=1) / np.sqrt(runs)),
        }
    return out
