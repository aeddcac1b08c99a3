"""Private releases of real data: OpenDP's vetted noise samplers followed by a Bayes remap.

The rest of ``dpbayes`` draws noise with :class:`numpy.random.Generator` in floating point,
which is right for simulation (fast, seeded) but is not a safe way to protect real data: the
low-order bits of floating-point Laplace samples can reveal the input (Mironov, "On significance
of the least significant bits for differential privacy", CCS 2012). This module draws the noise
with OpenDP instead (pinned ``opendp==0.16.0``), whose integer (discrete Laplace / geometric)
sampler is exact and whose continuous Laplace sampler is floating-point safe, and then applies
the post-processing that the book shows to be accurate:

* :class:`OptimalProportionRelease` / :func:`release_proportion` -- the optimal eps-DP Bayes
  estimate of a proportion from a count in ``{0..n}`` (chapter 1): OpenDP geometric noise on the
  count, clamped to ``{0..n}`` (the truncated geometric mechanism of Ghosh, Roughgarden &
  Sundararajan 2009), then the Bayes remap of the chapter 1 exact solver
  (:func:`dpbayes.ubapp.ubapp_exact`; UBaPP paper, linear program (11) and Algorithm 1) for a
  Beta or grid prior and squared or absolute loss;
* :class:`GeometricCountRelease` / :func:`release_count_geometric` -- the count itself released with
  OpenDP's geometric noise, clamped to ``{0..n}``: prior-free (``estimator="none"``, with an exact
  prior-free interval), or followed by the posterior mean or median under a ``Beta(a, b)`` prior on
  the proportion (a hierarchical prior for an unknown ``p``; flat: ``(1, 1)``) or a known ``p``
  (chapter 5: the optimal count release);
* :class:`LaplaceCountRelease` / :func:`release_count_laplace` -- a count released with OpenDP's
  Laplace measurement, followed by the posterior mean (Naldi & D'Acquisto, eq. (11)) or median
  under a ``Binomial(n, p)`` prior (chapter 4, :mod:`dpbayes.counting`).

Every release names its **estimand**: ``"theta"`` (the population proportion of which the records are
a sample: even without noise the posterior mean has the sampling risk ``E Var(theta | count)``),
``"proportion"`` (the data set's own ``count / n``) or ``"count"``; and reports its exact risks for
that estimand: the Bayes risk under the prior, the part of it privacy adds, and the worst risk over
data sets (:mod:`dpbayes.estimator_choice`, which also compares the candidates for a user's ``n``
and ``eps``).

Unit of privacy (both mechanisms): one record of a data set of ``n`` records, each contributing 0
or 1 to the count. Two data sets are neighbours when they differ in one record, so their counts
differ by at most 1; ``n`` is public (not computed from the confidential data). Every release
spends ``eps`` of privacy budget: ``k`` releases about the same records are ``k eps``-DP together
(basic composition), and the same count released twice is *two* releases.

OpenDP's measurements used here are behind its ``"contrib"`` feature flag, which
:func:`opendp_measurement` switches on (see the comment there). Beyond the book's sources.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes import counting, estimator_choice
from dpbayes._extras import lazy_module, require
from dpbayes.geometric import geometric_kernel_sums, geometric_row_factors, truncated_geometric_logmatrix
from dpbayes.losses import LOSSES
from dpbayes.ubapp import (
    _log_poch, _log_space_mean_offset, beta_posterior_mean_remap, beta_prior_on_grid, betabinom_logpmf, ubapp_exact,
)
from dpbayes.validation import (
    check_choice, check_distribution, check_grid, check_int, check_positive,
)

stats = lazy_module("scipy.stats")
optimize = lazy_module("scipy.optimize")

__all__ = [
    "OPENDP_VERSION",
    "MAX_N",
    "OUTPUT_LAW_MAX_N",
    "CONSTANT_TIME_MAX_N",
    "MIN_EPS",
    "MAX_EPS",
    "ProportionRelease",
    "OptimalProportionRelease",
    "release_proportion",
    "CountRelease",
    "LaplaceCountRelease",
    "release_count_laplace",
    "GeometricCountRelease",
    "GeometricCountReleaseResult",
    "release_count_geometric",
    "COUNT_ESTIMATORS",
    "MEDIAN_RISK_MAX_N",
    "PRIOR_SHARE_MAX",
    "opendp_measurement",
    "PrivacyMapError",
]

#: The OpenDP release pinned in ``requirements.txt``; a different installed version is refused.
OPENDP_VERSION = "0.16.0"
#: Largest number of records of :class:`OptimalProportionRelease` (a memory bound, checked before
#: anything is allocated): the remap and the exact risk are built in ``O(n)`` time and memory, about
#: 0.3 kB per record at the peak (``benchmarks/bench_release.py``: ~ 30 MB at n = 10**5), so
#: ``MAX_N`` records need about 3 GB. A grid prior is further bounded by :data:`dpbayes.ubapp.MAX_GRID_WORK`.
MAX_N = 10**7
#: Largest ``n`` of :meth:`OptimalProportionRelease.output_law`, a dense ``(n + 1) x (n + 1)`` matrix
#: (200 MB at 5000): for the privacy audit of small releases.
OUTPUT_LAW_MAX_N = 5000
#: Up to this ``n`` the geometric noise is drawn by OpenDP's bounded sampler, which runs in constant
#: time (no timing side channel) but costs O(n) per draw (25 ms at 10**4, 0.6 s at 10**6). Above it,
#: OpenDP's unbounded integer sampler (discrete Laplace, same law before the clamp; expected O(1) per
#: draw) is used and the result clamped to ``{0..n}``: the same truncated geometric law
#: (clamping is post-processing), but the draw's running time varies with the noise.
CONSTANT_TIME_MAX_N = 10_000
LAPLACE_ESTIMATORS = ("mean", "median")
#: Smallest eps of a release: far below it OpenDP's conservative arithmetic cannot build the sampler
#: (eps = 1e-300 fails inside OpenDP), and at 1e-9 the noise (scale 10**9) already hides any count.
MIN_EPS = 1e-9
#: Largest eps of a release: the geometric noise moves the count with probability
#: ``2 e^-eps / (1 + e^-eps)``, 4e-9 at eps = 20; above, a release publishes the exact count.
MAX_EPS = 20.0
#: Largest share of the prior in the ``theta`` estimate, ``(a + b) / (a + b + n)``: above it a release
#: would report the prior and ignore the data, and is refused.
PRIOR_SHARE_MAX = 0.99


def _check_eps(eps: Any) -> float:
    """A real scalar in ``[MIN_EPS, MAX_EPS]`` (not a bool, not an array), named in every message."""
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number in [{MIN_EPS:g}, {MAX_EPS:g}], got {type(eps).__name__} {eps!r}")
    value = float(eps)
    if not MIN_EPS <= value <= MAX_EPS:  # also NaN
        raise ValueError(
            f"eps must lie in [{MIN_EPS:g}, {MAX_EPS:g}], got {value!r} (above {MAX_EPS:g} a release publishes the "
            f"count itself: the noise moves it with probability < 4e-9; below {MIN_EPS:g} it says nothing about the data)"
        )
    return value


def _check_count(count: Any, n: int) -> int:
    """The confidential count, an integer in ``[0, n]``; its value is never repeated in a message (logs)."""
    message = f"count must be an integer in [0, {n}] (the value given is confidential and not repeated here)"
    if isinstance(count, (bool, np.bool_)):
        raise TypeError(message)
    if isinstance(count, numbers.Integral):
        value = int(count)
    elif isinstance(count, numbers.Real) and float(count).is_integer():
        value = int(float(count))
    else:
        raise TypeError(message)
    if not 0 <= value <= n:
        raise ValueError(message)
    return value


def _check_open_probability(name: str, value: Any) -> float:
    """A real scalar strictly inside (0, 1): 0 and 1 are priors certain of the count (they ignore the data)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {type(value).__name__} {value!r}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(
            f"{name} must lie in (0, 1), got {v!r}" + (" (a prior certain of the count: the release would ignore the data)" if v in (0.0, 1.0) else "")
        )
    return v


