"""Which private estimator of a proportion? Exact risks of the candidates, and their comparison.

One problem, the one the book's four sources share: ``n`` records (public), each with a binary
attribute; the confidential statistic is their count ``c`` in ``{0..n}``; a release is eps-DP for
data sets that differ in **one record replaced** (the count moves by at most 1, ``n`` stays). Two
estimands are kept apart everywhere:

* ``"proportion"``: the data set's own proportion ``c / n`` (what most releases publish). A
  non-private release has no error; every error is added by privacy.
* ``"theta"``: the population parameter ``theta`` of which the records are a
  ``Binomial(n, theta)`` sample, with a ``Beta(a, b)`` prior (chapter 1's estimand, the UBaPP
  paper's eq. (8)). Even the non-private posterior mean has the *sampling* risk
  ``E Var(theta | c)``; privacy adds to it.

Every candidate is a mechanism on the count followed by post-processing, so it is eps-DP by the
mechanism's guarantee (Laplace or two-sided geometric noise of scale ``1/eps`` on a sensitivity-1
count; LBaPP: Laplace noise on the posterior mean, sensitivity ``1/(n + a + b)``). The registry
:data:`CANDIDATES` holds, for each, the two conditional moments of its error about ``c / n``,

``bias(c) = E[est - c/n | c]`` and ``msd(c) = E[(est - c/n)^2 | c]``, for every ``c = 0..n``,

computed exactly: closed forms for the noisy count itself (raw, clamped, rounded), sums against the
truncated geometric law in ``O(n)`` (:func:`dpbayes.core.geometric.geometric_kernel_sums`) for the Bayes
remaps, and Gauss-Legendre quadrature on unit intervals against the Laplace kernel (two first-order
recursions per node) for the Laplace + posterior mean estimator, whose estimate is smooth between
integers. Every risk of squared loss follows from the two moments (``msd`` itself at a fixed count,
:func:`theta_risk`, :func:`bayes_risk`). For absolute error about ``c / n`` each candidate has its own
exact per-count risk (:func:`candidate_abs_risk`: closed forms, partial sums against the geometric law
for the posterior mean and median, chapter 4's integrator for the Laplace count). :func:`compare_estimators`
tabulates either loss.

Beyond the book's sources: the Bayes remap of the truncated geometric mechanism is the optimum of
the linear program over all eps-DP estimators for the prior-averaged risk (Ghosh, Roughgarden &
Sundararajan 2009 for losses monotone in the distance; chapters 1, 2 and 4 certify it numerically);
this module shows what it costs at a fixed data set.
"""

from __future__ import annotations

import decimal
import functools
import numbers
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpbayes.core._extras import lazy_module

from dpbayes.core.extremes import refine_scanned_extreme
from dpbayes.core.geometric import KERNEL_CHUNK, geometric_kernel_sums, geometric_kernel_sums_by_chunk, geometric_row_factors
from dpbayes.ubapp.optimal import _log_space_mean_offset, betabinom_logpmf
from dpbayes.core.validation import check_choice, check_in_range, check_int, check_positive, check_privacy_parameter

# loaded on first use: importing dpbayes.release.statistic (which uses this module) must stay light
stats = lazy_module("scipy.stats")

__all__ = [
    "ESTIMANDS",
    "MAX_N",
    "LAPLACE_BAYES_MAX_N",
    "CountPrior",
    "Candidate",
    "CANDIDATES",
    "candidate_moments",
    "candidate_abs_risk",
    "LOSSES",
    "LAPLACE_ABS_MAX_N",
    "theta_risk",
    "worst_theta_risk",
    "bayes_risk",
    "sampling_risk",
    "prior_free_interval",
    "minimax_certificate",
    "MINIMAX_THETA_MAX_N",
    "MINIMAX_ABS_MAX_N",
    "interior_ratio",
    "Comparison",
    "compare_estimators",
]

#: The two estimands: the data set's proportion ``c / n`` and the population parameter ``theta``.
ESTIMANDS = ("proportion", "theta")
#: The losses of :func:`compare_estimators`: squared error (both estimands) and absolute error (the proportion).
LOSSES = ("squared", "absolute")
#: Default of :func:`compare_estimators`' ``share_tolerance``: a difference a reader cares about.
SHARE_TOLERANCE = 0.01
#: Largest ``n`` (memory: a few arrays of ``n + 1`` floats per candidate).
MAX_N = 10**7
#: Largest ``n`` of the Laplace + posterior-mean candidate (its quadrature costs ``O(n max(1, eps))``
#: nodes; at 10**5 and eps = 10 about 2 * 10**7 evaluations of the posterior mean).
LAPLACE_BAYES_MAX_N = 10**5
FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountPrior:
    """The analyst's prior: ``theta ~ Beta(a, b)`` (``kind="beta"``) or ``theta = p`` known (``kind="binomial"``).

    The count is then Beta-binomial ``(n, a, b)`` or ``Binomial(n, p)`` a priori. A flat prior on an
    unknown ``p`` is ``Beta(1, 1)`` (every count equally likely), Jeffreys' is ``Beta(1/2, 1/2)``; chapter
    4's known ``p`` is the binomial. A prior certain of the count (``p`` in ``{0, 1}``) ignores the data
    and is refused.
    """

    kind: str
    a: float = 1.0
    b: float = 1.0
    p: float = 0.5

    @staticmethod
    def beta(a: float, b: float) -> "CountPrior":
        """``theta ~ Beta(a, b)``, ``a, b > 0``."""
        return CountPrior("beta", a=float(check_positive("a", a)), b=float(check_positive("b", b)))

    @staticmethod
    def binomial(p: float) -> "CountPrior":
        """``theta = p`` known, ``0 < p < 1``."""
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not 0.0 < float(p) < 1.0:
            raise ValueError(f"p must lie in (0, 1) (0 or 1 is a prior certain of the count, which ignores the data), got {p!r}")
        return CountPrior("binomial", p=float(p))

    @property
    def label(self) -> str:
        return f"Beta({self.a:g}, {self.b:g})" if self.kind == "beta" else f"Binomial(n, {self.p:g})"

    def log_weights(self, n: int) -> FloatArray:
        """Log prior probability of each count ``0..n`` (read-only: shared by the calls with the same ``n``)."""
        return _prior_log_weights(self, n)

    def weights(self, n: int) -> FloatArray:
        """Prior probability of each count ``0..n``, normalised (read-only, shared like :meth:`log_weights`)."""
        return _prior_weights(self, n)

    def theta_mean_var(self, n: int) -> tuple[FloatArray, FloatArray]:
        """``E[theta | c]`` and ``Var(theta | c)`` for every count (binomial: ``p`` and 0)."""
        c = np.arange(n + 1, dtype=float)
        if self.kind == "binomial":
            return np.full(n + 1, self.p), np.zeros(n + 1)
        abn = self.a + self.b + n
        mean = (self.a + c) / abn
        return mean, mean * (self.b + n - c) / (abn * (abn + 1.0))


# One comparison asks for the same prior's weights once per candidate (about 0.3 s at n = 10**6);
# the prior is frozen, so its arrays are computed once and shared read-only.
@functools.lru_cache(maxsize=8)
def _prior_log_weights(prior: CountPrior, n: int) -> FloatArray:
    c = np.arange(n + 1, dtype=float)
    lw = betabinom_logpmf(c, n, prior.a, prior.b) if prior.kind == "beta" else stats.binom.logpmf(c, n, prior.p)
    lw.setflags(write=False)
    return lw


@functools.lru_cache(maxsize=8)
def _prior_weights(prior: CountPrior, n: int) -> FloatArray:
    w = np.exp(_prior_log_weights(prior, n))
    w /= w.sum()
    w.setflags(write=False)
    return w


def _is_number(value: Any) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (numbers.Real, decimal.Decimal))


def _as_prior(prior: Any, name: str = "prior") -> CountPrior:
    if isinstance(prior, CountPrior):
        return prior
    # a pair (a, b): a tuple or a list, as the releases take it
    if isinstance(prior, (tuple, list)) and len(prior) == 2 and all(_is_number(v) for v in prior):
        return CountPrior.beta(*(float(v) for v in prior))
    raise TypeError(f"{name} must be a CountPrior or a pair (a, b) of a Beta prior on theta, got {prior!r}")


