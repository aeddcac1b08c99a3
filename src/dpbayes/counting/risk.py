"""Risk of the Bayes-corrected noisy count at a fixed truth and under a wrong prior (beyond Naldi & D'Acquisto).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?". The paper (and :mod:`dpbayes.counting.model`) averages every
error over the ``Binomial(n, p)`` prior with ``p`` known: eqs. (12)-(13) with the expectation
"taken over the range of possible values of the true response". This module asks the questions a
privacy reader asks instead:

* the **fixed-count** (frequentist) risk: for one database with true count ``a``, the noisy
  response is ``Y = a + R``, ``R ~ Laplace(0, 1/eps)`` (eq. (1)), and an estimator ``m`` has
  ``E|a - m(Y)|``, ``E(a - m(Y))**2`` and ``P(|a - m(Y)| < |a - Y|)`` (eq. (13) at fixed ``a``);
* a **wrong prior**: the estimator built with ``p'`` while the counts follow ``Binomial(n, p)``;
* a **Beta-binomial** (hierarchical) prior as the robust alternative;
* the **geometric mechanism + posterior median** (the optimum of :mod:`dpbayes.counting.model`) at
  fixed counts, by finite sums.

Built on these, in modules of their own: the coverage of the posterior's credible interval
(:mod:`dpbayes.counting.credible`), what the Bayes gain needs (:mod:`dpbayes.choosing.counting_gain`), an
individual's posterior odds after the release (:mod:`dpbayes.counting.odds`) and the large-``n`` limits
(:mod:`dpbayes.counting.limits`).

Everything is exact in the sense of :mod:`dpbayes.counting.model`: integrals over the noisy response
``y``, closed form outside ``[0, n]`` (where every Bayes estimate is constant, because the factor
``exp(eps y)`` or ``exp(-eps y)`` of the Laplace kernel cancels in the posterior, for any prior
on ``{0, ..., n}``), and on ``[0, n]`` Gauss-Legendre on pieces between the points where the
integrand is not smooth. Monte Carlo (:func:`monte_carlo_fixed_count`) only cross-checks.

The estimators under the binomial prior are those of :func:`dpbayes.counting.model.estimate`. For other
priors the posterior is computed here with the same factorisation of the Laplace kernel
(:class:`PriorPosterior`), in log space.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpbayes.counting import model as ct
from dpbayes.core.validation import check_choice, check_int, check_positive, check_probability, check_rng

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
    "geometric_fixed_count_risk",
    "geometric_average_prob_closer",
    "monte_carlo_fixed_count",
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
    # the checks of dpbayes.counting.model, with this module's smaller bound on n
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
    (the factorisation of :mod:`dpbayes.counting.model`), so two cumulative sums per ``r`` (kept in log
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
    binomial prior exactly :func:`dpbayes.counting.model.estimate`). ``p`` is the analyst's value, which
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
    ``tests/counting/test_risk.py``).

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
    eq. (12) (``loss="abs"``) or eq. (13) (``loss="closer"``), as in :mod:`dpbayes.counting.model`.
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
# Geometric mechanism + posterior median (the optimum) at fixed counts
# ---------------------------------------------------------------------------------------------


def _geometric_median_table(n: int, p: float, eps: float) -> NDArray[np.float64]:
    from dpbayes.core.mechanisms import truncated_geometric_matrix

    k = np.arange(n + 1, dtype=float)
    joint = truncated_geometric_matrix(n, eps) * stats.binom.pmf(k, n, p)[None, :]
    pz = joint.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = np.where(pz > 0, joint / pz, 1.0 / (n + 1))
    # same rule as dpbayes.counting.geometric.geometric_mean_abs_error
    return np.argmax(np.cumsum(post, axis=1) >= 0.5 - 1e-12, axis=1).astype(float)


def geometric_fixed_count_risk(a: ArrayLike, n: int, p: float, eps: float, loss: str = "abs") -> NDArray[np.float64]:
    """Fixed-count risk of the truncated geometric mechanism followed by the posterior median.

    The pipeline of :func:`dpbayes.counting.geometric.geometric_mean_abs_error` (``"median"``), which attains
    the optimum of :func:`dpbayes.counting.geometric.optimal_private_estimator`; ``p`` is the analyst's
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
        from dpbayes.core.mechanisms import truncated_geometric_matrix

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
    (``cover``: the credible interval of :func:`dpbayes.counting.credible.credible_coverage` contains ``a``).
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