def _opendp() -> Any:
    """Import OpenDP, check its version and switch on the feature flag the measurements need."""
    opendp = require("opendp", "dpbayes.release (OpenDP's samplers)")
    dp = require("opendp.prelude", "dpbayes.release (OpenDP's samplers)")
    installed = getattr(opendp, "__version__", None) or _installed_version("opendp")
    if installed != OPENDP_VERSION:
        raise ImportError(f"dpbayes.release is tested with opendp=={OPENDP_VERSION}, found {installed}")
    # OpenDP ships measurements whose privacy proofs have not completed its own vetting process
    # behind the "contrib" flag; the geometric and Laplace measurements used here are among them
    # (their proofs are published with the library). We rely on them, and say so in every
    # docstring, rather than re-implementing a sampler that would have no proof at all.
    dp.enable_features("contrib")
    return dp


def _installed_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


class PrivacyMapError(RuntimeError):
    """OpenDP's privacy map of a measurement exceeds the eps it was built for."""


def _noise_scale(eps: float) -> float:
    """Noise scale ``1 / eps`` for a sensitivity-1 count (the one place a test may mutate)."""
    return 1.0 / eps


def opendp_measurement(kind: str, eps: float, n: int | None = None) -> Any:
    """The OpenDP measurement of a count with noise of scale ``1/eps``, its privacy map checked.

    Parameters
    ----------
    kind : {"geometric", "laplace"}
        ``"geometric"``: ``dp.m.make_geometric`` on integers (two-sided geometric noise,
        ``P(G = k) ∝ exp(-eps |k|)``), with ``bounds=(0, n)`` so that OpenDP samples in constant
        time; ``"laplace"``: ``dp.m.make_laplace`` on non-NaN floats.
    eps : float
        Privacy parameter, ``> 0``.
    n : int, optional
        Number of records (required for ``"geometric"``), ``1 <= n <= MAX_N``. Up to
        :data:`CONSTANT_TIME_MAX_N` the measurement is bounded to ``[0, n]`` (OpenDP's constant-time
        sampler); above, it is unbounded and the caller clamps its output.

    Returns
    -------
    opendp.mod.Measurement
        A measurement whose privacy map, at input distance 1 (one record), is ``<= eps``.

    Notes
    -----
    Privacy: OpenDP's map is the guarantee; the scale is nudged up by a few ulps when rounding
    in ``1 / (1 / eps)`` would make the map exceed ``eps``, and :class:`PrivacyMapError` is raised
    if the map still exceeds ``eps`` (a mis-calibrated scale never reaches the data). ``dp.enable_features("contrib")`` is
    switched on (OpenDP's flag for measurements outside its vetted core).
    """
    kind = check_choice("kind", kind, ("geometric", "laplace"))
    eps = check_positive("eps", eps)
    if kind == "geometric":
        if n is None:
            raise ValueError(f"n must be given for the geometric measurement (an integer in [1, {MAX_N}])")
        n = check_int("n", n, minimum=1, maximum=MAX_N)
    scale = _noise_scale(eps)
    for _ in range(8):
        meas = _build_measurement(kind, scale, n)
        spent = float(meas.map(1 if kind == "geometric" else 1.0))
        if spent <= eps:
            return meas
        scale = float(np.nextafter(scale, np.inf))
    raise PrivacyMapError(f"OpenDP's privacy map gives {spent!r} > eps = {eps!r} at noise scale {scale!r}")