@dataclass(frozen=True)
class _Problem:
    n: int
    eps: float
    prior: CountPrior
    estimand: str


# --------------------------------------------------------------------------------------------
# Closed forms for the noisy count itself
# --------------------------------------------------------------------------------------------


def _clamped_laplace_moments(scale: float, room_low: FloatArray, room_high: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``E[X]`` and ``E[X^2]`` of ``X = clip(L, -room_low, room_high)``, ``L ~ Laplace(0, scale)``, rooms ``>= 0``.

    ``E[X^2] = scale^2 [P(2, room_low/scale) + P(2, room_high/scale)]`` (``P`` the regularised lower
    incomplete gamma function: ``int_0^u 2x P(L > x) dx``), and ``E[X] = (scale/2)(e^(-low/s) - e^(-high/s))``
    written with ``expm1`` so that neither cancels for wide noise.
    """
    u0, u1 = room_low / scale, room_high / scale
    second = scale**2 * (special.gammainc(2.0, u0) + special.gammainc(2.0, u1))
    lo, hi = np.minimum(u0, u1), np.maximum(u0, u1)
    first = 0.5 * scale * np.exp(-lo) * -np.expm1(-(hi - lo)) * np.sign(u0 - u1) * -1.0
    # the mean is pushed away from the nearer bound: positive when the lower room is the smaller
    return np.where(u0 == u1, 0.0, first), second


def _clamped_integer_noise_moments(eps: float, log_beta: float, n: int) -> tuple[FloatArray, FloatArray]:
    """Bias and mean squared deviation of ``clip(c + N, 0, n) - c`` for every ``c``, ``N`` integer noise.

    ``N`` is symmetric with ``P(N >= k) = beta a^k`` for ``k >= 1`` (``a = e^-eps``): the two-sided
    geometric law has ``beta = 1/(1 + a)``, Laplace noise rounded to the nearest integer has
    ``beta = e^(eps/2)/2``. With rooms ``c`` below and ``n - c`` above, ``E[clip(N)^2] = beta (F(c) +
    F(n - c))`` with ``F(t) = sum_(k=1..t) (2k - 1) a^k`` (positive terms, cumulative sum) and
    ``E[clip(N)] = beta sum_(k = min + 1 .. max) a^k`` signed towards the farther bound. The terms of
    ``F`` are exactly 0 beyond ``k = 746 / eps`` (``exp`` underflows), so the table stops there and a
    room beyond it reads its last entry: the same bits as the whole cumulative sum, in ``O(min(n, 1/eps))``.
    """
    log_a = -eps
    F = _clamped_noise_table(eps, log_beta, n)
    c = np.arange(n + 1)
    second = F[np.minimum(c, F.size - 1)] + F[np.minimum(n - c, F.size - 1)]
    lo, hi = np.minimum(c, n - c).astype(float), np.maximum(c, n - c).astype(float)
    with np.errstate(under="ignore"):
        span = np.exp(log_beta + log_a * (lo + 1.0)) * -np.expm1(log_a * (hi - lo)) / -np.expm1(log_a)
    first = np.where(c < n - c, span, -span)
    return first, second


def _clamped_noise_table(eps: float, log_beta: float, n: int) -> FloatArray:
    """``F(t)`` of :func:`_clamped_integer_noise_moments` for ``t = 0..min(n, ceil(746 / eps) + 1)``."""
    t_max = min(n, int(np.ceil(746.0 / eps)) + 1)
    k = np.arange(1, t_max + 1, dtype=float)
    with np.errstate(under="ignore"):
        return np.concatenate(([0.0], np.cumsum((2.0 * k - 1.0) * np.exp(log_beta + -eps * k))))


def _geometric_log_beta(eps: float) -> float:
    """``log P(G >= 1)`` of the two-sided geometric law, ``-log(1 + e^-eps)`` (:func:`_clamped_integer_noise_moments`)."""
    return -float(np.log1p(np.exp(-eps)))


def _scale_to_proportion(n: int, bias_count: FloatArray, msd_count: FloatArray) -> tuple[FloatArray, FloatArray]:
    return bias_count / n, msd_count / float(n) ** 2


def _laplace_raw(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """``(c + L) / n``: unbiased, ``E[(est - c/n)^2] = 2 / (n eps)^2``."""
    n = pb.n
    return _scale_to_proportion(n, np.zeros(n + 1), np.full(n + 1, 2.0 / pb.eps**2))


def _laplace_clamped(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """``clip(c + L, 0, n) / n`` (also diffprivlib's bounded mean of 0/1 records with bounds (0, 1))."""
    c = np.arange(pb.n + 1, dtype=float)
    first, second = _clamped_laplace_moments(1.0 / pb.eps, c, pb.n - c)
    return _scale_to_proportion(pb.n, first, second)


def _laplace_rounded(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """``round(clip(c + L, 0, n)) / n``: no prior, no ``p``; rounding and the integer bounds commute."""
    first, second = _clamped_integer_noise_moments(pb.eps, pb.eps / 2.0 - np.log(2.0), pb.n)
    return _scale_to_proportion(pb.n, first, second)


def _geometric_raw(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """``clip(c + G, 0, n) / n``: OpenDP's bounded geometric count, divided by ``n``."""
    first, second = _clamped_integer_noise_moments(pb.eps, _geometric_log_beta(pb.eps), pb.n)
    return _scale_to_proportion(pb.n, first, second)


def _no_privacy(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """The Bayes estimate without noise: ``c / n`` (proportion) or ``E[theta | c]`` (theta)."""
    if pb.estimand == "proportion":
        return np.zeros(pb.n + 1), np.zeros(pb.n + 1)
    m, _ = pb.prior.theta_mean_var(pb.n)
    d = m - np.arange(pb.n + 1) / pb.n
    return d, d * d


def _lbapp_clipped(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """Clipped LBaPP (chapter 1): ``clip(E[theta | c] + Laplace(1/((n + a + b) eps)), 0, 1)``."""
    if pb.prior.kind != "beta":
        raise ValueError("lbapp-clipped needs a Beta prior on theta (its sensitivity is 1/(n + a + b))")
    n = pb.n
    m, _ = pb.prior.theta_mean_var(n)
    scale = 1.0 / ((n + pb.prior.a + pb.prior.b) * pb.eps)
    first, second = _clamped_laplace_moments(scale, m, 1.0 - m)
    off = m - np.arange(n + 1) / n
    return off + first, off * off + 2.0 * off * first + second


# --------------------------------------------------------------------------------------------
# Bayes remaps: sums against the truncated geometric law, quadrature against the Laplace kernel
# --------------------------------------------------------------------------------------------


def _geometric_expectations(f: FloatArray, eps: float, moments: int) -> tuple[FloatArray, ...]:
    """``sum_z P(z | c) f(z) (z - c)^r`` for every count ``c`` and ``r = 0..moments``, truncated geometric law.

    ``P(z | c) = k[z] a^|z - c|`` (``k`` the row factors of :func:`dpbayes.core.geometric.geometric_row_factors`), so
    the sum over outputs is the kernel sum of ``k f`` read at ``c`` without the factor of the output row.
    """
    n = f.size - 1
    k = geometric_row_factors(n, eps)
    sums = geometric_kernel_sums(k * f, eps, moments)
    return tuple(s / k for s in sums)


def _geometric_count_posterior_mean(log_w: FloatArray, eps: float) -> FloatArray:
    """``E[c | z] - z`` for every noisy count ``z`` of the truncated geometric mechanism, prior ``exp(log_w)``."""
    lw = log_w - float(np.max(log_w))
    with np.errstate(under="ignore"):
        w = np.exp(lw)
    s0, s1 = geometric_kernel_sums(w, eps, 1)
    ok = s0 > 1e-280
    shift = np.zeros(w.size)
    shift[ok] = s1[ok] / s0[ok]
    if not np.all(ok):
        shift[~ok] = _log_space_mean_offset(lw, eps)[~ok]
    return shift


def _remap_target_offset(pb: _Problem, count_estimate_minus_z: FloatArray) -> FloatArray:
    """``d(z) = est(z) - z/n`` of the posterior mean of the estimand, from ``E[c | z] - z`` (or ``y``)."""
    n = pb.n
    if pb.estimand == "proportion":
        return count_estimate_minus_z / n
    z = np.arange(n + 1, dtype=float)
    if pb.prior.kind == "binomial":
        return pb.prior.p - z / n
    # E[theta | z] = (a + E[c | z]) / (a + b + n)
    abn = pb.prior.a + pb.prior.b + n
    return (pb.prior.a + z + count_estimate_minus_z) / abn - z / n


def _geometric_bayes(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """Truncated geometric noise, then the posterior mean of the estimand given the noisy count.

    The optimum of the linear program over all eps-DP estimators for the prior-averaged squared
    error (chapter 1's certificates; Ghosh, Roughgarden & Sundararajan 2009).
    """
    return _geometric_remap_moments(pb, pb.estimand)


def _geometric_bayes_theta(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """Truncated geometric noise, then ``E[theta | z]`` whatever the estimand (``release_proportion``'s remap).

    Against the data set's proportion this remap shrinks towards the prior mean by ``(a + b)/(a + b + n)``
    more than ``E[c | z]/n`` does: the cost of estimating the wrong estimand.
    """
    if pb.prior.kind != "beta":
        raise ValueError("geometric-bayes-theta needs a Beta prior on theta")
    return _geometric_remap_moments(pb, "theta")


def _geometric_remap_moments(pb: _Problem, remap_estimand: str) -> tuple[FloatArray, FloatArray]:
    n = pb.n
    shift = _geometric_count_posterior_mean(pb.prior.log_weights(n), pb.eps)
    return _remap_error_moments(_remap_target_offset(_Problem(n, pb.eps, pb.prior, remap_estimand), shift), pb.eps)


def _remap_error_moments(d: FloatArray, eps: float) -> tuple[FloatArray, FloatArray]:
    """Bias and mean squared deviation about ``c/n`` of ``est(z) = z/n + d(z)`` under the truncated geometric law.

    ``est(z) - c/n = d(z) + (z - c)/n``: three kernel sums of the output's centred moments, none of which cancels.
    """
    n = d.size - 1
    s0, s1, s2 = _geometric_expectations(np.ones(n + 1), eps, 2)
    d0, d1 = _geometric_expectations(d, eps, 1)
    dd = _geometric_expectations(d * d, eps, 0)[0]
    bias = d0 + s1 / n
    msd = dd + 2.0 * d1 / n + s2 / float(n) ** 2
    return bias, np.maximum(msd, 0.0)


def _remap_error_moments_by_chunk(
    offset: Callable[[int, int], FloatArray], n: int, eps: float, chunk: int = KERNEL_CHUNK
) -> Iterator[tuple[int, int, FloatArray, FloatArray]]:
    """:func:`_remap_error_moments` chunk by chunk: ``(lo, hi, bias[lo:hi], msd[lo:hi])`` in ``O(chunk)`` memory.

    ``offset(lo, hi)`` gives ``d[lo:hi]`` (``est(z) - z/n``). The sums against ``d`` are
    :func:`dpbayes.core.geometric.geometric_kernel_sums_by_chunk` (the same bits as the one-array sums); the
    clamped noise's own moments come from their closed form (:func:`_clamped_integer_noise_moments`'s table and
    span), where the one-array function takes kernel sums of ones: the same numbers to a few ulps (tested).
    """
    k_end, k_interior = geometric_row_factors(2, eps)[:2]
    full_chunk = np.full(min(chunk, n + 1), k_interior)

    def row_factors(lo: int, hi: int) -> FloatArray:
        if lo > 0 and hi < n + 1:
            return full_chunk[: hi - lo]
        k = np.full(hi - lo, k_interior)
        if lo == 0:
            k[0] = k_end
        if hi == n + 1:
            k[-1] = k_end
        return k

    last_offset: dict[tuple[int, int], FloatArray] = {}

    def d_of(lo: int, hi: int) -> FloatArray:
        # both kernel sums below ask for the same chunk in turn: compute it once
        if (lo, hi) not in last_offset:
            last_offset.clear()
            last_offset[lo, hi] = np.asarray(offset(lo, hi), dtype=float)
        return last_offset[lo, hi]

    log_beta = _geometric_log_beta(eps)
    table = _clamped_noise_table(eps, log_beta, n)
    last = table.size - 1
    far = table[last] + table[last]  # E[(z - c)^2 | c] where neither bound is within reach of the noise
    lin = geometric_kernel_sums_by_chunk(lambda lo, hi: row_factors(lo, hi) * d_of(lo, hi), n, eps, 1, chunk)
    sq = geometric_kernel_sums_by_chunk(lambda lo, hi: row_factors(lo, hi) * (d_of(lo, hi) * d_of(lo, hi)), n, eps, 0, chunk)
    for (lo, hi, d), (_, _, dd) in zip(lin, sq):
        k = row_factors(lo, hi)
        c = np.arange(lo, hi)
        if lo >= last and n - (hi - 1) >= last:
            s1: FloatArray | float = 0.0
            s2: FloatArray | float = far
        else:
            s2 = table[np.minimum(c, last)] + table[np.minimum(n - c, last)]
            low, high = np.minimum(c, n - c).astype(float), np.maximum(c, n - c).astype(float)
            with np.errstate(under="ignore"):
                span = np.exp(log_beta + -eps * (low + 1.0)) * -np.expm1(-eps * (high - low)) / -np.expm1(-eps)
            s1 = np.where(c < n - c, span, -span)
        bias = d[0] / k + s1 / n
        msd = np.maximum(dd[0] / k + 2.0 * (d[1] / k) / n + s2 / float(n) ** 2, 0.0)
        yield lo, hi, bias, msd


def geometric_bayes_theta_moments(estimates: FloatArray, eps: float, chunk: int = KERNEL_CHUNK) -> tuple[FloatArray, FloatArray]:
    """Bias and mean squared deviation about ``c / n`` of the remap ``estimates`` (``E[theta | z]``), chunk by chunk.

    The moments of ``candidate_moments("geometric-bayes", ..., estimand="theta")`` given that candidate's
    remap (``release_proportion``'s ``estimand="theta"``), in ``O(n)`` memory for the two results only.
    """
    n = estimates.size - 1
    bias, msd = np.empty(n + 1), np.empty(n + 1)
    for lo, hi, b_, m_ in _remap_error_moments_by_chunk(lambda lo, hi: estimates[lo:hi] - np.arange(lo, hi) / n, n, eps, chunk):
        bias[lo:hi], msd[lo:hi] = b_, m_
    return bias, msd


def theta_sampling_risk(n: int, a: float, b: float) -> float:
    """:func:`sampling_risk` for ``theta`` under ``Beta(a, b)`` in closed form: ``a b / ((a + b)(a + b + 1)(a + b + n))``.

    ``E Var(theta | c) = Var(theta) - Var(E[theta | c])`` with ``Var(theta) = a b / ((a + b)^2 (a + b + 1))`` and
    ``E[theta | c] = (a + c) / (a + b + n)``, ``c`` Beta-binomial with variance ``n a b (a + b + n) / ((a + b)^2
    (a + b + 1))``; the difference is ``Var(theta) (a + b) / (a + b + n)``. ``O(1)``; the sum over the counts of
    :func:`sampling_risk` agrees to rounding (tested).
    """
    ab = a + b
    return a * b / (ab * (ab + 1.0) * (ab + n))


def geometric_bayes_proportion_summary(
    n: int, eps: float, prior: tuple[float, float], chunk: int = KERNEL_CHUNK
) -> tuple[FloatArray, float, float]:
    """The count's posterior mean after truncated geometric noise, and its exact risks, in ``O(n)`` memory once.

    The same numbers as ``_geometric_count_posterior_mean`` (the estimate ``(z + shift[z]) / n`` of
    ``release_proportion``) and ``candidate_moments("geometric-bayes", ...)`` with
    :func:`bayes_risk` and the largest mean squared deviation, estimand ``"proportion"``: every kernel sum
    is :func:`dpbayes.core.geometric.geometric_kernel_sums_by_chunk` (the same bits as the one-array sums;
    tested), so only the prior's weights and ``shift`` exist as arrays of length ``n + 1``. The two
    reductions (prior average, maximum) are taken chunk by chunk (the average may differ from the
    one-array dot product in the last bits).

    Parameters
    ----------
    n : int
        Number of records, ``1 <= n <= MAX_N``.
    eps : float
        Privacy parameter in ``[1e-9, 20]``.
    prior : (a, b)
        Beta prior on the population parameter (the count is Beta-binomial a priori).
    chunk : int
        Chunk length of the kernel sums.

    Returns
    -------
    shift : ndarray, shape (n + 1,)
        ``E[c | z] - z`` for every noisy count ``z``.
    bayes_risk : float
        Prior-averaged mean squared error about ``c / n`` (the proportion).
    worst_risk : float
        Largest mean squared error about ``c / n`` over the counts.

    Raises
    ------
    FloatingPointError
        Where the kernel sum of the prior underflows (a prior far from some counts), which the
        one-array path answers in log space; the caller falls back to it.
    """
    pb = _problem(n, eps, prior, "proportion")
    n, eps = pb.n, pb.eps
    a_, b_ = pb.prior.a, pb.prior.b
    w = np.empty(n + 1)
    for lo in range(0, n + 1, chunk):  # elementwise: the same bits as one call on 0..n
        hi = min(lo + chunk, n + 1)
        w[lo:hi] = betabinom_logpmf(np.arange(lo, hi, dtype=float), n, a_, b_)
    np.subtract(w, float(np.max(w)), out=w)
    with np.errstate(under="ignore"):
        np.exp(w, out=w)
    shift = np.empty(n + 1)
    for lo, hi, (s0, s1) in geometric_kernel_sums_by_chunk(lambda lo, hi: w[lo:hi], n, eps, 1, chunk):
        if not np.all(s0 > 1e-280):
            raise FloatingPointError("the prior's kernel sum underflows: use the log-space path")
        shift[lo:hi] = s1 / s0
    weighted, worst = 0.0, 0.0
    for lo, hi, _, msd in _remap_error_moments_by_chunk(lambda lo, hi: shift[lo:hi] / n, n, eps, chunk):
        weighted += float(w[lo:hi] @ msd)
        worst = max(worst, float(np.max(msd)))
    total = float(np.sum(w))
    return shift, weighted / total, worst


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _one_sided_sums(f: FloatArray, a: float) -> tuple[tuple[FloatArray, ...], tuple[FloatArray, ...]]:
    """Right sums ``R_r(c) = sum_(j >= c) a^(j - c) f_j (j - c)^r`` and left sums ``L_r(c) = sum_(j < c) a^(c - j) f_j (c - j)^r``.

    ``r = 0, 1, 2``, every ``c``; first-order recursions (``scipy.signal.lfilter``): ``R_1(c) = a (R_1(c + 1)
    + R_0(c + 1))``, ``R_2(c) = a (R_2(c + 1) + 2 R_1(c + 1) + R_0(c + 1))`` and the mirror image.
    """
    from scipy.signal import lfilter

    den = [1.0, -a]

    def inclusive(v: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        s0 = lfilter([1.0], den, v)
        s1 = lfilter([0.0, a], den, s0)
        s2 = lfilter([0.0, a], den, 2.0 * s1 + s0)
        return s0, s1, s2

    r0, r1, r2 = (s[::-1] for s in inclusive(f[::-1]))
    l0, l1, l2 = inclusive(f)
    return (r0, r1, r2), (l0 - f, l1, l2)


def _laplace_bayes(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """Laplace noise on the count, then the posterior mean of the estimand given the noisy count ``y``.

    Chapter 4's estimator (Naldi & D'Acquisto eq. (11)) for any prior on the count. The estimate is
    constant for ``y < 0`` and ``y > n`` (the kernel's factor cancels in the posterior), so those tails
    are closed form; on each unit interval ``[j, j + 1]`` the estimate is smooth and the Laplace density
    at ``y = j + u`` is ``(eps/2) e^(-eps u) a^(j - c)`` (``j >= c``) or ``(eps/2) e^(eps u) a^(c - j)``
    (``j < c``): ``max(2, ceil(2 eps))`` pieces of 8 Gauss-Legendre nodes per unit (the estimate moves
    between neighbouring integers over a width of about ``1/(2 eps)``), and for each node offset ``u``
    the sums over ``j`` are first-order recursions. The error about ``c/n`` is accumulated as
    ``g_j = est(j + u) - j/n`` plus ``(j - c)/n``, so nothing cancels.
    """
    from dpbayes.counting.risk import PriorPosterior

    n, eps = pb.n, pb.eps
    if n > LAPLACE_BAYES_MAX_N:
        raise ValueError(f"the Laplace + posterior mean candidate is computed for n <= {LAPLACE_BAYES_MAX_N}, got n = {n}")
    post = PriorPosterior(pb.prior.log_weights(n), eps)
    a = float(np.exp(-eps))
    pieces = max(2, int(np.ceil(2.0 * eps)))
    j = np.arange(n, dtype=float)  # the unit intervals [j, j + 1], j = 0..n-1
    c_all = np.arange(n + 1, dtype=float)

    def estimate(y: FloatArray) -> FloatArray:
        return _remap_target_offset_y(pb, post.mean(y), y) + y / n

    one = np.concatenate((np.ones(n), [0.0]))  # the count c = n has no interval to its right
    (R0, R1, R2), (L0, L1, L2) = _one_sided_sums(one, a)
    bias = np.zeros(n + 1)
    msd = np.zeros(n + 1)
    for piece in range(pieces):
        for node, weight in zip(_GL_NODES, _GL_WEIGHTS):
            u = (piece + 0.5 * (node + 1.0)) / pieces
            w = 0.5 * weight / pieces * 0.5 * eps
            g = np.concatenate((estimate(j + u) - j / n, [0.0]))
            (g0, g1, _), (h0, h1, _) = _one_sided_sums(g, a)
            (q0, _, _), (k0, _, _) = _one_sided_sums(g * g, a)
            wr, wl = w * np.exp(-eps * u), w * np.exp(eps * u)
            # right (j >= c): error g_j + (j - c)/n; left (j < c): g_j - (c - j)/n
            bias += wr * (g0 + R1 / n) + wl * (h0 - L1 / n)
            msd += wr * (q0 + 2.0 * g1 / n + R2 / n**2) + wl * (k0 - 2.0 * h1 / n + L2 / n**2)
    # tails: y < 0 with probability e^(-eps c)/2, y > n with e^(-eps (n - c))/2
    lo_err = float(estimate(np.array([0.0]))[0]) - c_all / n
    hi_err = float(estimate(np.array([float(n)]))[0]) - c_all / n
    p_lo, p_hi = 0.5 * np.exp(-eps * c_all), 0.5 * np.exp(-eps * (n - c_all))
    bias += p_lo * lo_err + p_hi * hi_err
    msd += p_lo * lo_err**2 + p_hi * hi_err**2
    return bias, np.maximum(msd, 0.0)


def _remap_target_offset_y(pb: _Problem, count_mean: FloatArray, y: FloatArray) -> FloatArray:
    """``est(y) - y/n`` for the posterior mean of the estimand, from ``E[c | y]``."""
    n = pb.n
    if pb.estimand == "proportion":
        return (count_mean - y) / n
    if pb.prior.kind == "binomial":
        return pb.prior.p - y / n
    abn = pb.prior.a + pb.prior.b + n
    return (pb.prior.a + count_mean) / abn - y / n


# --------------------------------------------------------------------------------------------
# Absolute error about the data set's proportion
# --------------------------------------------------------------------------------------------

#: Largest ``n`` of the Laplace + posterior median / mean candidates under absolute loss (chapter 4's
#: integrator, :func:`dpbayes.counting.risk.fixed_count_risk`, about 2 s at ``n = 1000``, ``eps = 0.1``).
LAPLACE_ABS_MAX_N = 2000


def _clamped_noise_abs(eps: float, n: int, kind: str) -> FloatArray:
    """``E|clip(c + N, 0, n) - c|`` for every ``c``: ``N`` Laplace (``kind="laplace"``), rounded Laplace or geometric.

    Laplace: ``(b/2)(1 - e^(-c/b)) + (b/2)(1 - e^(-(n - c)/b))`` (``int_0^t P(L > x) dx`` per side, ``b = 1/eps``).
    Integer noise with ``P(N >= k) = beta a^k``: ``beta (H(c) + H(n - c))``, ``H(t) = sum_(k=1..t) a^k =
    a (1 - a^t) / (1 - a)`` (written with ``expm1``).
    """
    c = np.arange(n + 1, dtype=float)
    if kind == "laplace":
        b = 1.0 / eps
        return 0.5 * b * (-np.expm1(-c / b) - np.expm1(-(n - c) / b))
    log_beta = eps / 2.0 - np.log(2.0) if kind == "rounded" else -float(np.log1p(np.exp(-eps)))
    a = float(np.exp(-eps))

    def H(t: FloatArray) -> FloatArray:
        return a * -np.expm1(-eps * t) / -np.expm1(-eps)

    return np.exp(log_beta) * (H(c) + H(n - c))


def _geometric_abs_risk(estimate_count: FloatArray, eps: float) -> FloatArray:
    """``E|E_Z - c|`` for every true count ``c``: the truncated geometric law and a nondecreasing remap ``E_z``.

    With ``P(z | c) = k_z a^|z - c|`` and ``s(c)`` the first ``z`` with ``E_z >= c``, the error is the signed
    mean ``sum_z P(z | c)(E_z - c)`` plus twice the negative part ``sum_(z < s(c)) P(z | c)(c - E_z)``; the partial
    sums come from two first-order recursions (inclusive from the left, ``A_f(m) = sum_(z <= m) a^(m - z) k_z f_z``,
    and from the right, ``B_f(m) = sum_(z >= m) a^(z - m) k_z f_z``), ``O(n)`` after the ``O(n log n)`` search.
    """
    from scipy.signal import lfilter

    E = np.asarray(estimate_count, dtype=float)
    n = E.size - 1
    if np.any(np.diff(E) < -1e-9 * max(1.0, float(np.max(np.abs(E))))):
        raise ValueError("the remap must be nondecreasing in the noisy count")
    a = float(np.exp(-eps))
    k = geometric_row_factors(n, eps)
    c = np.arange(n + 1)
    cf = c.astype(float)
    s = np.searchsorted(E, cf - 1e-12 * np.maximum(1.0, cf), side="left")  # first z with E_z >= c
    den = [1.0, -a]
    out = np.zeros(n + 1)
    signed = np.zeros(n + 1)
    for power, f in ((0, k), (1, k * E)):
        A = lfilter([1.0], den, f)
        B = np.concatenate((lfilter([1.0], den, f[::-1])[::-1], [0.0]))  # B[n + 1] = 0
        total = A + a * B[1:]  # sum_z a^|z - c| k_z f_z
        # sum_(z < s(c)) a^|z - c| k_z f_z
        below = np.zeros(n + 1)
        left = (s >= 1) & (s <= c)
        with np.errstate(under="ignore"):
            below[left] = np.exp(-eps * (cf[left] - (s[left] - 1))) * A[s[left] - 1]
        right = s > c
        sr = s[right]
        with np.errstate(under="ignore"):
            below[right] = A[c[right]] + a * (B[c[right] + 1] - np.exp(-eps * (sr - 1 - cf[right])) * B[sr])
        if power == 0:
            out += cf * below
            signed -= cf * total
        else:
            out -= below
            signed += total
    return np.maximum(signed + 2.0 * out, 0.0)


def _geometric_remap_count(pb: _Problem, statistic: str) -> FloatArray:
    """The posterior mean or median of the count given each noisy count ``z`` of the truncated geometric law.

    Given ``z`` the likelihood is proportional to ``a^|z - c|`` (the row factor does not depend on ``c``), the
    same form as chapter 4's Laplace kernel at ``y = z``, so :class:`dpbayes.counting.risk.PriorPosterior`
    (cumulative sums in log space) gives both without underflow.
    """
    from dpbayes.counting.risk import PriorPosterior

    post = PriorPosterior(pb.prior.log_weights(pb.n), pb.eps)
    z = np.arange(pb.n + 1, dtype=float)
    return post.mean(z) if statistic == "mean" else post.median(z)


def _abs_closed(kind: str) -> Callable[[_Problem], FloatArray]:
    return lambda pb: _clamped_noise_abs(pb.eps, pb.n, kind) / pb.n


def _laplace_raw_abs(pb: _Problem) -> FloatArray:
    return np.full(pb.n + 1, 1.0 / (pb.n * pb.eps))


def _geometric_bayes_abs(statistic: str) -> Callable[[_Problem], FloatArray]:
    def risk(pb: _Problem) -> FloatArray:
        return _geometric_abs_risk(_geometric_remap_count(pb, statistic), pb.eps) / pb.n
    return risk


def _laplace_bayes_abs(statistic: str) -> Callable[[_Problem], FloatArray]:
    def risk(pb: _Problem) -> FloatArray:
        from dpbayes.counting.risk import fixed_count_risk

        if pb.n > LAPLACE_ABS_MAX_N:
            raise ValueError(f"Laplace + posterior {statistic} under absolute loss is computed for n <= {LAPLACE_ABS_MAX_N}, got n = {pb.n}")
        pr = pb.prior
        kw: dict[str, Any] = ({"prior": "binomial"} if pr.kind == "binomial"
                              else {"prior": "beta-binomial", "concentration": pr.a + pr.b})
        p = pr.p if pr.kind == "binomial" else pr.a / (pr.a + pr.b)
        return fixed_count_risk(np.arange(pb.n + 1), statistic, pb.n, p, pb.eps, "abs", **kw) / pb.n
    return risk


def _geometric_median(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """Truncated geometric noise, then the posterior median of the count, ``/ n`` (the Bayes rule for absolute error)."""
    n = pb.n
    return _remap_error_moments(_geometric_remap_count(pb, "median") / n - np.arange(n + 1) / n, pb.eps)


#: Largest ``n`` of the minimax remap for ``theta`` (a dense SOCP; :mod:`dpbayes.choosing.minimax`).
MINIMAX_THETA_MAX_N = 200
#: Largest ``n`` of the minimax remap for absolute error (a dense LP).
MINIMAX_ABS_MAX_N = 300
#: Target relative gap of the minimax candidate's certificate, and its budget of O(n) risk evaluations;
#: the candidate's risks are exact for the remap found whatever the gap. A budget of evaluations, not of
#: seconds: the remap, and every stored number that depends on it, must not depend on the machine's speed
#: or load (the book's largest case, n = 10^5 at eps = 0.01, certifies in about 1,150 evaluations).
MINIMAX_TOL = 1e-4
MINIMAX_MAX_EVALS = 2000


#: The minimax remaps kept for reuse (a remap is prior-free, and a map of the book asks for the same
#: ``(n, eps)`` under several priors and criteria): at most ``MINIMAX_CACHE_COUNTS`` counts ``n + 1`` in all
#: (a remap holds a few arrays of ``n + 1`` float64), the most recent one always kept.
MINIMAX_CACHE_COUNTS = 1 << 23
_minimax_cache: OrderedDict[tuple[int, float, str, str], Any] = OrderedDict()
_minimax_lock = threading.Lock()


def _minimax(n: int, eps: float, estimand: str, loss: str) -> Any:
    from dpbayes.choosing import minimax  # imports this module: loaded on first use

    key = (n, eps, estimand, loss)
    with _minimax_lock:
        if key in _minimax_cache:
            _minimax_cache.move_to_end(key)
            return _minimax_cache[key]
    # computed outside the lock; the remap is deterministic (no time budget), so a race only computes it twice
    remap = minimax.minimax_remap(n, eps, estimand, loss, tol=MINIMAX_TOL, max_evals=MINIMAX_MAX_EVALS, max_seconds=np.inf)
    with _minimax_lock:
        _minimax_cache[key] = remap
        _minimax_cache.move_to_end(key)
        counts = sum(k[0] + 1 for k in _minimax_cache)
        while len(_minimax_cache) > 1 and counts > MINIMAX_CACHE_COUNTS:
            (old_n, *_), _ = _minimax_cache.popitem(last=False)
            counts -= old_n + 1
    return remap


def minimax_certificate(n: int, eps: float, estimand: str = "proportion", loss: str = "squared") -> Any:
    """The minimax remap behind the ``"geometric-minimax"`` candidate, with its duality certificate.

    Cached per ``(n, eps, estimand, loss)``: see :func:`dpbayes.choosing.minimax.minimax_remap`
    (here with ``tol = MINIMAX_TOL``, ``max_evals = MINIMAX_MAX_EVALS`` and no time budget, so that the result
    does not depend on the machine's speed).
    """
    pb = _problem(n, eps, (1.0, 1.0), estimand)
    return _minimax(pb.n, pb.eps, pb.estimand, check_choice("loss", loss, LOSSES))


def _geometric_minimax(pb: _Problem) -> tuple[FloatArray, FloatArray]:
    """The worst-case-optimal remap of the clamped geometric count for ``pb.estimand`` (no prior)."""
    remap = _minimax(pb.n, pb.eps, pb.estimand, "squared").remap
    return _remap_error_moments(remap - np.arange(pb.n + 1) / pb.n, pb.eps)


def _geometric_minimax_abs(pb: _Problem) -> FloatArray:
    from dpbayes.choosing import minimax

    return minimax.remap_risk(_minimax(pb.n, pb.eps, "proportion", "absolute").remap, pb.eps, "absolute")


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One private estimator: a mechanism on the count and its post-processing.

    Attributes
    ----------
    name : str
        Key in :data:`CANDIDATES`.
    label : str
        What a reader calls it.
    mechanism : {"laplace", "geometric", "none"}
        Noise on the count (``"none"``: the non-private reference).
    uses_prior : bool
        Whether the post-processing uses the analyst's prior.
    moments : callable or None
        ``problem -> (bias, msd)``: ``E[est - c/n | c]`` and ``E[(est - c/n)^2 | c]`` for ``c = 0..n``
        (``None``: not available for squared loss).
    max_n : int
        Largest ``n`` for which the moments are computed.
    abs_risk : callable or None
        ``problem -> E[|est - c/n| | c]`` for ``c = 0..n`` (absolute loss, the data set's proportion).
    abs_max_n : int
        Largest ``n`` for which ``abs_risk`` is computed.
    """

    name: str
    label: str
    mechanism: str
    uses_prior: bool
    moments: Callable[[_Problem], tuple[FloatArray, FloatArray]] | None = field(repr=False)
    max_n: int = MAX_N
    abs_risk: Callable[[_Problem], FloatArray] | None = field(default=None, repr=False)
    abs_max_n: int = MAX_N

    @property
    def reference(self) -> bool:
        """The non-private reference, not a release."""
        return self.mechanism == "none"


#: The registry of candidates by name: adding one is one :class:`Candidate` (its moments function) plus its test.
CANDIDATES: dict[str, Candidate] = {}


def _register(candidate: Candidate) -> None:
    CANDIDATES[candidate.name] = candidate


for _c in (
    Candidate("no-privacy", "no privacy (reference)", "none", False, _no_privacy, abs_risk=lambda pb: np.zeros(pb.n + 1)),
    Candidate("laplace", "Laplace count / n", "laplace", False, _laplace_raw, abs_risk=_laplace_raw_abs),
    Candidate("laplace-clamped", "Laplace count clamped to [0, n], / n", "laplace", False, _laplace_clamped,
              abs_risk=_abs_closed("laplace")),
    Candidate("laplace-rounded", "Laplace count clamped and rounded, / n", "laplace", False, _laplace_rounded,
              abs_risk=_abs_closed("rounded")),
    Candidate("geometric", "geometric count / n", "geometric", False, _geometric_raw, abs_risk=_abs_closed("geometric")),
    Candidate("geometric-minimax", "geometric count + minimax remap", "geometric", False, _geometric_minimax,
              abs_risk=_geometric_minimax_abs, abs_max_n=MINIMAX_ABS_MAX_N),
    Candidate("geometric-bayes", "geometric count + posterior mean", "geometric", True, _geometric_bayes,
              abs_risk=_geometric_bayes_abs("mean")),
    Candidate("geometric-median", "geometric count + posterior median", "geometric", True, _geometric_median,
              abs_risk=_geometric_bayes_abs("median")),
    Candidate("geometric-bayes-theta", "geometric count + posterior mean of theta", "geometric", True, _geometric_bayes_theta),
    Candidate("laplace-bayes", "Laplace count + posterior mean", "laplace", True, _laplace_bayes, LAPLACE_BAYES_MAX_N,
              abs_risk=_laplace_bayes_abs("mean"), abs_max_n=LAPLACE_ABS_MAX_N),
    Candidate("laplace-median", "Laplace count + posterior median", "laplace", True, None, 0,
              abs_risk=_laplace_bayes_abs("median"), abs_max_n=LAPLACE_ABS_MAX_N),
    Candidate("lbapp-clipped", "clipped LBaPP (Laplace on the posterior mean)", "laplace", True, _lbapp_clipped),
):
    _register(_c)


def _check_eps(eps: Any) -> float:
    return check_privacy_parameter(eps, "eps")


def _problem(n: Any, eps: Any, prior: Any, estimand: Any, eps_name: str = "eps") -> _Problem:
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    eps = check_privacy_parameter(eps, eps_name)
    estimand = check_choice("estimand", estimand, ESTIMANDS)
    pr = _as_prior(prior)
    return _Problem(n, eps, pr, estimand)


def candidate_moments(name: str, n: int, eps: float, prior: Any = (1.0, 1.0), estimand: str = "proportion") -> tuple[FloatArray, FloatArray]:
    """``E[est - c/n | c]`` and ``E[(est - c/n)^2 | c]`` of one candidate for every count ``c = 0..n``.

    Parameters
    ----------
    name : str
        A key of :data:`CANDIDATES`.
    n : int
        Number of records, ``1 <= n <= MAX_N`` (the candidate's ``max_n``).
    eps : float
        Privacy parameter in ``[1e-9, 20]``.
    prior : CountPrior or (a, b)
        The analyst's prior (used by the candidates with ``uses_prior``).
    estimand : {"proportion", "theta"}
        What the posterior means estimate (the prior-free candidates report ``count / n`` either way).
    """
    name = check_choice("name", name, tuple(CANDIDATES))
    pb = _problem(n, eps, prior, estimand)
    cand = CANDIDATES[name]
    if cand.moments is None or pb.n > cand.max_n:
        raise ValueError(f"candidate {name} has no squared-loss moments for n = {pb.n} (available for n <= {cand.max_n})")
    if name == "geometric-minimax" and pb.estimand == "theta" and pb.n > MINIMAX_THETA_MAX_N:
        raise ValueError(f"the minimax remap for theta is available for n <= {MINIMAX_THETA_MAX_N}, got n = {pb.n}")
    return cand.moments(pb)


def candidate_abs_risk(name: str, n: int, eps: float, prior: Any = (1.0, 1.0)) -> FloatArray:
    """``E[|est - c/n| | c]`` of one candidate for every count ``c = 0..n`` (absolute loss, the data set's proportion).

    Closed forms for the noisy count itself; the posterior mean or median of the geometric count by partial sums
    against the truncated geometric law (``O(n log n)``); the Laplace count's posterior mean or median by chapter
    4's integrator (:func:`dpbayes.counting.risk.fixed_count_risk`, ``n <= LAPLACE_ABS_MAX_N``).
    """
    name = check_choice("name", name, tuple(CANDIDATES))
    pb = _problem(n, eps, prior, "proportion")
    cand = CANDIDATES[name]
    if cand.abs_risk is None or pb.n > cand.abs_max_n:
        raise ValueError(f"candidate {name} has no absolute-loss risk for n = {pb.n} (available for n <= {cand.abs_max_n})")
    return cand.abs_risk(pb)


def _binomial_window(n: int, theta: float) -> tuple[int, int]:
    """Counts within 13 standard deviations (+13) of ``n theta``: the rest carries below ``1e-36``."""
    sd = float(np.sqrt(n * theta * (1.0 - theta)))
    lo = int(max(0, np.floor(n * theta - 13.0 * sd - 13.0)))
    hi = int(min(n, np.ceil(n * theta + 13.0 * sd + 13.0)))
    return lo, hi


def _theta_weights(n: int, theta: FloatArray) -> list[tuple[int, FloatArray, FloatArray]]:
    """For each ``theta``: the first count of its window, the binomial pmf there and ``c/n - theta``."""
    out = []
    for t in theta:
        lo, hi = _binomial_window(n, float(t))
        c = np.arange(lo, hi + 1)
        out.append((lo, stats.binom.pmf(c, n, t), c / n - t))
    return out


def _theta_risk_from(bias: FloatArray, msd: FloatArray, weights: list[tuple[int, FloatArray, FloatArray]]) -> FloatArray:
    out = np.empty(len(weights))
    for i, (lo, w, d) in enumerate(weights):
        hi = lo + w.size
        out[i] = float(w @ (msd[lo:hi] + 2.0 * d * bias[lo:hi] + d * d))
    return out


def theta_risk(bias: FloatArray, msd: FloatArray, theta: Any) -> FloatArray:
    """Mean squared error about ``theta`` when the records are ``Binomial(n, theta)`` with ``theta`` fixed.

    ``R(theta) = sum_c Binomial(c; n, theta) [msd(c) + 2 (c/n - theta) bias(c) + (c/n - theta)^2]``,
    over the counts within 13 standard deviations (the rest carries below ``1e-36``).
    """
    bias = np.asarray(bias, dtype=float)
    msd = np.asarray(msd, dtype=float)
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    if np.any(~np.isfinite(th)) or np.any(th < 0.0) or np.any(th > 1.0):
        raise ValueError("theta must lie in [0, 1]")
    # one window at a time (the same numbers as all windows at once, without holding them all)
    out = np.array([_theta_risk_from(bias, msd, _theta_weights(bias.size - 1, np.array([t])))[0] for t in th.ravel()])
    return out.reshape(np.shape(theta)) if np.ndim(theta) else out


def worst_theta_risk(
    bias: FloatArray, msd: FloatArray, grid_points: int = 201, weights: list[tuple[int, FloatArray, FloatArray]] | None = None,
) -> tuple[float, float]:
    """``(theta*, R(theta*))``: the largest risk over ``theta`` in ``[0, 1]``, located by optimisation.

    A grid of ``grid_points`` values, then bounded Brent search (``xatol = 1e-9``) between the grid
    neighbours of the largest value (:func:`dpbayes.core.extremes.refine_scanned_extreme`); the grid point is
    kept if larger.
    """
    grid_points = check_int("grid_points", grid_points, minimum=5)
    grid = np.linspace(0.0, 1.0, grid_points)
    values = theta_risk(bias, msd, grid) if weights is None else _theta_risk_from(bias, msd, weights)
    best_t, best_v, _ = refine_scanned_extreme(lambda t: float(theta_risk(bias, msd, np.array([t]))[0]), grid, values,
                                               maximize=True, xatol=1e-9)
    return best_t, best_v


def sampling_risk(n: int, prior: Any = (1.0, 1.0), estimand: str = "proportion", true_prior: Any = None) -> float:
    """The risk no release can avoid: 0 for the data set's proportion, ``E Var(theta | c)`` for ``theta``.

    ``true_prior`` (default: ``prior``) is the distribution the data come from.
    """
    pb = _problem(n, 1.0, prior, estimand)
    if pb.estimand == "proportion":
        return 0.0
    truth = pb.prior if true_prior is None else _as_prior(true_prior, "true_prior")
    _, v = truth.theta_mean_var(pb.n)
    return float(truth.weights(pb.n) @ v)


def bayes_risk(bias: FloatArray, msd: FloatArray, prior: Any = (1.0, 1.0), estimand: str = "proportion") -> float:
    """Mean squared error averaged over ``prior`` (the distribution the data come from).

    Proportion: ``sum_c P(c) msd(c)``. Theta: ``sum_c P(c) [E[(est - E[theta | c])^2 | c] + Var(theta | c)]``
    (given ``c`` the release is independent of ``theta``), with ``E[(est - m_c)^2 | c] = msd + 2 (c/n - m_c) bias
    + (c/n - m_c)^2``.
    """
    bias = np.asarray(bias, dtype=float)
    msd = np.asarray(msd, dtype=float)
    n = bias.size - 1
    pb = _problem(n, 1.0, prior, estimand)
    w = pb.prior.weights(n)
    if pb.estimand == "proportion":
        return float(w @ msd)
    m, v = pb.prior.theta_mean_var(n)
    d = np.arange(n + 1) / n - m
    return float(w @ (msd + 2.0 * d * bias + d * d + v))


def prior_free_half_width(eps: float, level: float = 0.9) -> int:
    """``k`` of :func:`prior_free_interval` (it does not depend on ``n``): ``O(1)`` time and memory."""
    eps = _check_eps(eps)
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    log_a = -eps
    # smallest k with log 2 + (k + 1) log a - log(1 + a) <= log(1 - level)
    k = int(np.ceil((np.log1p(-float(level)) - np.log(2.0) + np.log1p(np.exp(log_a))) / log_a - 1.0 - 1e-12))
    return max(k, 0)


def prior_free_interval(n: int, eps: float, level: float = 0.9) -> tuple[int, FloatArray]:
    """The prior-free interval ``[z - k, z + k]`` around the clamped geometric count, and its exact coverage.

    ``k`` is the smallest integer with ``P(|G| > k) = 2 a^(k + 1) / (1 + a) <= 1 - level`` (``a = e^-eps``);
    clamping only helps, and the coverage at count ``c`` is ``1 - a^(k+1)/(1 + a) ([n - c > k] + [c > k])``.

    Returns
    -------
    half_width : int
    coverage : ndarray, shape (n + 1,)
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    k = prior_free_half_width(eps, level)
    log_a = -float(eps)
    tail = float(np.exp((k + 1) * log_a - np.log1p(np.exp(log_a))))
    c = np.arange(n + 1)
    coverage = 1.0 - tail * ((n - c > k).astype(float) + (c > k).astype(float))
    return k, coverage


def interior_ratio(kind: str, eps: float) -> float:
    """Mean squared error of a prior-free Laplace release over the geometric one, far from the bounds, in closed form.

    Away from ``0`` and ``n`` (where clamping acts; the share of such counts vanishes as ``n eps`` grows)
    the geometric count has ``E[G^2] = 2a / (1 - a)^2 = 1 / (2 sinh^2(eps/2))`` (``a = e^-eps``), Laplace noise
    ``2 / eps^2``, and Laplace noise rounded to an integer ``E[D^2] = e^(eps/2) a (1 + a) / (1 - a)^2``. Hence

    * ``kind="laplace"``: ``(sinh(eps/2) / (eps/2))^2``, the cost of continuous noise on an integer (``> 1``,
      ``1 + eps^2/12 + O(eps^4)``);
    * ``kind="rounded"``: ``cosh(eps/2)``, the cost of rounding Laplace noise instead of drawing integer noise.
      This one holds exactly at *every* count, clamped or not, and for every loss that is zero at the truth:
      Laplace noise rounded to an integer has ``cosh(eps/2)`` times the geometric law at every non-zero value
      (chapter 2's identity, :func:`dpbayes.posterior.geometric.cost_factor` with ``kind="continuous"``), and rounding commutes with
      clamping to ``{0..n}``.

    The posterior-mean remap of a Laplace count with a flat prior changes the first ratio only in the
    fifth significant digit far from the bounds up to ``eps = 1`` (``1.08610`` against ``1.08616``); at larger
    eps it snaps the release towards integers and gives part of the cost back (``3.04`` against ``3.29`` at
    ``eps = 4``; both tested).
    """
    kind = check_choice("kind", kind, ("laplace", "rounded"))
    eps = _check_eps(eps)
    half = eps / 2.0
    if kind == "laplace":
        return float((np.sinh(half) / half) ** 2)
    return float(np.cosh(half))


# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Exact risks of the candidates for one ``(n, eps, prior, estimand, loss)``; see :func:`compare_estimators`.

    Every array is indexed like ``names``. ``worst_at`` is the count (proportion) or ``theta`` (theta)
    where the worst risk is attained; ``share_worse`` is the share of counts (proportion) or of a
    201-point ``theta`` grid (theta) where the candidate's risk exceeds the best prior-free candidate's
    there (NaN for the prior-free candidates themselves and the reference).
    """

    n: int
    eps: float
    prior: str
    true_prior: str
    estimand: str
    names: tuple[str, ...]
    labels: tuple[str, ...]
    uses_prior: tuple[bool, ...]
    bayes_risk: FloatArray
    sampling_risk: float
    privacy_risk: FloatArray
    worst_risk: FloatArray
    worst_at: FloatArray
    share_worse: FloatArray
    skipped: tuple[str, ...] = ()
    loss: str = "squared"
    share_tolerance: float = SHARE_TOLERANCE
    risk_per_case: dict[str, FloatArray] | None = field(default=None, repr=False, compare=False)

    def _releases(self) -> list[int]:
        return [i for i, nm in enumerate(self.names) if not CANDIDATES[nm].reference]

    @property
    def best(self) -> str:
        """The release (not the reference) with the smallest Bayes risk: the *average* criterion."""
        return self.names[min(self._releases(), key=lambda i: self.bayes_risk[i])]

    @property
    def best_worst(self) -> str:
        """The release with the smallest worst risk over data sets: the *worst-case* criterion."""
        return self.names[min(self._releases(), key=lambda i: (self.worst_risk[i], self.bayes_risk[i]))]

    def guarded(self, guard: float) -> tuple[str, ...]:
        """The releases whose worst risk is at most ``(1 + guard)`` times the smallest worst risk."""
        guard = float(check_in_range("guard", guard, 0.0, 10.0))
        floor = min(self.worst_risk[i] for i in self._releases())
        return tuple(self.names[i] for i in self._releases() if self.worst_risk[i] <= (1.0 + guard) * floor)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per candidate (needs the ``data`` extra: pandas)."""
        from dpbayes.core._extras import require

        pd = require("pandas", "Comparison.to_frame")
        opt = float(self.bayes_risk[self.names.index(self.best)])
        return pd.DataFrame({
            "estimator": list(self.labels),
            "uses prior": list(self.uses_prior),
            "Bayes risk": self.bayes_risk,
            "privacy-added risk": self.privacy_risk,
            "× best": self.bayes_risk / opt,
            "worst risk": self.worst_risk,
            "worst × best worst": self.worst_risk / float(self.worst_risk[self.names.index(self.best_worst)]),
            "worst at": self.worst_at,
            f"share worse than prior-free (by > {100 * self.share_tolerance:g} %)": self.share_worse,
        }, index=pd.Index(list(self.names), name="candidate"))


def compare_estimators(
    n: int,
    epsilon: float,
    *,
    prior: Any = (1.0, 1.0),
    estimand: str = "proportion",
    true_prior: Any = None,
    candidates: Any = None,
    loss: str = "squared",
    share_tolerance: float = SHARE_TOLERANCE,
    per_case: bool = False,
) -> Comparison:
    """Exact risks of every registered candidate for a count of ``n`` records under eps-DP.

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= 10**7``; candidates whose ``max_n`` is smaller are
        listed in ``skipped``.
    epsilon : float
        Privacy parameter in ``[1e-9, 20]`` (neighbours: one record replaced).
    prior : CountPrior or (a, b)
        The analyst's prior, used by the candidates that post-process with it (default uniform).
    estimand : {"proportion", "theta"}
        The data set's proportion ``c/n`` or the population parameter ``theta``.
    true_prior : CountPrior or (a, b), optional
        The distribution the data really come from (default: ``prior``); a different one measures a
        wrong or over-confident prior.
    candidates : sequence of str, optional
        Names from :data:`CANDIDATES` (default: all).
    loss : {"squared", "absolute"}
        Squared error (both estimands) or absolute error (the data set's proportion only); a candidate
        without that loss's risk, or beyond its ``max_n`` / ``abs_max_n``, is listed in ``skipped``.
    share_tolerance : float
        A prior-based candidate counts as worse than the best prior-free one at a data set when its
        risk there exceeds the prior-free one's by more than this fraction (default 1 %; 0: any excess).
    per_case : bool
        Keep every candidate's risk at every data set (counts, or the 201-point ``theta`` grid) in
        ``risk_per_case``.

    Returns
    -------
    Comparison
        Bayes risk under ``true_prior``, its privacy-added part (Bayes risk minus
        :func:`sampling_risk`), the worst risk over data sets (counts for the proportion; ``theta`` in
        ``[0, 1]``, located by optimisation, for theta) and the share of data sets where a prior-based
        candidate loses to the best prior-free one. ``O(n)`` per candidate, except ``laplace-bayes``
        (``O(n max(1, eps))``, ``n <= 10**5``) and the theta worst case (201 binomial windows).

    Notes
    -----
    No confidential value enters: the comparison depends on public ``n``, ``epsilon`` and the priors only.
    """
    pb = _problem(n, epsilon, prior, estimand, eps_name="epsilon")
    loss = check_choice("loss", loss, LOSSES)
    share_tolerance = float(check_in_range("share_tolerance", share_tolerance, 0.0, 1.0))
    if loss == "absolute" and pb.estimand != "proportion":
        raise ValueError("loss='absolute' is available for estimand='proportion' (the data set's proportion)")
    truth = pb.prior if true_prior is None else _as_prior(true_prior, "true_prior")
    if truth.kind == "binomial" and pb.estimand == "theta" and pb.prior.kind == "binomial":
        raise ValueError("with a known p there is no theta to estimate: use estimand='proportion'")
    names = tuple(CANDIDATES) if candidates is None else tuple(check_choice("candidates", c, tuple(CANDIDATES)) for c in candidates)
    if not names:
        raise ValueError("candidates must name at least one estimator")

    def available(nm: str) -> bool:
        cand = CANDIDATES[nm]
        if nm in ("lbapp-clipped", "geometric-bayes-theta") and pb.prior.kind != "beta":
            return False
        if nm in ("geometric-bayes-theta", "geometric-median") and pb.estimand == "theta":
            return False  # the same as geometric-bayes there; the count's median is no estimate of theta
        if nm == "geometric-minimax" and pb.estimand == "theta" and pb.n > MINIMAX_THETA_MAX_N:
            return False
        if loss == "absolute":
            return cand.abs_risk is not None and pb.n <= cand.abs_max_n
        return cand.moments is not None and pb.n <= cand.max_n

    skipped = tuple(nm for nm in names if not available(nm))
    names = tuple(nm for nm in names if nm not in skipped)
    grid = np.linspace(0.0, 1.0, 201)
    weights = _theta_weights(pb.n, grid) if pb.estimand == "theta" else None
    case_risk: dict[str, FloatArray] = {}
    bayes = np.empty(len(names))
    worst = np.empty(len(names))
    worst_at = np.empty(len(names))
    w_truth = truth.weights(pb.n)
    for i, nm in enumerate(names):
        if loss == "absolute":
            r = CANDIDATES[nm].abs_risk(pb)  # type: ignore[misc]
            case_risk[nm] = r
            bayes[i] = float(w_truth @ r)
            worst_at[i] = float(np.argmax(r))
            worst[i] = float(r[int(worst_at[i])])
            continue
        b, m = CANDIDATES[nm].moments(pb)  # type: ignore[misc]
        bayes[i] = bayes_risk(b, m, truth, pb.estimand)
        if pb.estimand == "proportion":
            case_risk[nm] = m
            worst_at[i] = float(np.argmax(m))
            worst[i] = float(m[int(worst_at[i])])
        else:
            assert weights is not None
            case_risk[nm] = _theta_risk_from(b, m, weights)
            worst_at[i], worst[i] = worst_theta_risk(b, m, weights=weights)
    samp = sampling_risk(pb.n, truth if truth.kind == "beta" else pb.prior, pb.estimand) if pb.estimand == "theta" else 0.0
    free = [nm for nm in names if not CANDIDATES[nm].uses_prior and not CANDIDATES[nm].reference]
    best_free = np.min(np.stack([case_risk[nm] for nm in free]), axis=0) if free else None
    share = np.full(len(names), np.nan)
    for i, nm in enumerate(names):
        if CANDIDATES[nm].uses_prior and best_free is not None:
            share[i] = float(np.mean(case_risk[nm] > best_free * (1.0 + max(share_tolerance, 1e-9)) + 1e-300))
    return Comparison(
        n=pb.n, eps=pb.eps, prior=pb.prior.label, true_prior=truth.label, estimand=pb.estimand, names=names,
        labels=tuple(CANDIDATES[nm].label for nm in names), uses_prior=tuple(CANDIDATES[nm].uses_prior for nm in names),
        bayes_risk=bayes, sampling_risk=samp, privacy_risk=bayes - samp, worst_risk=worst, worst_at=worst_at,
        share_worse=share, skipped=skipped, loss=loss, share_tolerance=share_tolerance,
        risk_per_case=case_risk if per_case else None,
    )
