"""Error summaries, credible intervals and fairer non-adaptive baselines for Yildirim (2024).

Beyond the paper. Its simulation study (Section 4.1) compares the adaptive interval with one fixed
interval, ``mu +- 10 sigma`` centred at the *true* mean, and reports accuracy only (Fig. 2, Table 1).
This module supplies what a reader needs to judge those comparisons:

* :func:`error_summary` -- RMSE, mean and median absolute error of a set of estimates;
* :func:`credible_interval`, :func:`coverage` -- equal-tailed credible intervals from a weighted
  particle cloud or a chain, and how often they contain the truth;
* :func:`fixed_interval_fisher`, :func:`design_fisher` -- the exact total Fisher information of a
  fixed-interval design and of any realised sequence of intervals (paper eq. (6));
* :func:`two_stage_pilot`, :func:`two_stage_fisher` -- a two-stage design a practitioner could run without adaptivity: a
  pilot fraction released through a wide interval, then one fixed interval centred at the pilot
  posterior mean, each individual releasing once with the same eps (so the design is eps-DP per
  individual: the second-stage interval depends on released values only, paper Proposition 1).

Fisher informations are exact (:func:`dpbayes.truncation.fisher_information_normal`); the prior
is the paper's (:class:`dpbayes.smc.NormalInvGammaPrior`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes import smc, truncation
from dpbayes.smc import NormalInvGammaPrior
from dpbayes.validation import check_int, check_positive, check_probability

__all__ = [
    "error_summary",
    "weighted_quantile",
    "credible_interval",
    "coverage",
    "fixed_interval_fisher",
    "design_fisher",
    "two_stage_pilot",
    "two_stage_fisher",
]


def _finite_1d(name: str, value: ArrayLike) -> NDArray[np.float64]:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    return arr


def error_summary(estimates: ArrayLike, truth: float) -> dict[str, float]:
    """Root-mean-square, mean absolute and median absolute error of ``estimates`` about ``truth``.

    Returns
    -------
    dict
        ``rmse``, ``mae`` (mean absolute error), ``medae`` (median absolute error).
    """
    est = _finite_1d("estimates", estimates)
    if not np.isfinite(truth):
        raise ValueError(f"truth must be a finite number, got {truth!r}")
    err = est - float(truth)
    return {
        "rmse": float(np.sqrt(np.mean(err**2))),
        "mae": float(np.mean(np.abs(err))),
        "medae": float(np.median(np.abs(err))),
    }


def weighted_quantile(values: ArrayLike, probs: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Quantiles of a weighted sample (inverse of the weighted empirical CDF, no interpolation).

    The ``p``-quantile is the smallest value whose cumulative normalised weight reaches ``p``;
    with equal weights this is ``numpy.quantile(values, p, method="inverted_cdf")``.
    """
    v = _finite_1d("values", values)
    p = np.atleast_1d(check_probability("probs", probs))
    if weights is None:
        w = np.full(v.size, 1.0 / v.size)
    else:
        w = _finite_1d("weights", weights)
        if w.shape != v.shape or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative, one per value, with a positive sum")
        w = w / w.sum()
    order = np.argsort(v, kind="stable")
    cdf = np.cumsum(w[order])
    cdf[-1] = 1.0
    idx = np.searchsorted(cdf, p - 1e-12, side="left")
    return v[order][np.minimum(idx, v.size - 1)]


def credible_interval(values: ArrayLike, weights: ArrayLike | None = None, level: float = 0.9) -> tuple[float, float]:
    """Equal-tailed ``level`` credible interval of a (weighted) posterior sample."""
    level = float(check_probability("level", level, open_interval=True))
    lo, hi = weighted_quantile(values, [(1 - level) / 2, (1 + level) / 2], weights)
    return float(lo), float(hi)


def coverage(intervals: ArrayLike, truth: float) -> float:
    """Fraction of intervals ``(lower, upper)`` (shape ``(k, 2)``) that contain ``truth``."""
    iv = np.asarray(intervals, dtype=float)
    if iv.ndim != 2 or iv.shape[1] != 2 or iv.shape[0] == 0 or not np.all(np.isfinite(iv)):
        raise ValueError("intervals must be a non-empty (k, 2) array of finite (lower, upper) pairs")
    if np.any(iv[:, 0] > iv[:, 1]):
        raise ValueError("intervals must have lower <= upper")
    return float(np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1])))