def _build_measurement(kind: str, scale: float, n: int | None) -> Any:
    """The bare OpenDP measurement (no check against eps; :func:`opendp_measurement` does that)."""
    dp = _opendp()
    if kind == "geometric":
        # 64-bit integers: count + noise cannot overflow for any n <= MAX_N and eps >= 1e-9
        space = (dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"))
        if n is not None and n <= CONSTANT_TIME_MAX_N:
            return dp.m.make_geometric(*space, scale=scale, bounds=(0, n))
        return dp.m.make_geometric(*space, scale=scale)
    return dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale)


# --------------------------------------------------------------------------------------------
# The optimal release of a proportion (chapter 1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProportionRelease:
    """One release by :class:`OptimalProportionRelease`.

    Attributes
    ----------
    estimate : float
        Bayes estimate of the proportion ``theta`` (posterior mean for squared loss, posterior
        median for absolute loss, restricted to the grid for a grid prior).
    noisy_count : int
        The released noisy count in ``{0..n}`` (the estimate is a function of it).
    n : int
        Number of records.
    eps : float
        Privacy parameter of the release.
    eps_spent : float
        OpenDP's privacy map at one record (``<= eps``).
    loss : str
        ``"squared"`` or ``"absolute"``.
    bayes_risk : float
        Exact Bayes risk of the whole procedure under the prior, ``E[loss(target, estimate)]``.
    estimand : {"theta", "proportion"}
        What the estimate targets: the population parameter ``theta`` or the data set's ``count / n``.
    privacy_risk : float or None
        The part of ``bayes_risk`` that privacy adds (squared loss, Beta prior): ``bayes_risk`` minus
        the sampling risk ``E Var(theta | count)`` (theta) or all of it (proportion). ``None`` otherwise.
    worst_risk : float or None
        The largest mean squared error over data sets (squared loss, Beta prior): over ``theta`` in
        ``[0, 1]`` (theta, located by optimisation) or over the counts (proportion). ``None`` otherwise.
    """

    estimate: float
    noisy_count: int
    n: int
    eps: float
    eps_spent: float
    loss: str
    bayes_risk: float
    estimand: str = "theta"
    privacy_risk: float | None = None
    worst_risk: float | None = None


def _beta_mixture_median(weights: NDArray[np.float64], alpha: NDArray[np.float64], beta: NDArray[np.float64]) -> float:
    """Median of ``sum_y weights[y] Beta(alpha[y], beta[y])`` (weights sum to 1), by Brent's method."""
    f = lambda t: float(weights @ special.betainc(alpha, beta, t)) - 0.5  # noqa: E731
    return float(optimize.brentq(f, 0.0, 1.0, xtol=1e-14, rtol=4 * np.finfo(float).eps))


