"""Bayes estimation of a count released with Laplace noise (Naldi & D'Acquisto).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (equation numbers below refer to it).

Model: the true count ``C`` of ``n`` records is ``Binomial(n, p)``; the analyst sees
``Y = C + R`` with ``R ~ Laplace(0, 1/eps)`` (eqs. (1), (8)).

Computational idea (why everything here is O(n) once plus O(log n) per response ``y``): for
``j <= y < j + 1`` the Laplace kernel factorises, ``exp(-eps |y - c|)`` being
``exp(-eps y) exp(eps c)`` for ``c <= j`` and ``exp(eps y) exp(-eps c)`` for ``c > j``. Every
posterior sum is therefore a combination of two cumulative sums over ``c`` that do not depend
on ``y``; they are kept in log space (``numpy.logaddexp.accumulate``) so that ``n = 10**5`` and
``eps`` from ``1e-4`` to ``10`` neither underflow nor overflow. A consequence used for the exact
metrics: the posterior, hence every Bayes estimate, is constant for ``y <= 0`` and for
``y >= n``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes._extras import lazy_module
from dpbayes.validation import check_choice, check_int, check_positive, check_probability, check_rng

stats = lazy_module("scipy.stats")  # imported on first use: keeps `import dpbayes.release` fast

__all__ = [
    "out_of_range_probability",
    "max_out_of_range_probability",
    "min_out_of_range_probability",
    "min_out_of_range_probability_exact",
    "expected_out_of_range_probability",
    "posterior_logpmf",
    "bayes_estimate",
    "posterior_median",
    "estimate",
    "marginal_density",
    "mean_abs_error",
    "prob_lower_error",
    "monte_carlo_metrics",
    "geometric_mean_abs_error",
    "optimal_private_estimator",
    "ESTIMATORS",
    "MAX_N",
]

ESTIMATORS = ("naive", "clamped", "mean", "median")
#: Largest number of records: a bound on time and memory (the pointwise estimators build O(n) cumulative
#: sums, ~ 1 s and 0.5 GB at 10**7; the exact metrics sum over the prior's effective support only).
MAX_N = 10_000_000
_MAX_DENSE = 2_000_000  # entries of one (y, count) block in posterior_logpmf


def _check_model(n: Any, p: Any, eps: Any, max_n: int = MAX_N) -> tuple[int, float, float]:
    n = check_int("n", n, minimum=1, maximum=max_n)
    p = check_probability("p", p)
    eps = check_positive("eps", eps)
    if np.ndim(p) != 0 or np.ndim(eps) != 0:
        raise ValueError("p and eps must be scalars")
    return n, float(p), float(eps)


def _check_y(y: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError("y must be finite real numbers")
    return arr


# ---------------------------------------------------------------------------------------------
# Section 2: probability of an out-of-range response
# ---------------------------------------------------------------------------------------------


def out_of_range_probability(a: ArrayLike, n: int, eps: float) -> NDArray[np.float64] | float:
    """Probability that the noisy count falls outside ``[0, n]`` given the true count ``a`` (eq. (2)).

    ``P*(a) = (exp(-eps a) + exp(-eps (n - a))) / 2`` with Laplace scale ``b = 1/eps``: the
    two terms are ``P(R < -a)`` and ``P(R > n - a)``.
    """
    n = check_int("n", n, minimum=1)
    eps = check_positive("eps", eps)
    a_arr = np.asarray(a, dtype=float)
    if np.any(a_arr < 0) or np.any(a_arr > n):
        raise ValueError(f"a must lie in [0, n] = [0, {n}]")
    out = 0.5 * (np.exp(-eps * a_arr) + np.exp(-eps * (n - a_arr)))
    return float(out) if out.ndim == 0 else out


def max_out_of_range_probability(n: int, eps: float) -> float:
    """Largest ``P*`` over true counts, reached at ``a = 0`` and ``a = n`` (Theorem 2.1, eq. (5))."""
    n = check_int("n", n, minimum=1)
    eps = check_positive("eps", eps)
    return 0.5 * (1.0 + np.exp(-eps * n))


def min_out_of_range_probability(n: int, eps: float) -> float:
    """The paper's value of the smallest ``P*``, taken at ``a = (n - 1) / 2`` (eq. (6)).

    ``(exp(-eps (n - 1) / 2) + exp(-eps (n + 1) / 2)) / 2``. It is exact for odd ``n``; for even
    ``n`` the minimum over integer counts is at ``a = n / 2`` and equals ``exp(-eps n / 2)``, so
    eq. (6) exceeds it by the factor ``cosh(eps / 2)`` (see
    :func:`min_out_of_range_probability_exact`).
    """
    n = check_int("n", n, minimum=1)
    eps = check_positive("eps", eps)
    return 0.5 * (np.exp(-eps * (n - 1) / 2.0) + np.exp(-eps * (n + 1) / 2.0))


def min_out_of_range_probability_exact(n: int, eps: float) -> float:
    """Smallest ``P*(a)`` over integer counts ``a`` in ``{0, ..., n}`` (attained at ``floor(n/2)``).

    ``P*`` is symmetric about ``n/2`` and convex in ``a``, so the integer minimiser is
    ``floor(n / 2)`` (and ``ceil(n / 2)``).
    """
    n = check_int("n", n, minimum=1)
    eps = check_positive("eps", eps)
    return float(out_of_range_probability(n // 2, n, eps))


def expected_out_of_range_probability(n: int, p: float, eps: float) -> float:
    """``P*`` averaged over a ``Binomial(n, p)`` true count (beyond the paper).

    Closed form from the binomial moment generating function:
    ``((1 - p + p e^{-eps})**n + (p + (1 - p) e^{-eps})**n) / 2``.
    """
    n, p, eps = _check_model(n, p, eps)
    q = np.exp(-eps)
    return 0.5 * (np.exp(n * np.log1p(-p * (1 - q))) + np.exp(n * np.log1p(-(1 - p) * (1 - q))))


# ---------------------------------------------------------------------------------------------
# Section 3: posterior of the count given the noisy response
# ---------------------------------------------------------------------------------------------


def posterior_logpmf(y: ArrayLike, n: int, p: float, eps: float) -> NDArray[np.float64]:
    """Log posterior ``log P(C = k | Y = y)`` for ``k = 0..n`` (eqs. (9), (11)), computed densely.

    Binomial log-pmf plus Laplace log-density, normalised with ``logsumexp``; processed in
    blocks of ``y`` so memory stays bounded. Reference implementation (O(n) per ``y``); the
    estimators use the O(log n) cumulative-sum form.

    Returns
    -------
    ndarray, shape ``y.shape + (n + 1,)``
    """
    n, p, eps = _check_model(n, p, eps)
    y = _check_y(y)
    k = np.arange(n + 1)
    log_prior = stats.binom.logpmf(k, n, p)
    flat = y.reshape(-1)
    out = np.empty((flat.size, n + 1))
    step = max(1, _MAX_DENSE // (n + 1))
    for start in range(0, flat.size, step):
        block = flat[start : start + step, None]
        logj = log_prior[None, :] - eps * np.abs(block - k[None, :])
        out[start : start + step] = logj - special.logsumexp(logj, axis=1, keepdims=True)
    return out.reshape(y.shape + (n + 1,))


#: Counts whose binomial weight is below ``exp(-_LOG_NEGLIGIBLE)`` times the largest one are left out of
#: the sums (``_support``): together they weigh less than ``(n + 1) e^-92 < 1e-32`` relative.
_LOG_NEGLIGIBLE = 92.0
#: Responses ``y`` farther than ``(40 + log(n + 1)) / eps`` from the kept counts are left out of the
#: metric integrals: their density is below ``e^-40 / (n + 1)`` of its peak, their share < 5e-18 n^-1.
_Y_MARGIN_LOG = 40.0
#: Below this ``n`` the sums always run over every count (the window would save little).
_FULL_SUPPORT_MAX_N = 2000
#: The exact metrics (prior-averaged) use the prior's window from this ``n`` on (where the window
#: covers at most half of ``[0, n]``; else all counts): from 100 on, the window's values agree with the
#: full sums' to 1e-13 relative (tests/test_counting.py), and at ``n = 10**3`` cost 1/5.
_WINDOW_MIN_N = 100


def _support(
    n: int, p: float, eps: float, around: float | None = None, full_max_n: int = _FULL_SUPPORT_MAX_N
) -> tuple[int, int]:
    """``[lo, hi]``: the counts whose weight is within ``e^-_LOG_NEGLIGIBLE`` of the largest one.

    The weight is the ``Binomial(n, p)`` pmf (``around=None``: the prior's effective support, for
    averages over the model), or the pmf times ``exp(-eps |around - c|)`` (the posterior given the
    response ``around``: exact for that response). Both are log-concave in ``c``, so the mode and
    the two edges are found by binary search, ``O(log n)`` log-pmf evaluations. The whole range
    ``[0, n]`` when ``n <= _FULL_SUPPORT_MAX_N`` or the window would cover more than half of it.
    """
    if n <= full_max_n:
        return 0, n
    if p in (0.0, 1.0):
        return (0, 0) if p == 0.0 else (n, n)

    log_p, log_q, lg_n = math.log(p), math.log1p(-p), math.lgamma(n + 1.0)

    def h(c: int) -> float:
        # the binomial log-pmf by lgamma: only the window's edges depend on it (at e^-92 of the mode),
        # where its ~n log n ulps of rounding do not matter; 100x faster than scipy.stats per scalar
        value = lg_n - math.lgamma(c + 1.0) - math.lgamma(n - c + 1.0) + c * log_p + (n - c) * log_q
        return value if around is None else value - eps * abs(around - c)

    lo, hi = 0, n
    while lo < hi:  # mode: first c whose successor is not higher (concave sequence)
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if h(mid + 1) > h(mid) else (lo, mid)
    mode = lo
    level = h(mode) - _LOG_NEGLIGIBLE

    def edge(lo: int, hi: int, rising: bool) -> int:
        # first (rising) / last (falling) count in [lo, hi] whose log-weight is >= level
        while lo < hi:
            mid = (lo + hi) // 2 if rising else (lo + hi + 1) // 2
            above = h(mid) >= level
            if rising:
                lo, hi = (lo, mid) if above else (mid + 1, hi)
            else:
                lo, hi = (mid, hi) if above else (lo, mid - 1)
        return lo

    lo, hi = edge(0, mode, True), edge(mode, n, False)
    if hi - lo + 1 > (n + 1) // 2:
        return 0, n
    return lo, hi


def _binom_logpmf(c: NDArray[np.float64], n: int, p: float, accurate: bool) -> NDArray[np.float64]:
    """``Binomial(n, p)`` log-pmf; ``accurate``: ``log(binom.pmf)`` where the pmf is above 1e-300.

    ``scipy.stats.binom.logpmf`` subtracts log-gammas of size ``n log n`` (relative error of the
    pmf ~ 1e-9 at ``n = 10**7``; its pmf sums to 1 within 1e-15 there). The windowed sums use the
    accurate form; the full sums keep ``logpmf`` (unchanged results for small ``n``).
    """
    log_w = stats.binom.logpmf(c, n, p)
    if accurate:
        pmf = stats.binom.pmf(c, n, p)
        big = pmf > 1e-300
        log_w[big] = np.log(pmf[big])
    return log_w


@dataclass(frozen=True)
class _Posterior:
    """Cumulative log sums of the binomial-Laplace model (see the module docstring).

    The sums run over the counts ``c = c0 + k``, ``k = 0..m``, of the prior's effective support
    (:func:`_support`; all counts, ``c0 = 0`` and ``m = n``, for small ``n``). In the shifted
    coordinate ``k``: ``log_left[r][k + 1] = log sum_{k' <= k} k'**r w e^{eps k'}`` (``k = -1..m``)
    and ``log_right[r][k] = log sum_{k' >= k} k'**r w e^{-eps k'}`` (``k = 0..m+1``), ``w`` the
    binomial pmf, ``r = 0, 1``. Methods take and return real counts and responses; ``log_z`` and
    ``cdf`` with ``r = 1`` give moments of ``k = c - c0``.

    On a window (``local`` set) the sums are also kept in local form, ``local[0][r][k + 1] =
    log sum_{k' <= k} k'**r w e^{-eps (k - k')}`` and ``local[1][r][k] = log sum_{k' >= k} k'**r w
    e^{-eps (k' - k)}``, computed by first-order recursions in linear space (every term <= the
    largest weight, none below e^-92 of it: no underflow). ``log_z`` and ``cdf`` then only ever
    subtract ``eps`` times a distance, never two numbers of size ``eps m``: the log-space
    accumulation loses about ``sqrt(m) eps m`` ulps (3e-9 relative at ``n = 10**7``, ``eps = 5``),
    the local form a few ulps.
    """

    n: int
    p: float
    eps: float
    log_left: tuple[NDArray[np.float64], NDArray[np.float64]]
    log_right: tuple[NDArray[np.float64], NDArray[np.float64]]
    c0: int = 0
    m: int = -1
    local: tuple[tuple[NDArray[np.float64], ...], tuple[NDArray[np.float64], ...]] | None = None
    #: On a window: ``(top, L0, L1c, R0, R1c)``, the local sums in linear scale relative to ``e^top``
    #: with centred first moments, padded so that index ``j + 1`` of ``L*`` and ``j`` of ``R*`` is count
    #: ``j`` (``-1 .. m`` and ``0 .. m + 1``; zero at the pads). ``L0[k] = sum_{k' <= k} w a^(k - k')``,
    #: ``L1c[k] = sum_{k' <= k} (k - k') w a^(k - k')``, ``R0[k] = sum_{k' >= k} w a^(k' - k)``,
    #: ``R1c[k] = sum_{k' >= k} (k' - k) w a^(k' - k)``, ``a = e^-eps`` (see :func:`_integrand_local`).
    lin: tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None = None

    @classmethod
    def build(cls, n: int, p: float, eps: float, window: bool = False, around: float | None = None) -> "_Posterior":
        """All counts; or (``window=True``) the prior's effective support, for the prior-averaged
        metrics only (what it leaves out weighs < 1e-32 of the model, but the posterior at a
        response far from the prior's mass may live outside it); or (``around=y``) the counts that
        carry the posterior given the one response ``y`` (exact there, ``O(sqrt(n) + 1/eps)``)."""
        if around is not None:
            lo, hi = _support(n, p, eps, around)
        elif window:
            # the prior-averaged metrics take the window at every n where it covers at most half of [0, n]
            lo, hi = _support(n, p, eps, full_max_n=_WINDOW_MIN_N - 1)
        else:
            lo, hi = 0, n
        k = np.arange(hi - lo + 1, dtype=float)
        log_w = _binom_logpmf(k + lo, n, p, accurate=(lo, hi) != (0, n))
        if window and (lo, hi) != (0, n):
            # every weight of the prior's window is within e^-92 of the largest: the local form cannot
            # underflow (a window around one response holds weights far below that, kernel-compensated)
            return cls._build_local(n, p, eps, lo, log_w)
        with np.errstate(divide="ignore"):
            log_k = np.log(k)
        left, right = [], []
        for log_weight in (log_w, log_w + log_k):
            lw = np.concatenate(([-np.inf], np.logaddexp.accumulate(log_weight + eps * k)))
            rw = np.concatenate((np.logaddexp.accumulate((log_weight - eps * k)[::-1])[::-1], [-np.inf]))
            left.append(lw)
            right.append(rw)
        return cls(n, p, eps, (left[0], left[1]), (right[0], right[1]), lo, hi - lo)

    @classmethod
    def _build_local(cls, n: int, p: float, eps: float, lo: int, log_w: NDArray[np.float64]) -> "_Posterior":
        from scipy.signal import lfilter

        k = np.arange(log_w.size, dtype=float)
        top = float(np.max(log_w))
        a = float(np.exp(-eps))
        lefts, rights, left_loc, right_loc = [], [], [], []
        # centred first moments by L1c[k] = a (L1c[k - 1] + L0[k - 1]) and its mirror image (as in
        # ubapp.geometric_kernel_sums): E[C - j | y] from them holds no term of the window's size
        v0 = np.exp(log_w - top)
        l0 = lfilter([1.0], [1.0, -a], v0)
        r0 = lfilter([1.0], [1.0, -a], v0[::-1])[::-1]
        l1c = lfilter([0.0, a], [1.0, -a], l0)
        r1c = lfilter([0.0, a], [1.0, -a], r0[::-1])[::-1]
        zero = np.zeros(1)
        lin = (
            top, np.concatenate((zero, l0)), np.concatenate((zero, l1c)),
            np.concatenate((r0, zero)), np.concatenate((r1c, zero)),
        )
        for r in (0, 1):
            v = np.exp(log_w - top) * (k if r else 1.0)
            with np.errstate(divide="ignore"):
                ll = np.log(lfilter([1.0], [1.0, -a], v)) + top
                rr = np.log(lfilter([1.0], [1.0, -a], v[::-1])[::-1]) + top
            left_loc.append(np.concatenate(([-np.inf], ll)))
            right_loc.append(np.concatenate((rr, [-np.inf])))
            lefts.append(np.concatenate(([-np.inf], ll + eps * k)))
            rights.append(np.concatenate((rr - eps * k, [-np.inf])))
        return cls(
            n, p, eps, (lefts[0], lefts[1]), (rights[0], rights[1]), lo, log_w.size - 1,
            ((left_loc[0], left_loc[1]), (right_loc[0], right_loc[1])), lin,
        )

    def segment(self, y: NDArray[np.float64]) -> NDArray[np.int64]:
        """``j = floor(y - c0)`` clipped to ``[-1, m]``: shifted counts ``<= j`` lie left of ``y``."""
        return np.clip(np.floor(y - self.c0), -1, self.m).astype(np.int64)

    def log_z(self, y: NDArray[np.float64], j: NDArray[np.int64], r: int) -> NDArray[np.float64]:
        """``log sum_c (c - c0)**r w_c exp(-eps |y - c|)``."""
        if self.local is not None:
            ys = y - self.c0
            return np.logaddexp(
                self.local[0][r][j + 1] - self.eps * (ys - j), self.local[1][r][j + 1] - self.eps * (j + 1 - ys)
            )
        ey = self.eps * (y - self.c0)
        return np.logaddexp(self.log_left[r][j + 1] - ey, self.log_right[r][j + 1] + ey)

    def cdf(
        self,
        t: NDArray[np.int64],
        y: NDArray[np.float64],
        j: NDArray[np.int64],
        lz0: NDArray[np.float64],
        r: int,
        lzr: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """``sum_{c <= t} (c - c0)**r P(c | y)`` for integer thresholds ``t``; ``lzr = log_z(y, j, r)`` if known."""
        t = np.broadcast_to(t, y.shape)
        ey = self.eps * (y - self.c0)
        tc = np.clip(t - self.c0, -1, self.m)
        if lzr is None:
            lzr = lz0 if r == 0 else self.log_z(y, j, r)
        # Both branches are evaluated; the discarded one may overflow, the kept one is <= 1
        # (for t <= j the left sum up to t is part of the total, likewise the tail for t > j).
        with np.errstate(over="ignore", invalid="ignore"):
            if self.local is not None:
                ys = y - self.c0
                below = np.exp(self.local[0][r][tc + 1] - self.eps * (ys - tc) - lz0)
                up = np.minimum(tc + 1, self.m + 1)
                above = np.exp(lzr - lz0) - np.exp(self.local[1][r][up] - self.eps * (up - ys) - lz0)
                return np.where(tc <= j, below, above)
            below = np.exp(self.log_left[r][tc + 1] - ey - lz0)
            # right of y: total minus the upper tail (no cancellation when the tail is small)
            above = np.exp(lzr - lz0) - np.exp(self.log_right[r][np.minimum(tc + 1, self.m + 1)] + ey - lz0)
        return np.where(tc <= j, below, above)

    def mean(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.lin is not None:
            # the posterior is the same for every y <= c0 (every y >= c0 + m): clip, then the linear sums
            _, l0, l1c, r0, r1c = self.lin
            ys = np.clip(y - self.c0, 0.0, float(self.m))
            jl = np.minimum(np.floor(ys), self.m - 1).astype(np.int64) if self.m > 0 else np.zeros(ys.shape, np.int64)
            d = ys - jl
            fa, fb = np.exp(-self.eps * d), np.exp(-self.eps * (1.0 - d))
            e = (fb * (r1c[jl + 1] + r0[jl + 1]) - fa * l1c[jl + 1]) / (fa * l0[jl + 1] + fb * r0[jl + 1])
            return self.c0 + np.clip(jl + e, 0.0, self.m)
        j = self.segment(y)
        return self.c0 + np.clip(np.exp(self.log_z(y, j, 1) - self.log_z(y, j, 0)), 0.0, self.m)

    def median(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """Smallest ``t`` with ``P(C <= t | y) >= 1/2``."""
        j = self.segment(y)
        ey = self.eps * (y - self.c0)
        half = self.log_z(y, j, 0) + np.log(0.5)
        jl = np.maximum(j, 0)
        in_left = (j >= 0) & (self.log_left[0][jl + 1] - ey >= half)
        # left case: first t with log_left[t + 1] >= half + eps y (log_left is nondecreasing)
        t_left = np.searchsorted(self.log_left[0][1:], half + ey, side="left")
        t_left = np.minimum(t_left, jl)
        # right case: first t > j with P(C > t | y) <= 1/2, i.e. log_right[t + 1] <= half - eps y
        k_right = np.searchsorted(-self.log_right[0], -(half - ey), side="left")
        t_right = np.clip(k_right - 1, j + 1, self.m)
        return self.c0 + np.where(in_left, t_left, t_right).astype(float)


def bayes_estimate(y: ArrayLike, n: int, p: float, eps: float) -> NDArray[np.float64] | float:
    """Posterior mean of the count given the noisy response ``y`` (eq. (11)).

    Vectorised over ``y``; finite and inside ``[0, n]`` for ``|y| <= 1e6`` and ``eps`` in ``[1e-4, 10]``
    at every allowed ``n`` (tested at ``n = 1 .. 10**5`` and at ``MAX_N``; log-space cumulative sums over
    all counts, O(n) set-up, about 1 s and 0.5 GB at ``10**7``, plus O(1) per ``y``).

    Parameters
    ----------
    y : array_like
        Noisy responses (finite reals, any shape).
    n : int
        Number of records, ``1 <= n <= MAX_N = 10**7``.
    p : float
        Prior probability that a record satisfies the predicate, in ``[0, 1]``.
    eps : float
        Privacy parameter of the Laplace noise (scale ``1/eps``), ``> 0``.
    """
    n, p, eps = _check_model(n, p, eps)
    y = _check_y(y)
    out = _Posterior.build(n, p, eps).mean(y)
    return float(out) if out.ndim == 0 else out


def posterior_median(y: ArrayLike, n: int, p: float, eps: float) -> NDArray[np.float64] | float:
    """Posterior median of the count given ``y`` (beyond the paper).

    The Bayes estimator for absolute error: it minimises ``E|C - estimate|`` among all
    functions of ``y``. The smallest median is returned when the posterior CDF hits 1/2.
    """
    n, p, eps = _check_model(n, p, eps)
    y = _check_y(y)
    out = _Posterior.build(n, p, eps).median(y)
    return float(out) if out.ndim == 0 else out


def _estimator_values(post: _Posterior, name: str, y: NDArray[np.float64]) -> NDArray[np.float64]:
    if name == "naive":
        return y
    if name == "clamped":
        return np.clip(y, 0.0, post.n)
    if name == "mean":
        return post.mean(y)
    return post.median(y)


def estimate(estimator: str, y: ArrayLike, n: int, p: float, eps: float) -> NDArray[np.float64]:
    """Apply one of ``ESTIMATORS`` ("naive", "clamped", "mean", "median") to noisy responses ``y``.

    ``naive``: ``y`` itself (Section 3.1); ``clamped``: ``y`` clipped to ``[0, n]``; ``mean``:
    eq. (11); ``median``: posterior median.
    """
    estimator = check_choice("estimator", estimator, ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    y = _check_y(y)
    return _estimator_values(_Posterior.build(n, p, eps), estimator, y)


def marginal_density(y: ArrayLike, n: int, p: float, eps: float) -> NDArray[np.float64]:
    """Density of the noisy response, ``f(y) = sum_c w_c (eps/2) exp(-eps |y - c|)``."""
    n, p, eps = _check_model(n, p, eps)
    y = _check_y(y)
    post = _Posterior.build(n, p, eps)
    return 0.5 * eps * np.exp(post.log_z(y, post.segment(y), 0))


# ---------------------------------------------------------------------------------------------
# Section 4: error metrics, exactly
# ---------------------------------------------------------------------------------------------

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
    n, p, eps : model as in :func:`bayes_estimate` (``n <= MAX_N = 10**7``; cost
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


# ---------------------------------------------------------------------------------------------
# Beyond the paper: geometric mechanism with Bayes post-processing
# ---------------------------------------------------------------------------------------------

GEOMETRIC_ESTIMATORS = ("naive", "clamped", "mean", "median")


def geometric_mean_abs_error(estimator: str, n: int, p: float, eps: float) -> float:
    """``E|C - estimate(Z)|`` for the geometric mechanism, exactly (finite sums).

    ``naive`` reports ``Z = C + G`` itself, ``E|G| = 2a / (1 - a**2)`` with ``a = e^{-eps}``;
    the other estimators only need ``Z`` clipped to ``{0, ..., n}`` (the posterior is constant
    below 0 and above ``n``), i.e. Ghosh et al.'s truncated geometric mechanism, followed by
    the clamped response, the posterior mean, or the posterior median (the Bayes remap for
    absolute error). Cost O(n**2); ``n <= 5000``.
    """
    estimator = check_choice("estimator", estimator, GEOMETRIC_ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    if estimator == "naive":
        a = np.exp(-eps)
        return float(2 * a / (-np.expm1(-2 * eps)))
    if n > 5000:
        raise ValueError(f"n must be <= 5000 for the geometric mechanism, got {n}")
    from dpbayes.mechanisms import truncated_geometric_matrix

    k = np.arange(n + 1, dtype=float)
    prior = stats.binom.pmf(k, n, p)
    joint = truncated_geometric_matrix(n, eps) * prior[None, :]  # joint[z, c]
    if estimator == "clamped":
        est = k
    else:
        pz = joint.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            post = np.where(pz > 0, joint / pz, 1.0 / (n + 1))
        if estimator == "mean":
            est = post @ k
        else:
            est = np.argmax(np.cumsum(post, axis=1) >= 0.5 - 1e-12, axis=1).astype(float)
    return float(np.sum(joint * np.abs(k[None, :] - est[:, None])))


def optimal_private_estimator(n: int, p: float, eps: float, solver: str | None = None) -> Any:
    """Best eps-DP randomised estimator of the count for absolute error: the LP of chapter 01.

    The UBaPP linear program (:func:`dpbayes.ubapp.private_bayes_lp`) applied to the count
    itself: parameter = observation = ``C`` in ``{0..n}`` with the ``Binomial(n, p)`` prior,
    identity likelihood, neighbours ``c ~ c + 1``, estimates ``0..n``, loss ``|c - k|``. Its
    ``.risk`` is a lower bound on ``E|C - estimate|`` for *every* eps-DP mechanism followed by
    any estimator, the Laplace ones included: a real estimate can be clamped to ``[0, n]`` and
    randomly rounded to a neighbouring integer without changing ``E|c - .|`` for integer ``c``
    (post-processing keeps eps-DP). By Ghosh, Roughgarden & Sundararajan (2009) the truncated
    geometric mechanism followed by the posterior median attains it
    (:func:`geometric_mean_abs_error` with ``"median"``).

    The LP has ``(n + 1)**2`` variables; ``n`` is limited to 300.

    Returns
    -------
    dpbayes.ubapp.UbappSolution
    """
    n, p, eps = _check_model(n, p, eps)
    if n > 300:
        raise ValueError(f"n must be <= 300 for the LP, got {n}")
    from dpbayes import ubapp

    k = np.arange(n + 1, dtype=float)
    loss = np.abs(k[:, None] - k[None, :])
    prior = stats.binom.pmf(k, n, p)
    return ubapp.private_bayes_lp(loss, np.eye(n + 1), prior, eps, ubapp.chain_neighbours(n + 1), solver=solver)
