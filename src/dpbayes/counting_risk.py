"""Risk of the Bayes-corrected noisy count at a fixed truth and under a wrong prior (beyond Naldi & D'Acquisto).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?". The paper (and :mod:`dpbayes.counting`) averages every
error over the ``Binomial(n, p)`` prior with ``p`` known: eqs. (12)-(13) with the expectation
"taken over the range of possible values of the true response". This module asks the questions a
privacy reader asks instead:

* the **fixed-count** (frequentist) risk: for one database with true count ``a``, the noisy
  response is ``Y = a + R``, ``R ~ Laplace(0, 1/eps)`` (eq. (1)), and an estimator ``m`` has
  ``E|a - m(Y)|``, ``E(a - m(Y))**2`` and ``P(|a - m(Y)| < |a - Y|)`` (eq. (13) at fixed ``a``);
* a **wrong prior**: the estimator built with ``p'`` while the counts follow ``Binomial(n, p)``;
* a **Beta-binomial** (hierarchical) prior as the robust alternative;
* the **coverage** of the posterior's equal-tailed credible interval at fixed counts;
* the **geometric mechanism + posterior median** (the optimum of :mod:`dpbayes.counting`) at
  fixed counts, by finite sums;
* an individual's posterior odds after the release (the privacy claim of the paper's §1);
* the **large-n** (Gaussian) limit of the error ratio and of ``P(closer)``.

Everything is exact in the sense of :mod:`dpbayes.counting`: integrals over the noisy response
``y``, closed form outside ``[0, n]`` (where every Bayes estimate is constant, because the factor
``exp(eps y)`` or ``exp(-eps y)`` of the Laplace kernel cancels in the posterior, for any prior
on ``{0, ..., n}``), and on ``[0, n]`` Gauss-Legendre on pieces between the points where the
integrand is not smooth. Monte Carlo (:func:`monte_carlo_fixed_count`) only cross-checks.

The estimators under the binomial prior are those of :func:`dpbayes.counting.estimate`. For other
priors the posterior is computed here with the same factorisation of the Laplace kernel
(:class:`PriorPosterior`), in log space.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, optimize, special, stats

from dpbayes import counting as ct
from dpbayes.validation import check_choice, check_int, check_positive, check_probability, check_rng

__all__ = [
    "PRIORS",
    "RISK_ESTIMATORS",
    "LOSSES",
    "prior_logpmf",
    "PriorPosterior",
    "make_estimator",
    "fixed_count_risk",
    "average_risk",
    "misspecified_ratio",
    "credible_coverage",
    "credible_width",
    "geometric_fixed_count_risk",
    "geometric_average_prob_closer",
    "monte_carlo_fixed_count",
    "individual_odds_shift",
    "gaussian_limit",
    "lattice_limit",
    "extreme_over_eps",
    "GAIN_COLUMNS",
    "gain_over_naive",
    "monte_carlo_resolution",
    "plugin_estimate",
    "plugin_ratio",
    "PRIOR_FREE",
    "prior_free_fixed_count_ratio",
    "MAX_N_RISK",
]

PRIORS = ("binomial", "beta-binomial")
RISK_ESTIMATORS = ("naive", "mean", "median")
LOSSES = ("abs", "sq", "closer", "cross")
MAX_N_RISK = 20_000
_GAUSS = np.polynomial.legendre.leggauss(8)
_BISECT_STEPS = 48
_WINDOW = 45.0  # Laplace decay (in units of 1/eps) beyond which nodes are dropped


def _check_model(n: Any, p: Any, eps: Any) -> tuple[int, float, float]:
    # the checks of dpbayes.counting, with this module's smaller bound on n
    return ct._check_model(n, p, eps, max_n=MAX_N_RISK)


def _check_prior(prior: Any, concentration: Any) -> tuple[str, float | None]:
    prior = check_choice("prior", prior, PRIORS)
    if prior == "beta-binomial":
        if concentration is None:
            raise ValueError("concentration must be given (> 0) for the beta-binomial prior")
        concentration = float(check_positive("concentration", concentration))
    return prior, concentration


def _check_counts(a: ArrayLike, n: int) -> NDArray[np.int64]:
    arr = np.asarray(a)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"a must be integer counts in [0, n] = [0, {n}]")
    arr = arr.astype(np.int64)
    if np.any(arr < 0) or np.any(arr > n):
        raise ValueError(f"a must be integer counts in [0, n] = [0, {n}]")
    return arr


# ---------------------------------------------------------------------------------------------
# Priors and posteriors
# ---------------------------------------------------------------------------------------------


def prior_logpmf(n: int, p: float, prior: str = "binomial", concentration: float | None = None) -> NDArray[np.float64]:
    """Log prior of the count on ``{0, ..., n}``.

    ``binomial``: ``Binomial(n, p)`` (the paper's eq. (10)). ``beta-binomial``: the count is
    ``Binomial(n, q)`` with ``q ~ Beta(concentration p, concentration (1 - p))``, i.e. the prior
    mean of the fraction is ``p`` and its standard deviation ``sqrt(p (1 - p) / (concentration + 1))``
    (a hierarchical prior for an analyst unsure of ``p``; ``concentration -> inf`` gives back the
    binomial). For the beta-binomial ``p`` must lie in ``(0, 1)``.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N_RISK)
    p = float(check_probability("p", p))
    prior, concentration = _check_prior(prior, concentration)
    k = np.arange(n + 1)
    if prior == "binomial":
        return stats.binom.logpmf(k, n, p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1) for the beta-binomial prior, got {p}")
    assert concentration is not None  # _check_prior gives the beta-binomial prior a concentration
    return stats.betabinom.logpmf(k, n, concentration * p, concentration * (1.0 - p))