def _beta_abs_deviation(alpha: NDArray[np.float64], beta: NDArray[np.float64], m: float) -> NDArray[np.float64]:
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

    Every ``z`` is solved by :func:`_median_by_levels` (Taylor expansions around shared expansion
    points, sums over ``y`` against the geometric kernel: ``O(n + (levels) x (window))``, about ``n +
    10 sqrt(n) min(92 / eps, 30 sqrt(n))`` entries of a few elementwise operations, of which only the
    ``z`` themselves go through the kernel's recursions; the posterior mean,
    :func:`dpbayes.ubapp.beta_posterior_mean_remap`, gives the starting points). The few ``z`` it
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
    """:func:`dpbayes.ubapp.betabinom_logpmf` at ``y_all = 0, 1, ..., n``, bit for bit, without the
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
    """``E[theta | z]``, the starting points of :func:`_median_by_levels`: the estimates of
    :func:`dpbayes.ubapp.beta_posterior_mean_remap` by the same arithmetic, from the already scaled
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

    For each ``z`` the sum runs over the window of :func:`_posterior_windows` (neglected share of
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
#: Spacing of the expansion points of :func:`_median_by_levels`, in standard deviations of the posterior
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
    derivatives ``psi_m = p_m + q_m u`` at the levels ``t = sin(level hu)^2`` (see :func:`_median_by_levels`),
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
    counts that carry their posterior (:func:`_posterior_windows`, :func:`_kernel_sums_at`): no
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


class OptimalProportionRelease:
    """The optimal eps-DP Bayes estimate of a proportion, released through OpenDP.

    Model (UBaPP paper, Section 5.3, chapter 1): ``n`` records, each 1 with probability
    ``theta``; the confidential statistic is their count ``c`` in ``{0..n}``; the prior on
    ``theta`` is ``Beta(a, b)`` or a distribution on a grid. The release is

    1. ``z = clamp(c + G, 0, n)`` with ``G`` OpenDP's two-sided geometric noise of scale ``1/eps``
       (the truncated geometric mechanism, :func:`dpbayes.geometric.truncated_geometric_logmatrix`);
    2. ``estimate = remap[z]``, the estimate of least posterior expected loss given ``z``
       (chapter 1's exact solver, :func:`dpbayes.ubapp.ubapp_exact`).

    Chapter 1 shows numerically (not by proof) that this equals the optimum of the UBaPP linear
    program (11) for the binomial likelihood with squared or absolute loss: no eps-DP mechanism
    has a smaller Bayes risk.

    Everything except the noise is computed once here, without the ``(n + 1)^2`` law: ``O(n)`` time
    and memory for the Beta prior and squared loss (:func:`dpbayes.ubapp.beta_posterior_mean_remap`),
    ``O(n + sqrt(n) / eps)`` time and memory for absolute loss
    (``beta_posterior_median_remap``), ``O(n M)`` time and ``O(n + M)`` memory for a grid prior
    of ``M`` points (:func:`dpbayes.ubapp.ubapp_exact`). Each :meth:`release` costs one OpenDP draw.

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= MAX_N`` (``10**7``, a memory bound).
    eps : float
        Privacy parameter, a real number in ``[MIN_EPS, MAX_EPS] = [1e-9, 20]``.
    loss : {"squared", "absolute"}
        Loss of the Bayes remap and of ``bayes_risk``.
    beta_prior : tuple of float, optional
        ``(a, b)`` of the Beta prior (both ``> 0``); ``None`` (default) is ``(1, 1)``, uniform. With
        ``theta_grid`` and no ``prior_weights``, this Beta is discretised on the grid; giving both
        ``beta_prior`` and ``prior_weights`` is refused.
    theta_grid : array_like, optional
        Strictly increasing values in ``[0, 1]``: the prior lives on (and the estimate is chosen
        from) this grid, as in the paper's LP. ``None``: continuous ``theta``.
    prior_weights : array_like, optional
        Prior probabilities on ``theta_grid`` (non-negative, summing to 1).
    estimand : {"theta", "proportion"}
        ``"theta"`` (default, chapter 1): the population parameter, estimated by ``E[theta | z]``.
        ``"proportion"``: the data set's own ``count / n``, estimated by ``E[count | z] / n`` (squared loss
        and a Beta prior only), which shrinks towards the prior mean far less: at ``n = 526``, ``eps = 1``
        and a uniform prior the ``theta`` remap has a larger error about ``count / n`` than the plain
        clamped geometric count for most counts (chapter 5).

    Notes
    -----
    Privacy guarantee: eps-differential privacy for data sets of ``n`` records differing in one
    record (the count moves by at most 1). Step 1 is OpenDP's geometric measurement, whose
    privacy map at distance 1 is checked to be ``<= eps`` (:func:`opendp_measurement`); clamping and
    the remap are post-processing. The exact privacy loss of the output law is ``eps``
    (:meth:`output_law`; tested with :mod:`dpbayes.audit`). Uses ``dp.enable_features("contrib")``.
    """

    def __init__(
        self,
        n: int,
        eps: float,
        *,
        loss: str = "squared",
        beta_prior: tuple[float, float] | None = None,
        theta_grid: ArrayLike | None = None,
        prior_weights: ArrayLike | None = None,
        estimand: str = "theta",
    ) -> None:
        self.n = check_int("n", n, minimum=1, maximum=MAX_N)
        self.eps = _check_eps(eps)
        self.loss = check_choice("loss", loss, LOSSES)
        self.estimand = check_choice("estimand", estimand, ("theta", "proportion"))
        if self.estimand == "proportion" and (self.loss != "squared" or theta_grid is not None):
            raise ValueError("estimand='proportion' is available for squared loss and a Beta prior (no theta_grid)")
        if beta_prior is not None and prior_weights is not None:
            raise ValueError("give beta_prior or prior_weights, not both (prior_weights replaces the Beta prior)")
        pair = (1.0, 1.0) if beta_prior is None else beta_prior
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"beta_prior must be a pair (a, b) of numbers > 0, got {beta_prior!r}")
        a = float(check_positive("beta_prior[0]", pair[0]))
        b = float(check_positive("beta_prior[1]", pair[1]))
        if self.estimand == "theta" and (a + b) / (a + b + self.n) > PRIOR_SHARE_MAX:
            raise ValueError(
                f"beta_prior is worth a + b = {a + b:g} records against n = {self.n}: the estimate would be more than "
                f"{PRIOR_SHARE_MAX:.1%} prior and ignore the data (use a weaker prior)"
            )
        self._beta = (a, b) if theta_grid is None else None
        self._risks: tuple[float, float] | None = None
        if theta_grid is None:
            if prior_weights is not None:
                raise ValueError("prior_weights needs theta_grid (the grid the weights live on)")
            self._init_beta(a, b)
        else:
            theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
            if theta.size < 2:
                raise ValueError("theta_grid must have at least 2 points (a one-point prior ignores the data)")
            if prior_weights is None:
                weights = beta_prior_on_grid(theta, a, b)
            else:
                if isinstance(prior_weights, (str, bytes)):
                    raise TypeError(f"prior_weights must be an array of probabilities, got {prior_weights!r}")
                try:
                    weights = check_distribution("prior_weights", np.asarray(prior_weights, dtype=float), shape=theta.shape)
                except (TypeError, ValueError) as exc:
                    if str(exc).startswith("prior_weights"):
                        raise
                    raise TypeError(f"prior_weights must be an array of probabilities, got {prior_weights!r}") from exc
            if float(np.max(weights)) >= 1.0 - 1e-15:
                raise ValueError("prior_weights put all their mass on one point (a prior certain of theta ignores the data)")
            sol = ubapp_exact(self.n, self.eps, theta_grid=theta, prior=weights, loss=self.loss)
            self.estimates = theta[sol.info["remap"]]
            self.bayes_risk = float(sol.risk)
        # built last: a bad argument above fails before OpenDP is touched
        self._measurement = opendp_measurement("geometric", self.eps, self.n)
        self.eps_spent = float(self._measurement.map(1))

    def _init_beta(self, a: float, b: float) -> None:
        if self.estimand == "proportion":
            bias, msd = estimator_choice.candidate_moments("geometric-bayes", self.n, self.eps, (a, b), "proportion")
            shift = estimator_choice._geometric_count_posterior_mean(betabinom_logpmf(np.arange(self.n + 1.0), self.n, a, b), self.eps)
            self.estimates = (np.arange(self.n + 1) + shift) / self.n
            self.bayes_risk = estimator_choice.bayes_risk(bias, msd, (a, b), "proportion")
            self._risks = (self.bayes_risk, float(np.max(msd)))
            return
        if self.loss == "squared":
            self.estimates, self.bayes_risk, _ = beta_posterior_mean_remap(self.n, self.eps, a, b)
        else:
            # absolute loss, continuous theta: posterior median of the Beta mixture given z, and the
            # exact risk sum_z sum_y P(z, y) E[|theta - m_z| | y] (theta | y ~ Beta(a + y, b + n - y))
            self.estimates, self.bayes_risk = beta_posterior_median_remap(self.n, self.eps, a, b)

    def _init_beta_dense(self, a: float, b: float) -> None:
        """The ``O(n^2)`` reference of :meth:`_init_beta` (tests compare with it; ``n <= OUTPUT_LAW_MAX_N``)."""
        if self.n > OUTPUT_LAW_MAX_N:
            raise ValueError(f"the dense reference needs n <= {OUTPUT_LAW_MAX_N}, got {self.n}")
        if self.loss == "squared":
            from dpbayes.ubapp import ubapp_exact_dense

            sol = ubapp_exact_dense(self.n, self.eps, beta_prior=(a, b))
            self.estimates = np.asarray(sol.estimates, dtype=float)
            self.bayes_risk = float(sol.risk)
            return
        y = np.arange(self.n + 1, dtype=float)
        joint = np.exp(truncated_geometric_logmatrix(self.n, self.eps)) * stats.betabinom.pmf(y, self.n, a, b)[None, :]
        alpha, beta = a + y, b + self.n - y
        est = np.empty(self.n + 1)
        risk = 0.0
        for z in range(self.n + 1):
            w = joint[z] / joint[z].sum()
            est[z] = _beta_mixture_median(w, alpha, beta)
            risk += float(joint[z] @ _beta_abs_deviation(alpha, beta, est[z]))
        self.estimates = est
        self.bayes_risk = risk

    def output_law(self) -> NDArray[np.float64]:
        """Exact law of the released noisy count: ``M[c, z] = P(z | count c)``, shape ``(n + 1, n + 1)``.

        Rows are inputs (as :func:`dpbayes.audit.exact_privacy_loss` expects); the estimate is
        ``estimates[z]``, so this is the law of the whole release. A dense matrix, for small
        releases only (the privacy audit's exact loss): ``n <= OUTPUT_LAW_MAX_N`` (5000, 200 MB).
        """
        if self.n > OUTPUT_LAW_MAX_N:
            raise ValueError(
                f"output_law() is a dense (n + 1) x (n + 1) matrix, available for n <= {OUTPUT_LAW_MAX_N}, got n = {self.n}"
            )
        return np.exp(truncated_geometric_logmatrix(self.n, self.eps)).T

    def release(self, count: int) -> ProportionRelease:
        """Release the proportion for a confidential ``count`` in ``[0, n]`` (one OpenDP draw).

        Each call spends ``eps`` (see the class notes on composition).
        """
        count = _check_count(count, self.n)
        # Up to CONSTANT_TIME_MAX_N OpenDP's bounded sampler already returns values in [0, n]; above,
        # the unbounded draw is clamped here. Clamping is post-processing, and clamped two-sided
        # geometric noise is the truncated geometric law (output_law) whatever the sampler does at the bounds.
        z = int(min(max(int(self._measurement(count)), 0), self.n))
        privacy_risk, worst_risk = self.risks() if self._beta is not None and self.loss == "squared" else (None, None)
        return ProportionRelease(
            estimate=float(self.estimates[z]), noisy_count=z, n=self.n, eps=self.eps, eps_spent=self.eps_spent,
            loss=self.loss, bayes_risk=self.bayes_risk, estimand=self.estimand, privacy_risk=privacy_risk,
            worst_risk=worst_risk,
        )

    def risks(self) -> tuple[float, float]:
        """``(privacy_risk, worst_risk)`` of squared loss with a Beta prior (see :class:`ProportionRelease`).

        Computed exactly on first use in ``O(n)`` (:mod:`dpbayes.estimator_choice`; the theta worst case adds
        201 binomial windows and a bounded Brent search) and kept; they depend on ``n``, ``eps`` and the
        prior only, never on a count.
        """
        if self._beta is None or self.loss != "squared":
            raise ValueError("privacy and worst-case risks are computed for squared loss and a Beta prior (no theta_grid)")
        if self._risks is None:
            bias, msd = estimator_choice.candidate_moments("geometric-bayes", self.n, self.eps, self._beta, self.estimand)
            if self.estimand == "proportion":
                self._risks = (self.bayes_risk, float(np.max(msd)))
            else:
                sampling = estimator_choice.sampling_risk(self.n, self._beta, "theta")
                self._risks = (self.bayes_risk - sampling, estimator_choice.worst_theta_risk(bias, msd)[1])
        return self._risks