def fixed_interval_fisher(n: int, mu: float, sigma: float, halfwidth: float, eps: float) -> NDArray[np.float64]:
    """Total exact Fisher information of ``n`` releases through ``[mu - k sigma, mu + k sigma]``.

    ``n F^eps_{l,r}(mu, sigma)`` with ``k = halfwidth`` (paper eq. (6)); by Theorem 3 this is
    ``n F^eps_{-k,k}(0, 1) / sigma^2``. The interval is centred at the *true* mean: the most
    favourable fixed interval of that width (the paper's non-adaptive baseline has ``k = 10``).
    """
    check_int("n", n, minimum=1)
    sigma = check_positive("sigma", sigma)
    k = check_positive("halfwidth", halfwidth)
    return n * truncation.fisher_information_normal(mu, sigma, mu - k * sigma, mu + k * sigma, eps)


def design_fisher(lower: ArrayLike, upper: ArrayLike, mu: float, sigma: float, eps: float) -> NDArray[np.float64]:
    """Total exact Fisher information at ``(mu, sigma)`` of releases made with the given intervals.

    Same number as :func:`dpbayes.smc.realised_fisher_information`, but each distinct interval is
    evaluated once (a two-stage design has two), so it is cheap for long runs.
    """
    lo = _finite_1d("lower", lower)
    hi = np.broadcast_to(np.asarray(upper, dtype=float), lo.shape)
    pairs, counts = np.unique(np.column_stack([lo, hi]), axis=0, return_counts=True)
    F = truncation.fisher_information_normal(mu, sigma, pairs[:, 0], pairs[:, 1], eps)
    return np.einsum("k,kij->ij", counts.astype(float), F)


def two_stage_pilot(
    x_pilot: ArrayLike,
    eps: float,
    noise: ArrayLike,
    pilot_interval: tuple[float, float],
    rng: np.random.Generator,
    *,
    n_particles: int = 200,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
) -> tuple[float, float]:
    """Stage 1 of a two-stage design: the pilot's posterior means of ``(mu, sigma)``.

    The pilot individuals release through the fixed ``pilot_interval`` with the given standard
    Laplace draws (paper eq. (10), each release eps-DP); the posterior is computed with the
    exact-likelihood SMC (:func:`dpbayes.smc.smc_exact`). Stage 2 asks everyone else for
    ``[m - k c, m + k c]`` around the returned ``(m, c)``; that interval is post-processing of released
    values, so the whole design is eps-DP per individual (paper Proposition 1).
    """
    res = smc.smc_exact(x_pilot, eps, rng, n_particles=n_particles, fixed_interval=pilot_interval,
                        noise=noise, prior=prior, store_every=max(1, np.size(x_pilot)))
    return float(res.mean_mu[-1]), float(res.mean_sigma[-1])


def two_stage_fisher(
    n: int,
    n_pilot: int,
    mu: float,
    sigma: float,
    pilot_interval: tuple[float, float],
    centre: float,
    scale: float,
    halfwidth: float,
    eps: float,
) -> NDArray[np.float64]:
    """Total exact Fisher information at ``(mu, sigma)`` of a two-stage design given its pilot estimate.

    ``n_pilot F(pilot_interval) + (n - n_pilot) F([centre - halfwidth scale, centre + halfwidth scale])``
    (paper eq. (6), releases independent given the intervals).
    """
    check_int("n", n, minimum=2)
    check_int("n_pilot", n_pilot, minimum=1, maximum=n - 1)
    scale = check_positive("scale", scale)
    k = check_positive("halfwidth", halfwidth)
    lower = np.array([pilot_interval[0], centre - k * scale])
    upper = np.array([pilot_interval[1], centre + k * scale])
    F = truncation.fisher_information_normal(mu, sigma, lower, upper, eps)
    return n_pilot * F[0] + (n - n_pilot) * F[1]