class PriorPosterior:
    """Posterior of the count under any prior on ``{0, ..., n}`` and Laplace noise of scale ``1/eps``.

    With ``w`` the prior and ``j = floor(y)``, ``sum_c c**r w_c exp(-eps |y - c|)`` is
    ``exp(-eps y) sum_{c <= j} c**r w_c exp(eps c) + exp(eps y) sum_{c > j} c**r w_c exp(-eps c)``
    (the factorisation of :mod:`dpbayes.counting`), so two cumulative sums per ``r`` (kept in log
    space) give the posterior mean, CDF and quantiles in O(1) or O(log n) per ``y``. Responses
    are clipped to ``[0, n]`` first: the posterior is constant outside.

    Parameters
    ----------
    log_prior : array_like, shape (n + 1,)
        Log prior weights (normalisation irrelevant; ``-inf`` allowed, not all).
    eps : float
        Privacy parameter, ``> 0``.
    """

    def __init__(self, log_prior: ArrayLike, eps: float) -> None:
        lw = np.asarray(log_prior, dtype=float)
        if lw.ndim != 1 or lw.size < 2 or np.any(np.isnan(lw)) or np.any(lw == np.inf) or not np.any(np.isfinite(lw)):
            raise ValueError("log_prior must be a 1-D array of length n + 1 >= 2 with finite entries (or -inf)")
        self.eps = float(check_positive("eps", eps))
        self.n = lw.size - 1
        k = np.arange(self.n + 1, dtype=float)
        with np.errstate(divide="ignore"):
            log_k = np.log(k)
        self._left, self._right = [], []
        for weight in (lw, lw + log_k):
            self._left.append(np.concatenate(([-np.inf], np.logaddexp.accumulate(weight + self.eps * k))))
            self._right.append(np.concatenate((np.logaddexp.accumulate((weight - self.eps * k)[::-1])[::-1], [-np.inf])))

    def _prep(self, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
        yc = np.clip(np.asarray(y, dtype=float), 0.0, float(self.n))
        j = np.clip(np.floor(yc), 0, self.n).astype(np.int64)
        return yc, j, self.eps * yc

    def _log_z(self, r: int, j: NDArray[np.int64], ey: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.logaddexp(self._left[r][j + 1] - ey, self._right[r][j + 1] + ey)

    def mean(self, y: ArrayLike) -> NDArray[np.float64]:
        """Posterior mean ``E[C | y]`` (eq. (11) for the binomial prior)."""
        _, j, ey = self._prep(y)
        return np.clip(np.exp(self._log_z(1, j, ey) - self._log_z(0, j, ey)), 0.0, float(self.n))

    def cdf(self, t: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        """``P(C <= t | y)`` for integer thresholds ``t`` (broadcast with ``y``)."""
        yc, j, ey = self._prep(y)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), yc.shape)
        tc = np.clip(t, -1, self.n)
        lz = self._log_z(0, j, ey)
        with np.errstate(over="ignore", invalid="ignore"):
            below = np.exp(self._left[0][tc + 1] - ey - lz)
            above = 1.0 - np.exp(self._right[0][np.minimum(tc + 1, self.n + 1)] + ey - lz)
        return np.clip(np.where(tc <= j, below, above), 0.0, 1.0)

    def quantile(self, y: ArrayLike, q: float) -> NDArray[np.float64]:
        """Smallest integer ``t`` with ``P(C <= t | y) >= q`` (``q = 1/2``: the posterior median)."""
        q = float(check_probability("q", q, open_interval=True))
        yc, j, ey = self._prep(y)
        lz = self._log_z(0, j, ey)
        # left of y: P(C <= t | y) = exp(left[t + 1] - eps y - lz), nondecreasing in t
        thr = np.log(q) + lz + ey
        t_left = np.searchsorted(self._left[0][1:], thr, side="left")
        in_left = t_left <= j
        # right of y: P(C <= t | y) >= q  <=>  right[t + 1] <= log(1 - q) + lz - eps y
        thr_r = np.log1p(-q) + lz - ey
        k = np.searchsorted(-self._right[0], -thr_r, side="left")
        t_right = np.clip(k - 1, j + 1, self.n)
        return np.where(in_left, t_left, t_right).astype(float)

    def median(self, y: ArrayLike) -> NDArray[np.float64]:
        """Posterior median (the Bayes estimator for absolute error)."""
        return self.quantile(y, 0.5)


def make_estimator(
    estimator: str, n: int, p: float, eps: float, prior: str = "binomial", concentration: float | None = None
) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """The function ``y -> m(y)`` of one of ``RISK_ESTIMATORS`` ("naive", "mean", "median") built with prior parameter ``p``.

    ``naive``: ``y``; ``mean``/``median``: posterior mean/median under ``prior`` (for the
    binomial prior exactly :func:`dpbayes.counting.estimate`). ``p`` is the analyst's value, which
    need not be the truth.
    """
    estimator = check_choice("estimator", estimator, RISK_ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    prior, concentration = _check_prior(prior, concentration)
    if estimator == "naive":
        return lambda y: np.asarray(y, dtype=float)
    if prior == "binomial" and n <= ct.MAX_N:
        return lambda y: np.asarray(ct.estimate(estimator, y, n, p, eps), dtype=float)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    return post.mean if estimator == "mean" else post.median


# ---------------------------------------------------------------------------------------------
# Fixed-count risk
# ---------------------------------------------------------------------------------------------


def _labels(m: NDArray[np.float64], y: NDArray[np.float64], loss: str) -> NDArray[np.int64]:
    """An integer that is constant wherever the loss of every integer truth is smooth in ``y``."""
    if loss == "closer":
        # |a - m| < |a - y| changes only where m = y or (y + m) / 2 = a
        return 3 * np.floor(0.5 * (y + m)).astype(np.int64) + np.sign(y - m).astype(np.int64)
    # |a - m| has a kink where m crosses the integer a; the median jumps between integers
    return np.floor(m).astype(np.int64)


def _break_points(fn: Callable, n: int, eps: float, loss: str) -> NDArray[np.float64]:
    """Fine grid on ``[0, n]`` (integers included) plus the label changes located by bisection."""
    per_unit = 8 if loss != "closer" else 16
    subdiv = int(min(128, max(per_unit, np.ceil(4 * eps))))
    grid = np.linspace(0.0, float(n), n * subdiv + 1)
    lab = _labels(fn(grid), grid, loss)
    change = np.nonzero(lab[1:] != lab[:-1])[0]
    start, end = grid[change], grid[change + 1]
    lab_start, lab_end = lab[change], lab[change + 1]
    found = [grid]
    for _ in range(8):  # several changes inside one grid cell: repeat on the rest of it
        if start.size == 0:
            break
        lo, hi = start.copy(), end.copy()
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            same = _labels(fn(mid), mid, loss) == lab_start
            lo = np.where(same, mid, lo)
            hi = np.where(same, hi, mid)
        found.append(0.5 * (lo + hi))
        lab_hi = _labels(fn(hi), hi, loss)
        more = (lab_hi != lab_end) & (hi < end)
        start, end, lab_start, lab_end = hi[more], end[more], lab_hi[more], lab_end[more]
    return np.unique(np.concatenate(found))


def _laplace_cdf(x: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    return np.where(x < 0, 0.5 * np.exp(eps * np.minimum(x, 0.0)), 1.0 - 0.5 * np.exp(-eps * np.maximum(x, 0.0)))


def _loss(loss: str, a: NDArray[np.floating[Any]] | NDArray[np.integer[Any]] | float, m: NDArray[np.float64] | float) -> NDArray[np.float64]:
    d = np.asarray(a, dtype=float) - np.asarray(m, dtype=float)
    return d**2 if loss == "sq" else np.abs(d)  # "cross" multiplies by |a - y| where it is used


def fixed_count_risk(
    a: ArrayLike,
    estimator: str,
    n: int,
    p: float,
    eps: float,
    loss: str = "abs",
    prior: str = "binomial",
    concentration: float | None = None,
) -> NDArray[np.float64]:
    """Risk of an estimator when the true count is fixed at ``a``, exactly.

    ``Y = a + R`` with ``R ~ Laplace(0, 1/eps)`` (paper eq. (1)); the estimator ``m`` is built
    with prior parameter ``p`` (the analyst's, see :func:`make_estimator`). ``loss``:

    * ``"abs"``: ``E|a - m(Y)|`` (eq. (12) at fixed ``a``; ``1/eps`` for ``naive``, eq. (14));
    * ``"sq"``: ``E(a - m(Y))**2`` (``2/eps**2`` for ``naive``);
    * ``"closer"``: ``P(|a - m(Y)| < |a - Y|)`` (eq. (13) at fixed ``a``; 0 for ``naive``);
    * ``"cross"``: ``E|a - Y| |a - m(Y)|`` (the cross moment of a paired comparison with the naive
      answer; ``2/eps**2`` for ``naive``).

    The integral over ``y`` is closed form below 0 and above ``n`` (``m`` constant there) and on
    ``[0, n]`` Gauss-Legendre (8 nodes) on pieces of width ``<= 1/8`` split where ``m`` crosses
    an integer (``abs``, ``sq``) or where ``m = y`` or ``(y + m)/2`` is an integer (``closer``,
    where the indicator is constant on each piece and the Laplace probability of the piece is
    exact). Break points are located by bisection on a grid of ``max(8, 4 eps)`` (``closer``:
    ``max(16, 4 eps)``) points per unit; two sign changes of ``y - m`` closer together than that
    spacing would be missed (checked against Monte Carlo and a brute-force quadrature in
    ``tests/test_counting_risk.py``).

    Parameters
    ----------
    a : array_like of int
        True counts in ``[0, n]``.
    estimator : {"naive", "mean", "median"}
    n, p, eps : database size (``<= 20000``), the analyst's prior probability, privacy parameter.
    loss : {"abs", "sq", "closer", "cross"}
    prior : {"binomial", "beta-binomial"}
    concentration : float, optional
        Beta-binomial concentration (see :func:`prior_logpmf`).

    Returns
    -------
    ndarray, shape of ``a``
    """
    estimator = check_choice("estimator", estimator, RISK_ESTIMATORS)
    loss = check_choice("loss", loss, LOSSES)
    n, p, eps = _check_model(n, p, eps)
    prior, concentration = _check_prior(prior, concentration)
    a_arr = _check_counts(a, n)
    shape = a_arr.shape
    a_flat = a_arr.reshape(-1).astype(float)
    if estimator == "naive":
        value = {"abs": 1.0 / eps, "sq": 2.0 / eps**2, "closer": 0.0, "cross": 2.0 / eps**2}[loss]
        return np.full(shape, value)
    fn = make_estimator(estimator, n, p, eps, prior, concentration)
    return _function_risk(fn, a_flat, n, eps, loss).reshape(shape)


def _function_risk(fn: Callable, a_flat: NDArray[np.float64], n: int, eps: float, loss: str) -> NDArray[np.float64]:
    """:func:`fixed_count_risk` of any estimate ``fn`` that is constant for ``y <= 0`` and for ``y >= n``."""
    edges = _break_points(fn, n, eps, loss)
    lo_e, hi_e = edges[:-1], edges[1:]
    m_low = float(fn(np.array([-1.0]))[0])
    m_high = float(fn(np.array([n + 1.0]))[0])
    out = np.empty(a_flat.size)
    if loss == "closer":
        mid = 0.5 * (lo_e + hi_e)
        lab_mid = fn(mid)
        for i, av in enumerate(a_flat):
            win = np.abs(av - lab_mid) < np.abs(av - mid)
            inside = np.sum(win * (_laplace_cdf(hi_e - av, eps) - _laplace_cdf(lo_e - av, eps)))
            # y < 0 <= a: wins when a - y > |a - m_low|; y > n >= a: when y - a > |a - m_high|
            t_low = min(0.0, av - abs(av - m_low))
            t_high = max(float(n), av + abs(av - m_high))
            out[i] = inside + 0.5 * np.exp(eps * (t_low - av)) + 0.5 * np.exp(-eps * (t_high - av))
        return out
    nodes, weights = _GAUSS
    half = 0.5 * (hi_e - lo_e)
    y = (0.5 * (lo_e + hi_e)[:, None] + half[:, None] * nodes[None, :]).ravel()
    w = (half[:, None] * weights[None, :]).ravel()
    m = fn(y)
    # nodes farther than _WINDOW / eps from a carry Laplace weight < e^-_WINDOW ~ 3e-20 (times a
    # loss <= n**2): blocks of nearby counts use only the nodes within that distance
    order = np.argsort(a_flat, kind="stable")
    for s in range(0, a_flat.size, 32):
        idx = order[s : s + 32]
        av = a_flat[idx, None]
        i0 = np.searchsorted(y, av.min() - _WINDOW / eps, side="left")
        i1 = np.searchsorted(y, av.max() + _WINDOW / eps, side="right")
        ys, ms, ws = y[i0:i1], m[i0:i1], w[i0:i1]
        dens = 0.5 * eps * np.exp(-eps * np.abs(ys[None, :] - av))
        if loss == "cross":
            dens = dens * np.abs(ys[None, :] - av)
        out[idx] = (dens * _loss(loss, av, ms[None, :])) @ ws
    # tails: P(Y < 0 | a) = exp(-eps a) / 2, P(Y > n | a) = exp(-eps (n - a)) / 2; for "cross" the
    # tails' E[|a - Y|; Y < 0] = exp(-eps a) (a + 1/eps) / 2 and the mirror image
    low, high = 0.5 * np.exp(-eps * a_flat), 0.5 * np.exp(-eps * (n - a_flat))
    if loss == "cross":
        low, high = low * (a_flat + 1.0 / eps), high * (n - a_flat + 1.0 / eps)
    out += low * _loss(loss, a_flat, m_low)
    out += high * _loss(loss, a_flat, m_high)
    return out


def average_risk(
    estimator: str,
    n: int,
    p_true: float,
    p_model: float,
    eps: float,
    loss: str = "abs",
    prior: str = "binomial",
    concentration: float | None = None,
    mass_cut: float = 1e-15,
) -> float:
    """Risk averaged over the true ``Binomial(n, p_true)`` count, estimator built with ``p_model``.

    ``sum_a Binomial(a; n, p_true) * fixed_count_risk(a, ...)``, over the counts that carry all
    but ``mass_cut`` of the binomial mass (the neglected part changes an absolute error by at
    most ``mass_cut * n``). With ``p_model = p_true`` and the binomial prior this is the paper's
    eq. (12) (``loss="abs"``) or eq. (13) (``loss="closer"``), as in :mod:`dpbayes.counting`.
    """
    n, p_true, eps = _check_model(n, p_true, eps)
    p_model = float(check_probability("p_model", p_model))
    mass_cut = float(check_positive("mass_cut", mass_cut))
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, p_true)
    lo = int(stats.binom.ppf(mass_cut / 2, n, p_true))
    hi = int(stats.binom.isf(mass_cut / 2, n, p_true))
    lo, hi = max(lo - 1, 0), min(hi + 1, n)
    a = k[lo : hi + 1]
    risk = fixed_count_risk(a, estimator, n, p_model, eps, loss, prior, concentration)
    return float(np.sum(w[lo : hi + 1] * risk) / np.sum(w[lo : hi + 1]))


def misspecified_ratio(
    estimator: str,
    n: int,
    p_true: float,
    p_model: float,
    eps: float,
    prior: str = "binomial",
    concentration: float | None = None,
) -> float:
    """Average absolute error of the estimator built with ``p_model`` over the naive ``1/eps`` (eq. (14))."""
    return average_risk(estimator, n, p_true, p_model, eps, "abs", prior, concentration) * float(eps)


# ---------------------------------------------------------------------------------------------
# Coverage of the credible interval
# ---------------------------------------------------------------------------------------------


def _quantile_root(post: PriorPosterior, t: NDArray[np.int64], q: float) -> NDArray[np.float64]:
    """Largest ``y`` in ``[0, n]`` with ``P(C <= t | y) >= q`` (60 halvings); ``+inf`` when all of it, ``-inf`` when none.

    The posterior is stochastically increasing in ``y`` (log-concave Laplace kernel), so the set is ``y <= root``.
    """
    n = post.n

    def ok(y: NDArray[np.float64]) -> NDArray[np.bool_]:
        return post.cdf(t, y) >= q

    lo = np.zeros(t.size)
    hi = np.full(t.size, float(n))
    ok_lo, ok_hi = ok(lo), ok(hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        lo = np.where(good, mid, lo)
        hi = np.where(good, hi, mid)
    y = 0.5 * (lo + hi)
    y = np.where(ok_hi, np.inf, y)  # ok on all of [0, n], hence everywhere (constant outside)
    return np.where(~ok_lo, -np.inf, y)


def credible_width(
    a: ArrayLike, n: int, p: float, eps: float, level: float = 0.9, prior: str = "binomial",
    concentration: float | None = None,
) -> NDArray[np.float64]:
    """Expected span ``E[q_hi(Y) - q_lo(Y) | a]`` of the posterior's equal-tailed credible interval at fixed counts.

    The quantiles of :func:`credible_coverage` are nondecreasing integer step functions of ``y``: ``q(y) > t``
    exactly for ``y > y_t`` (the root of ``P(C <= t | y) = q``), so ``E[q(Y) | a] = sum_(t=0..n-1) P(Y > y_t | a)``,
    a sum of Laplace tail probabilities (roots by bisection, as in :func:`credible_coverage`).
    """
    n, p, eps = _check_model(n, p, eps)
    level = float(check_probability("level", level, open_interval=True))
    prior, concentration = _check_prior(prior, concentration)
    a_arr = _check_counts(a, n)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    t = np.arange(n, dtype=np.int64)
    out = np.zeros(a_arr.size)
    av = a_arr.reshape(-1).astype(float)
    for sign, q in ((1.0, 0.5 * (1 + level)), (-1.0, 0.5 * (1 - level))):
        roots = _quantile_root(post, t, q)
        with np.errstate(invalid="ignore"):
            tail = 1.0 - _laplace_cdf(roots[None, :] - av[:, None], eps)
        tail = np.where(np.isneginf(roots)[None, :], 1.0, np.where(np.isposinf(roots)[None, :], 0.0, tail))
        out += sign * tail.sum(axis=1)
    return out.reshape(a_arr.shape)


def credible_coverage(
    a: ArrayLike, n: int, p: float, eps: float, level: float = 0.9, prior: str = "binomial",
    concentration: float | None = None,
) -> NDArray[np.float64]:
    """Frequentist coverage at fixed counts of the posterior's equal-tailed credible interval.

    The interval for response ``y`` is ``[q_lo(y), q_hi(y)]``, the posterior quantiles at
    ``(1 - level)/2`` and ``(1 + level)/2`` (smallest integer ``t`` with ``P(C <= t | y) >= q``).
    The Laplace kernel is log-concave in ``y - c``, so the posterior is stochastically increasing
    in ``y``: ``q_lo(y) <= a`` exactly for ``y <= y1(a)`` and ``q_hi(y) >= a`` exactly for
    ``y > y0(a)``; both roots are found by bisection (60 halvings of ``[0, n]``) and the
    coverage is the Laplace probability ``P(y0 < Y <= y1 | a)``.
    """
    n, p, eps = _check_model(n, p, eps)
    level = float(check_probability("level", level, open_interval=True))
    prior, concentration = _check_prior(prior, concentration)
    a_arr = _check_counts(a, n)
    shape = a_arr.shape
    av = a_arr.reshape(-1)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    q_lo, q_hi = 0.5 * (1 - level), 0.5 * (1 + level)

    y1 = _quantile_root(post, av, q_lo)  # q_lo(y) <= a  <=>  P(C <= a | y) >= q_lo
    y0 = _quantile_root(post, av - 1, q_hi)  # q_hi(y) < a  <=>  P(C <= a - 1 | y) >= q_hi
    with np.errstate(invalid="ignore"):
        cov = _laplace_cdf(y1 - av, eps) - _laplace_cdf(y0 - av, eps)
    return np.clip(np.where(y1 > y0, cov, 0.0), 0.0, 1.0).reshape(shape)


# ---------------------------------------------------------------------------------------------
# Geometric mechanism + posterior median (the optimum) at fixed counts
# ---------------------------------------------------------------------------------------------


def _geometric_median_table(n: int, p: float, eps: float) -> NDArray[np.float64]:
    from dpbayes.mechanisms import truncated_geometric_matrix

    k = np.arange(n + 1, dtype=float)
    joint = truncated_geometric_matrix(n, eps) * stats.binom.pmf(k, n, p)[None, :]
    pz = joint.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = np.where(pz > 0, joint / pz, 1.0 / (n + 1))
    # same rule as dpbayes.counting.geometric_mean_abs_error
    return np.argmax(np.cumsum(post, axis=1) >= 0.5 - 1e-12, axis=1).astype(float)


def geometric_fixed_count_risk(a: ArrayLike, n: int, p: float, eps: float, loss: str = "abs") -> NDArray[np.float64]:
    """Fixed-count risk of the truncated geometric mechanism followed by the posterior median.

    The pipeline of :func:`dpbayes.counting.geometric_mean_abs_error` (``"median"``), which attains
    the optimum of :func:`dpbayes.counting.optimal_private_estimator`; ``p`` is the analyst's
    prior probability. ``loss="abs"``/``"sq"``: finite sums over the truncated output.
    ``loss="closer"``: ``P(|a - med(clip(Z))| < |a - Z|)`` against the naive geometric answer
    ``Z = a + G`` (``P(G = g) = (1 - r)/(1 + r) r**|g|``, ``r = e^{-eps}``, untruncated), with the
    two tails beyond ``[0, n]`` in closed form; ``loss="farther"``: ``P(|a - med| > |a - Z|)``
    (both answers are integers, so ties have positive probability and ``closer`` and
    ``farther`` do not add up to 1). Cost O(n**2); ``n <= 5000``.
    """
    loss = check_choice("loss", loss, LOSSES + ("farther",))
    n, p, eps = _check_model(n, p, eps)
    if n > 5000:
        raise ValueError(f"n must be <= 5000 for the geometric mechanism, got {n}")
    av = _check_counts(a, n)
    shape = av.shape
    av = av.reshape(-1).astype(float)
    est = _geometric_median_table(n, p, eps)
    z = np.arange(n + 1, dtype=float)
    r = np.exp(-eps)
    if loss in ("abs", "sq"):
        from dpbayes.mechanisms import truncated_geometric_matrix

        tm = truncated_geometric_matrix(n, eps)[:, av.astype(int)]  # [z, a]
        return np.sum(tm * _loss(loss, av[None, :], est[:, None]), axis=0).reshape(shape)
    c = (1 - r) / (1 + r)
    inner = c * r ** np.abs(z[None, :] - av[:, None])  # P(Z = z | a), z in 0..n
    if loss == "farther":
        # |a - med| > |a - Z|. Below 0 (Z <= -1) the estimate is est(0): it loses for
        # a - d0 < Z <= -1, d0 = |a - est(0)|; above n for n + 1 <= Z < a + dn. With
        # P(Z <= t | a) = r**(a - t) / (1 + r) (t <= a) and P(Z >= t | a) = r**(t - a) / (1 + r) (t >= a):
        lose = np.abs(av[:, None] - est[None, :]) > np.abs(av[:, None] - z[None, :])
        d0, dn = np.abs(av - est[0]), np.abs(av - est[-1])
        low = np.where(av - d0 < -1, (r ** (av + 1) - r ** d0) / (1 + r), 0.0)
        high = np.where(av + dn > n + 1, (r ** (n + 1 - av) - r ** dn) / (1 + r), 0.0)
        return (np.sum(inner * lose, axis=1) + low + high).reshape(shape)
    win = np.abs(av[:, None] - est[None, :]) < np.abs(av[:, None] - z[None, :])
    inside = np.sum(inner * win, axis=1)
    # z <= -1: wins when a - z > d0 = |a - est(0)|, i.e. z <= min(-1, a - d0 - 1);
    # P(Z <= t | a) = r**(a - t) / (1 + r) for t <= a
    t_low = np.minimum(-1.0, av - np.abs(av - est[0]) - 1.0)
    t_high = np.maximum(n + 1.0, av + np.abs(av - est[-1]) + 1.0)
    low = r ** (av - t_low) / (1 + r)
    high = r ** (t_high - av) / (1 + r)
    return (inside + low + high).reshape(shape)


def geometric_average_prob_closer(n: int, p_true: float, p_model: float, eps: float, loss: str = "closer") -> float:
    """``P(closer)`` (or ``P(farther)``) of geometric + median against the naive geometric answer, over ``Binomial(n, p_true)``."""
    n, p_true, eps = _check_model(n, p_true, eps)
    loss = check_choice("loss", loss, ("closer", "farther"))
    w = stats.binom.pmf(np.arange(n + 1), n, p_true)
    return float(np.sum(w * geometric_fixed_count_risk(np.arange(n + 1), n, p_model, eps, loss)))


# ---------------------------------------------------------------------------------------------
# Monte Carlo cross-check
# ---------------------------------------------------------------------------------------------


def monte_carlo_fixed_count(
    a: int, estimator: str, n: int, p: float, eps: float, runs: int, rng: np.random.Generator,
    prior: str = "binomial", concentration: float | None = None, level: float = 0.9,
) -> dict[str, float]:
    """Simulate ``Y = a + Laplace(1/eps)`` ``runs`` times: every fixed-count quantity with its standard error.

    Returns ``{"abs", "abs_se", "sq", "sq_se", "closer", "closer_se", "cover", "cover_se"}``
    (``cover``: the credible interval of :func:`credible_coverage` contains ``a``).
    """
    n, p, eps = _check_model(n, p, eps)
    a = int(_check_counts(a, n))
    runs = check_int("runs", runs, minimum=2)
    rng = check_rng("rng", rng)
    y = a + rng.laplace(0.0, 1.0 / eps, size=runs)
    m = make_estimator(estimator, n, p, eps, prior, concentration)(y)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    cover = (post.quantile(y, 0.5 * (1 - level)) <= a) & (post.quantile(y, 0.5 * (1 + level)) >= a)
    out = {}
    for key, v in (
        ("abs", np.abs(a - m)),
        ("sq", (a - m) ** 2),
        ("closer", (np.abs(a - m) < np.abs(a - y)).astype(float)),
        ("cover", cover.astype(float)),
    ):
        out[key] = float(v.mean())
        out[key + "_se"] = float(v.std(ddof=1) / np.sqrt(runs))
    return out


# ---------------------------------------------------------------------------------------------
# What the gain needs: known p, an unknown p, no prior at all
# ---------------------------------------------------------------------------------------------

#: The columns of :func:`gain_over_naive`: the paper's posterior mean with ``p`` known, with an unknown ``p``
#: (a Beta prior on it, i.e. a Beta-binomial prior on the count), and two estimates that use no prior.
GAIN_COLUMNS = (
    "p known",
    "flat prior on p",
    "Jeffreys prior on p",
    "plug-in p",
    "Beta-binomial centred",
    "rounded clamped count",
    "truncated geometric",
)


def gain_over_naive(n: int, p: float, eps: float, concentration: float = 20.0) -> dict[str, float]:
    """Average absolute error over the naive ``1/eps`` (eq. (14)) of the estimates of :data:`GAIN_COLUMNS`, exactly.

    The counts are ``Binomial(n, p)`` (the paper's model); every error is averaged over that true prior.

    * ``"p known"``: the paper's posterior mean (eq. (11)), Laplace noise;
    * ``"flat prior on p"``, ``"Jeffreys prior on p"``: ``p ~ Beta(1, 1)`` or ``Beta(1/2, 1/2)``; the posterior mean of the count when ``p`` is
      unknown with that Beta prior (the count is then Beta-binomial a priori), Laplace noise;
    * ``"plug-in p"``: the posterior mean with ``p`` estimated from the noisy count itself
      (:func:`plugin_estimate`, :func:`plugin_ratio`), Laplace noise;
    * ``"Beta-binomial centred"``: ``p ~ Beta(concentration p, concentration (1 - p))``, centred on the
      truth (the robust prior of :func:`misspecified_ratio`), Laplace noise;
    * ``"rounded clamped count"``: the Laplace answer clamped to ``[0, n]`` and rounded: no prior, no ``p``;
    * ``"truncated geometric"``: the two-sided geometric mechanism clamped to ``[0, n]``: no prior.

    Computed by :func:`dpbayes.estimator_choice.compare_estimators` (absolute loss about ``c / n``,
    multiplied by ``n``), whose Laplace + posterior mean candidate uses this module's integrator.

    Parameters
    ----------
    n : int
        Database size, ``1 <= n <= 2000`` (the absolute-loss limit of the Laplace candidates).
    p : float
        True predicate probability, in ``(0, 1)``.
    eps : float
        Privacy parameter, ``> 0`` (at most 20).
    concentration : float
        Concentration of the centred Beta-binomial prior, ``> 0``.

    Returns
    -------
    dict
        Column name -> error / naive error (below 1: better than the naive answer).
    """
    from dpbayes import estimator_choice as ec

    n = check_int("n", n, minimum=1, maximum=ec.LAPLACE_ABS_MAX_N)
    p = float(check_probability("p", p))
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    eps = float(check_positive("eps", eps))
    concentration = float(check_positive("concentration", concentration))
    truth = ec.CountPrior.binomial(p)
    priors = {
        "p known": truth,
        "flat prior on p": ec.CountPrior.beta(1.0, 1.0),
        "Jeffreys prior on p": ec.CountPrior.beta(0.5, 0.5),
        "Beta-binomial centred": ec.CountPrior.beta(concentration * p, concentration * (1.0 - p)),
    }
    out: dict[str, float] = {}
    for label, prior in priors.items():
        cmp = ec.compare_estimators(n, eps, prior=prior, estimand="proportion", true_prior=truth,
                                    candidates=["laplace-bayes"], loss="absolute")
        out[label] = float(cmp.bayes_risk[0]) * n * eps
    free = ec.compare_estimators(n, eps, prior=truth, estimand="proportion", true_prior=truth,
                                 candidates=["laplace-rounded", "geometric"], loss="absolute")
    risk = dict(zip(free.names, free.bayes_risk))
    out["plug-in p"] = plugin_ratio(n, p, eps)
    out["rounded clamped count"] = float(risk["laplace-rounded"]) * n * eps
    out["truncated geometric"] = float(risk["geometric"]) * n * eps
    return {k: out[k] for k in GAIN_COLUMNS}


#: The estimates that use no prior and no ``p``: the Laplace answer clamped to ``[0, n]`` and rounded, and the
#: truncated (clamped) two-sided geometric mechanism; values: their names in :data:`dpbayes.estimator_choice.CANDIDATES`.
PRIOR_FREE = {"rounded clamped count": "laplace-rounded", "truncated geometric": "geometric"}


def prior_free_fixed_count_ratio(estimate: str, n: int, eps: float) -> NDArray[np.float64]:
    """``E|est - a|`` over the naive ``1/eps`` at every fixed true count ``a = 0..n`` for an estimate of :data:`PRIOR_FREE`.

    Closed forms of :func:`dpbayes.estimator_choice.candidate_abs_risk` (absolute error about ``a / n``,
    multiplied by ``n``). Neither estimate uses a prior, so the ratio is the same whatever ``p`` is.

    Parameters
    ----------
    estimate : {"rounded clamped count", "truncated geometric"}
    n : int
        Database size, ``1 <= n <= 20000``.
    eps : float
        Privacy parameter, ``> 0`` (at most 20).

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    from dpbayes import estimator_choice as ec

    estimate = check_choice("estimate", estimate, tuple(PRIOR_FREE))
    n, _, eps = _check_model(n, 0.5, eps)
    return np.asarray(ec.candidate_abs_risk(PRIOR_FREE[estimate], n, eps), dtype=float) * n * eps


def plugin_estimate(y: ArrayLike, n: int, eps: float) -> NDArray[np.float64]:
    """The posterior mean of the count with ``p`` estimated from the noisy count itself (a plug-in, empirical Bayes).

    ``p_hat(y) = clip(y, 1/2, n - 1/2) / n`` (the clamped noisy count as a fraction, kept half a record from
    the ends so that the prior is never certain of the count), then the paper's posterior mean (eq. (11)) with
    the ``Binomial(n, p_hat(y))`` prior: no ``p`` needed, a function of ``y`` only, so as private as ``y``.
    Constant for ``y <= 0`` and for ``y >= n``. ``O(n)`` per response (a dense posterior, in log space).

    Parameters
    ----------
    y : array_like
        Noisy responses.
    n : int
        Database size, ``1 <= n <= 20000``.
    eps : float
        Privacy parameter, ``> 0``.
    """
    n, _, eps = _check_model(n, 0.5, eps)
    y_arr = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(y_arr)):
        raise ValueError("y must be finite")
    flat = np.clip(y_arr.reshape(-1), 0.0, float(n))
    q = np.clip(flat, 0.5, n - 0.5) / n
    c = np.arange(n + 1, dtype=float)
    log_choose = special.gammaln(n + 1.0) - special.gammaln(c + 1.0) - special.gammaln(n - c + 1.0)
    out = np.empty(flat.size)
    rows = max(1, 4_000_000 // (n + 1))
    for s in range(0, flat.size, rows):
        yy, qq = flat[s : s + rows, None], q[s : s + rows, None]
        lw = log_choose + c * np.log(qq) + (n - c) * np.log1p(-qq) - eps * np.abs(yy - c)
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        out[s : s + rows] = (w @ c) / w.sum(axis=1)
    return out.reshape(y_arr.shape)


def plugin_ratio(n: int, p: float, eps: float, mass_cut: float = 1e-15) -> float:
    """Average absolute error of :func:`plugin_estimate` over the naive ``1/eps``, counts ``Binomial(n, p)``, exactly.

    The fixed-count risk of :func:`fixed_count_risk` (closed-form tails, Gauss-Legendre between the points
    where the estimate crosses an integer) averaged over the counts carrying all but ``mass_cut`` of the
    binomial mass, as in :func:`average_risk`. ``O(n^2)`` work (the dense posterior at each node).
    """
    n, p, eps = _check_model(n, p, eps)
    mass_cut = float(check_positive("mass_cut", mass_cut))
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, p)
    lo = max(int(stats.binom.ppf(mass_cut / 2, n, p)) - 1, 0)
    hi = min(int(stats.binom.isf(mass_cut / 2, n, p)) + 1, n)
    risk = _function_risk(lambda y: plugin_estimate(y, n, eps), k[lo : hi + 1].astype(float), n, eps, "abs")
    return float(np.sum(w[lo : hi + 1] * risk) / np.sum(w[lo : hi + 1])) * eps


def monte_carlo_resolution(n: int, p: float, eps: float, runs: int = 100_000) -> dict[str, float]:
    """What a simulation of ``runs`` draws can resolve of the gap ``1/eps - E|C - m(Y)|``, exactly.

    The paper (§4) estimates the Bayes error ``B = E|C - m(Y)|`` (posterior mean ``m``, ``p`` known) by the
    mean of ``runs`` simulated absolute errors and compares it with the naive error ``1/eps`` (eq. (14)):
    an unpaired design whose standard error is ``sqrt(Var|C - m(Y)| / runs)``. A paired design
    simulates both errors on the same draws: ``sqrt(Var(|C - Y| - |C - m(Y)|) / runs)``. The variances follow
    from the exact moments of :func:`average_risk` (``abs``, ``sq``, ``cross``).

    Parameters
    ----------
    n, p, eps : database size (``<= 20000``), predicate probability, privacy parameter.
    runs : int
        Simulated draws, ``>= 2``.

    Returns
    -------
    dict
        ``gap`` (naive minus Bayes error), ``se_unpaired``, ``se_paired`` and the gap in units of each,
        ``z_unpaired`` and ``z_paired``.
    """
    n, p, eps = _check_model(n, p, eps)
    runs = check_int("runs", runs, minimum=2)
    b = average_risk("mean", n, p, p, eps, "abs")
    sq = average_risk("mean", n, p, p, eps, "sq")
    cross = average_risk("mean", n, p, p, eps, "cross")
    gap = 1.0 / eps - b
    var_bayes = max(sq - b * b, 0.0)
    var_diff = max(2.0 / eps**2 + sq - 2.0 * cross - gap * gap, 0.0)
    se_u, se_p = np.sqrt(var_bayes / runs), np.sqrt(var_diff / runs)
    return {"gap": gap, "se_unpaired": float(se_u), "se_paired": float(se_p),
            "z_unpaired": gap / se_u if se_u > 0 else np.inf, "z_paired": gap / se_p if se_p > 0 else np.inf}


# ---------------------------------------------------------------------------------------------
# The privacy claim: what one individual's posterior odds do
# ---------------------------------------------------------------------------------------------


def individual_odds_shift(n: int, p: float, eps: float, y: ArrayLike) -> NDArray[np.float64]:
    """``|log posterior odds - log prior odds|`` that record ``i`` satisfies the predicate, given ``Y = y``.

    Records are independent ``Bernoulli(p)`` (the model behind eq. (10)); the count of the other
    ``n - 1`` records is ``Binomial(n - 1, p)``. The likelihood ratio of ``x_i = 1`` to
    ``x_i = 0`` is ``sum_c B(c) e^{-eps|y - c - 1|} / sum_c B(c) e^{-eps|y - c|}``, between
    ``e^{-eps}`` and ``e^{eps}`` because the two Laplace densities are: the eps-DP bound, which
    every function of ``y`` (the posterior mean among them) inherits.
    """
    n, p, eps = _check_model(n, p, eps)
    if n < 2:
        raise ValueError("n must be >= 2")
    y = np.asarray(y, dtype=float)
    post = PriorPosterior(stats.binom.logpmf(np.arange(n), n - 1, p), eps)
    l1 = _log_norm(post, y - 1.0)
    l0 = _log_norm(post, y)
    return np.abs(l1 - l0)


def _log_norm(post: PriorPosterior, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log sum_c w_c exp(-eps |y - c|)`` for any real ``y`` (not clipped)."""
    n = post.n
    yc = np.clip(y, 0.0, float(n))
    _, j, ey = post._prep(yc)
    lz = post._log_z(0, j, ey)
    # outside [0, n] the kernel changes by the factor exp(-eps * distance to the interval)
    return lz - post.eps * (np.abs(y - yc))


# ---------------------------------------------------------------------------------------------
# Large n: the Gaussian approximation
# ---------------------------------------------------------------------------------------------


def gaussian_limit(n: int, p: float, eps: float) -> dict[str, float]:
    """Error ratio and ``P(closer)`` of the posterior mean in the Gaussian approximation.

    The count is replaced by ``N(np, s**2)``, ``s**2 = np(1 - p)``, and the posterior mean by its
    linear form ``np + k (y - np)``, ``k = s**2 / (s**2 + 2/eps**2)`` (the posterior mean when the
    Laplace noise is replaced by a normal one of the same variance ``2/eps**2``; for a wide prior
    it is also the first-order tilt of the exact posterior mean). With ``D = C - np`` and the
    Laplace noise ``R``, the error is ``k R - (1 - k) D``. Both quantities are one-dimensional
    integrals over ``R`` (``scipy.integrate.quad``):

    * ``ratio = E|k R - (1 - k) D| * eps`` (a folded normal given ``R``);
    * ``closer = P(|k R - (1 - k) D| < |R|)``: given ``R = r > 0`` it is
      ``Phi((1 + k) r / ((1 - k) s)) - Phi(-r / s)``.

    The approximation forgets that the count is an integer: it is the large-``n`` limit only
    where the noise is much wider than one count (``eps`` well below 1); compare
    :func:`lattice_limit`.

    Returns ``{"ratio", "closer"}``.
    """
    n, p, eps = _check_model(n, p, eps)
    if not 0 < p < 1:
        raise ValueError("p must lie in (0, 1)")
    s = np.sqrt(n * p * (1 - p))
    k = s**2 / (s**2 + 2.0 / eps**2)
    d = (1 - k) * s  # sd of (1 - k) D

    def folded(r: float) -> float:
        mu = k * r
        return d * np.sqrt(2 / np.pi) * np.exp(-0.5 * (mu / d) ** 2) + mu * (1 - 2 * special.ndtr(-mu / d))

    def closer(r: float) -> float:
        return special.ndtr((1 + k) * r / d) - special.ndtr(-r / s)

    dens = lambda r: eps * np.exp(-eps * r)  # density of |R|
    upper = 60.0 / eps
    ratio = integrate.quad(lambda r: dens(r) * folded(r), 0, upper, limit=200, epsabs=1e-13, epsrel=1e-11)[0] * eps
    prob = integrate.quad(lambda r: dens(r) * closer(r), 0, upper, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    return {"ratio": float(ratio), "closer": float(prob)}


def lattice_limit(eps: float) -> dict[str, float]:
    """Error ratio and ``P(closer)`` of the posterior mean when the prior is flat over the integers.

    The large-``n`` limit at fixed ``eps``: the binomial prior becomes flat on the scale of the
    noise, but the count stays an integer, which the posterior mean still exploits (it pulls
    ``y`` towards the nearest integers). Computed exactly with :func:`fixed_count_risk` at the
    central count ``a = N/2`` of a uniform prior on ``{0, ..., N}``, ``N = 2 ceil(50 / eps)``, so
    that both ends are ``50/eps`` away (their influence is below ``e^-50``). For a flat prior the
    risk does not depend on ``a``: this is also the average risk.

    Returns ``{"ratio", "closer", "N"}``.
    """
    eps = float(check_positive("eps", eps))
    big_n = int(2 * np.ceil(50.0 / eps))
    if big_n > MAX_N_RISK:
        raise ValueError(f"eps must be >= {100.0 / MAX_N_RISK} for lattice_limit, got {eps}")
    a = big_n // 2
    ratio = float(fixed_count_risk(a, "mean", big_n, 0.5, eps, "abs", "beta-binomial", 2.0)) * eps
    closer = float(fixed_count_risk(a, "mean", big_n, 0.5, eps, "closer", "beta-binomial", 2.0))
    return {"ratio": ratio, "closer": closer, "N": big_n}


# ---------------------------------------------------------------------------------------------
# Extremes over eps by optimisation
# ---------------------------------------------------------------------------------------------


def extreme_over_eps(
    f: Callable[[float], float], eps_min: float, eps_max: float, *, maximize: bool = False, n_coarse: int = 13,
    xatol: float = 1e-4,
) -> dict[str, Any]:
    """Locate the smallest (or largest) value of ``f(eps)`` on ``[eps_min, eps_max]``.

    A coarse log-spaced scan of ``n_coarse`` points brackets the best point (its two neighbours);
    ``scipy.optimize.minimize_scalar`` (bounded, in ``log eps``, ``xatol``) refines it inside that
    bracket. When the best scan point is an end of the range, the bracket is the end cell and the
    result may be the end itself (reported as ``at_boundary``).

    Returns ``{"eps", "value", "scan_eps", "scan_values", "at_boundary", "nfev"}``.
    """
    eps_min = float(check_positive("eps_min", eps_min))
    eps_max = float(check_positive("eps_max", eps_max))
    if not eps_min < eps_max:
        raise ValueError(f"eps_min must be < eps_max, got {eps_min} and {eps_max}")
    n_coarse = check_int("n_coarse", n_coarse, minimum=3, maximum=1000)
    sign = -1.0 if maximize else 1.0
    xs = np.linspace(np.log(eps_min), np.log(eps_max), n_coarse)
    vals = np.array([sign * f(float(np.exp(x))) for x in xs])
    i = int(np.argmin(vals))
    lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, n_coarse - 1)]
    res = optimize.minimize_scalar(lambda x: sign * f(float(np.exp(x))), bounds=(lo, hi), method="bounded",
                                   options={"xatol": xatol})
    best_x, best_v = (res.x, res.fun) if res.fun <= vals[i] else (xs[i], vals[i])
    return {
        "eps": float(np.exp(best_x)),
        "value": float(sign * best_v),
        "scan_eps": np.exp(xs),
        "scan_values": sign * vals,
        "at_boundary": bool(np.isclose(best_x, xs[0], atol=10 * xatol) or np.isclose(best_x, xs[-1], atol=10 * xatol)),
        "nfev": int(n_coarse + res.nfev),
    }