def release_proportion(
    count: int,
    n: int,
    eps: float,
    *,
    loss: str = "squared",
    beta_prior: tuple[float, float] | None = None,
    theta_grid: ArrayLike | None = None,
    prior_weights: ArrayLike | None = None,
    estimand: str = "theta",
) -> ProportionRelease:
    """Release ``count / n`` once with the optimal eps-DP Bayes mechanism (chapter 1).

    Shorthand for ``OptimalProportionRelease(n, eps, ...).release(count)``; see that class for
    the parameters, the model and the optimality claim (UBaPP paper, LP (11); chapter 1).

    Parameters
    ----------
    count : int
        The confidential count, ``0 <= count <= n``.
    n, eps, loss, beta_prior, theta_grid, prior_weights, estimand
        As in :class:`OptimalProportionRelease`.

    Returns
    -------
    ProportionRelease
        The estimate, the released noisy count, ``eps`` and the exact Bayes risk.

    Notes
    -----
    Privacy guarantee: eps-DP with respect to one record of the ``n`` (OpenDP geometric noise on
    the count, then post-processing). Uses ``dp.enable_features("contrib")``. Every call spends
    ``eps`` again.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    _check_count(count, n)
    return OptimalProportionRelease(
        n, eps, loss=loss, beta_prior=beta_prior, theta_grid=theta_grid, prior_weights=prior_weights, estimand=estimand
    ).release(count)


# --------------------------------------------------------------------------------------------
# Laplace noise on a count, then Bayes (chapter 4)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountRelease:
    """One release by :class:`LaplaceCountRelease`.

    Attributes
    ----------
    estimate : float
        Posterior mean or median of the count given the noisy count.
    noisy_count : float
        The released Laplace-noised count (a float, not clamped).
    n : int
        Number of records.
    eps : float
        Privacy parameter of the release.
    eps_spent : float
        OpenDP's privacy map at one record (``<= eps``).
    estimator : str
        ``"mean"`` or ``"median"``.
    mean_abs_error : float
        Exact ``E|C - estimate|`` under the ``Binomial(n, p)`` prior (Naldi & D'Acquisto eq. (12),
        :func:`dpbayes.counting.mean_abs_error`): the Bayes risk in absolute loss.
    estimand : str
        ``"count"``.
    loss : str
        ``"absolute"``: the loss of ``bayes_risk`` and ``worst_risk``.
    bayes_risk : float
        The same number as ``mean_abs_error``. All of it is added by privacy (without noise the count
        is known exactly), so it is also the privacy-added risk.
    worst_risk : float or None
        Exact largest ``E[|C - estimate| | C = c]`` over the true counts ``c`` (the known ``p`` pulls the
        estimate towards ``n p``, so it is attained at ``c = 0`` or ``n``); ``None`` above
        :data:`dpbayes.estimator_choice.LAPLACE_ABS_MAX_N`.
    """

    estimate: float
    noisy_count: float
    n: int
    eps: float
    eps_spent: float
    estimator: str
    mean_abs_error: float
    estimand: str = "count"
    loss: str = "absolute"
    worst_risk: float | None = None

    @property
    def bayes_risk(self) -> float:
        """The Bayes risk in absolute loss (``mean_abs_error``), all of it added by privacy."""
        return self.mean_abs_error


class LaplaceCountRelease:
    """A count released with OpenDP's Laplace measurement, then the Bayes estimate (chapter 4).

    Model (Naldi & D'Acquisto, eqs. (1), (8)): the count ``C`` of ``n`` records is
    ``Binomial(n, p)`` a priori; the release is ``y = C + Laplace(1/eps)`` drawn by OpenDP and the
    estimate is the posterior mean (eq. (11), :func:`dpbayes.counting.bayes_estimate`) or median
    (:func:`dpbayes.counting.posterior_median`, the Bayes estimate for absolute error).

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= 10**7`` (:data:`dpbayes.counting.MAX_N`).
    eps : float
        Privacy parameter, ``> 0``.
    p : float
        Prior probability that a record counts, in ``(0, 1)``. It must be known from outside the data:
        a guessed ``p`` far from the truth makes the estimate worse than the noisy count itself (chapter
        4, "wrong prior"). Without a trusted ``p`` use :class:`GeometricCountRelease`, prior-free or with a
        Beta prior on ``p``.
    estimator : {"mean", "median"}
        Posterior summary reported as the estimate.

    Notes
    -----
    Privacy guarantee: eps-differential privacy for data sets differing in one record (the count
    moves by at most 1): OpenDP's Laplace measurement on floats, privacy map at distance 1 checked
    ``<= eps``; the estimate is post-processing. Uses ``dp.enable_features("contrib")``. For a count
    geometric noise followed by the same posterior summary (:class:`GeometricCountRelease`) is at least
    as accurate on average over the prior (chapters 4 and 5 measure by how much).
    """

    def __init__(self, n: int, eps: float, *, p: float, estimator: str = "mean") -> None:
        self.n = check_int("n", n, minimum=1, maximum=counting.MAX_N)
        self.eps = _check_eps(eps)
        self.p = _check_open_probability("p", p)
        self.estimator = check_choice("estimator", estimator, LAPLACE_ESTIMATORS)
        self._measurement = opendp_measurement("laplace", self.eps)
        self.eps_spent = float(self._measurement.map(1.0))
        self._mae: float | None = None
        self._worst: tuple[float | None] | None = None

    @property
    def worst_risk(self) -> float | None:
        """Exact largest ``E[|C - estimate| | C = c]`` over the counts ``c = 0..n`` (computed on first use,
        :func:`dpbayes.estimator_choice.candidate_abs_risk`); ``None`` for ``n`` above
        :data:`dpbayes.estimator_choice.LAPLACE_ABS_MAX_N`."""
        if self._worst is None:
            if self.n > estimator_choice.LAPLACE_ABS_MAX_N:
                self._worst = (None,)
            else:
                name = "laplace-bayes" if self.estimator == "mean" else "laplace-median"
                per_count = estimator_choice.candidate_abs_risk(
                    name, self.n, self.eps, estimator_choice.CountPrior.binomial(self.p)) * self.n
                self._worst = (float(np.max(per_count)),)
        return self._worst[0]

    @property
    def bayes_risk(self) -> float:
        """The Bayes risk in absolute loss: :attr:`mean_abs_error`."""
        return self.mean_abs_error

    @property
    def mean_abs_error(self) -> float:
        """Exact ``E|C - estimate|`` (computed on first use, over the prior's effective support:
        ``O(sqrt(n p (1 - p)) + log(n) / eps)``, :func:`dpbayes.counting.mean_abs_error`)."""
        if self._mae is None:
            self._mae = counting.mean_abs_error(self.estimator, self.n, self.p, self.eps)
        return self._mae

    def release(self, count: int) -> CountRelease:
        """Release a confidential ``count`` in ``[0, n]`` once (one OpenDP draw, spends ``eps``)."""
        count = _check_count(count, self.n)
        y = float(self._measurement(float(count)))
        # the posterior's cumulative sums over the counts that carry it given y: O(sqrt(n) + 1/eps)
        post = counting._Posterior.build(self.n, self.p, self.eps, around=y)
        estimate = post.mean(np.asarray(y)) if self.estimator == "mean" else post.median(np.asarray(y))
        return CountRelease(
            estimate=float(estimate), noisy_count=y, n=self.n, eps=self.eps,
            eps_spent=self.eps_spent, estimator=self.estimator, mean_abs_error=self.mean_abs_error,
            worst_risk=self.worst_risk,
        )


def release_count_laplace(count: int, n: int, eps: float, *, p: float, estimator: str = "mean") -> CountRelease:
    """Release a count once with OpenDP's Laplace noise and report its Bayes estimate (chapter 4).

    Shorthand for ``LaplaceCountRelease(n, eps, p=p, estimator=estimator).release(count)``.

    Parameters
    ----------
    count : int
        The confidential count, ``0 <= count <= n``.
    n, eps, p, estimator
        As in :class:`LaplaceCountRelease`.

    Returns
    -------
    CountRelease

    Notes
    -----
    Privacy guarantee: eps-DP with respect to one record (Laplace noise of scale ``1/eps`` on a
    sensitivity-1 count, drawn by OpenDP; the estimate is post-processing). Uses
    ``dp.enable_features("contrib")``.
    """
    n = check_int("n", n, minimum=1, maximum=counting.MAX_N)
    _check_count(count, n)
    return LaplaceCountRelease(n, eps, p=p, estimator=estimator).release(count)


# --------------------------------------------------------------------------------------------
# Geometric noise on a count: prior-free, or with a prior on p (chapter 5)
# --------------------------------------------------------------------------------------------

#: Estimators of :class:`GeometricCountRelease`: the noisy count itself, or the posterior mean or median.
COUNT_ESTIMATORS = ("none", "mean", "median")
#: Largest ``n`` for which the posterior median's risks are computed (a dense ``(n + 1)^2`` law, 32 MB).
MEDIAN_RISK_MAX_N = 2000


@dataclass(frozen=True)
class GeometricCountReleaseResult:
    """One release by :class:`GeometricCountRelease` (estimand: the data set's count).

    Attributes
    ----------
    estimate : float
        The released count (``estimator="none"``) or its posterior mean / median given it.
    noisy_count : int
        OpenDP's geometric-noised count, clamped to ``{0..n}``.
    interval : tuple of int
        ``(noisy_count - k, noisy_count + k)`` clipped to ``[0, n]``: covers the true count with
        probability at least ``level`` at every count, whatever the prior (prior-free).
    level : float
        The interval's guaranteed coverage.
    n, eps, eps_spent, estimator
        As the mechanism's.
    loss : {"squared", "absolute"}
        Loss of the risks: squared for ``"none"`` and ``"mean"``, absolute for ``"median"``.
    bayes_risk : float or None
        Exact risk averaged over the prior (``None`` without a prior, or for the median above
        :data:`MEDIAN_RISK_MAX_N`). All of it is added by privacy: the count is known without noise.
    worst_risk : float or None
        Exact largest risk over the true counts (``None`` for the median above :data:`MEDIAN_RISK_MAX_N`).
    estimand : str
        ``"count"``.
    """

    estimate: float
    noisy_count: int
    interval: tuple[int, int]
    level: float
    n: int
    eps: float
    eps_spent: float
    estimator: str
    loss: str
    bayes_risk: float | None
    worst_risk: float | None
    estimand: str = "count"


class GeometricCountRelease:
    """A count released with OpenDP's geometric noise, clamped to ``{0..n}``, then optionally a Bayes estimate.

    The mechanism is the truncated geometric mechanism (Ghosh, Roughgarden & Sundararajan 2009), the
    one whose Bayes post-processing reaches the optimum of the linear program over all eps-DP
    estimators (chapters 1, 2 and 4 certify it; chapter 5 compares the candidates).

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= MAX_N``.
    eps : float
        Privacy parameter in ``[MIN_EPS, MAX_EPS]``.
    estimator : {"none", "mean", "median"}
        ``"none"``: the clamped noisy count itself (prior-free; chapter 5 shows where it is within a few
        per cent of the optimum). ``"mean"`` / ``"median"``: the posterior mean / median of the count
        (the Bayes estimates for squared / absolute error).
    prior : (a, b) or float, optional
        Needed by ``"mean"`` and ``"median"``; allowed with ``"none"`` (it then only sets ``bayes_risk``).
        A pair ``(a, b)``: ``p ~ Beta(a, b)`` and the count Beta-binomial (``(1, 1)``: flat, every count
        equally likely; ``(0.5, 0.5)``: Jeffreys) -- the choice for an unknown ``p``. A float ``p`` in
        ``(0, 1)``: the count is ``Binomial(n, p)`` with ``p`` known from outside the data.
    level : float
        Coverage of the prior-free interval, in ``(0, 1)``.

    Notes
    -----
    Privacy guarantee: eps-DP for data sets of ``n`` records differing in one record (replace one;
    ``n`` public): OpenDP's geometric measurement, privacy map at distance 1 checked ``<= eps``;
    clamping, the estimate and the interval are post-processing. Uses ``dp.enable_features("contrib")``.
    """

    n: int
    eps: float
    estimator: str
    level: float
    half_width: int
    eps_spent: float
    _measurement: Any

    def __init__(self, n: int, eps: float, *, estimator: str = "none", prior: Any = None, level: float = 0.9) -> None:
        self.n = check_int("n", n, minimum=1, maximum=MAX_N)
        self.eps = _check_eps(eps)
        self.estimator = check_choice("estimator", estimator, COUNT_ESTIMATORS)
        if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
            raise ValueError(f"level must lie in (0, 1), got {level!r}")
        self.level = float(level)
        if prior is None:
            if self.estimator != "none":
                raise ValueError(f"estimator={self.estimator!r} needs a prior: (a, b) for p ~ Beta(a, b) (unknown p; (1, 1) is flat) or p")
            self.prior: estimator_choice.CountPrior | None = None
        elif isinstance(prior, tuple):
            if len(prior) != 2:
                raise TypeError(f"prior must be a pair (a, b) of numbers > 0 or a probability p, got {prior!r}")
            self.prior = estimator_choice.CountPrior.beta(check_positive("prior[0]", prior[0]), check_positive("prior[1]", prior[1]))
        elif isinstance(prior, numbers.Real) and not isinstance(prior, (bool, np.bool_)):
            self.prior = estimator_choice.CountPrior.binomial(float(prior))
        else:
            raise TypeError(f"prior must be a pair (a, b) of numbers > 0 or a probability p, got {prior!r}")
        self.half_width, coverage = estimator_choice.prior_free_interval(self.n, self.eps, self.level)
        del coverage
        self._measurement = opendp_measurement("geometric", self.eps, self.n)
        self.eps_spent = float(self._measurement.map(1))
        self._risks: tuple[float | None, float | None] | None = None

    @property
    def loss(self) -> str:
        return "absolute" if self.estimator == "median" else "squared"

    def _log_posterior(self, z: int) -> NDArray[np.float64]:
        assert self.prior is not None
        c = np.arange(self.n + 1)
        lp = self.prior.log_weights(self.n) - self.eps * np.abs(c - z)
        return lp - special.logsumexp(lp)

    def estimate_of(self, z: int) -> float:
        """The estimate for a released noisy count ``z`` (post-processing: public input only)."""
        z = check_int("z", z, minimum=0, maximum=self.n)
        if self.estimator == "none":
            return float(z)
        # given z the truncated geometric likelihood is proportional to a^|z - c| (its row factor does not depend on c)
        post = np.exp(self._log_posterior(z))
        if self.estimator == "mean":
            return float(post @ np.arange(self.n + 1))
        return float(np.searchsorted(np.cumsum(post), 0.5 - 1e-12))

    def risks(self) -> tuple[float | None, float | None]:
        """``(bayes_risk, worst_risk)`` in the mechanism's loss, on the count scale (see the result's fields)."""
        if self._risks is None:
            n = self.n
            if self.estimator in ("none", "mean"):
                pr = self.prior if self.prior is not None else estimator_choice.CountPrior.beta(1.0, 1.0)
                name = "geometric" if self.estimator == "none" else "geometric-bayes"
                bias, msd = estimator_choice.candidate_moments(name, n, self.eps, pr, "proportion")
                bayes = None if self.prior is None else estimator_choice.bayes_risk(bias, msd, self.prior, "proportion") * n**2
                self._risks = (bayes, float(np.max(msd)) * n**2)
            elif n <= MEDIAN_RISK_MAX_N:
                law = np.exp(truncated_geometric_logmatrix(n, self.eps))  # law[z, c]
                med = np.array([self.estimate_of(z) for z in range(n + 1)])
                loss = np.abs(med[:, None] - np.arange(n + 1)[None, :])
                per_count = (law * loss).sum(axis=0)
                assert self.prior is not None
                self._risks = (float(self.prior.weights(n) @ per_count), float(np.max(per_count)))
            else:
                self._risks = (None, None)
        return self._risks

    def release(self, count: int) -> GeometricCountReleaseResult:
        """Release a confidential ``count`` in ``[0, n]`` once (one OpenDP draw, spends ``eps``)."""
        count = _check_count(count, self.n)
        z = int(min(max(int(self._measurement(count)), 0), self.n))
        bayes, worst = self.risks()
        k = self.half_width
        return GeometricCountReleaseResult(
            estimate=self.estimate_of(z), noisy_count=z, interval=(max(z - k, 0), min(z + k, self.n)), level=self.level,
            n=self.n, eps=self.eps, eps_spent=self.eps_spent, estimator=self.estimator, loss=self.loss,
            bayes_risk=bayes, worst_risk=worst,
        )


def release_count_geometric(
    count: int, n: int, eps: float, *, estimator: str = "none", prior: Any = None, level: float = 0.9,
) -> GeometricCountReleaseResult:
    """Release a count once with OpenDP's clamped geometric noise (chapter 5).

    Shorthand for ``GeometricCountRelease(n, eps, estimator=estimator, prior=prior, level=level).release(count)``.

    Notes
    -----
    Privacy guarantee: eps-DP with respect to one record replaced (``n`` public); everything after the
    noise is post-processing. Uses ``dp.enable_features("contrib")``. Every call spends ``eps`` again.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    _check_count(count, n)
    return GeometricCountRelease(n, eps, estimator=estimator, prior=prior, level=level).release(count)
