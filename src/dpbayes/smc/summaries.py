"""Summaries of a simulation study's estimates and posteriors (chapter 3, beyond the paper).

Root-mean-square, mean and median absolute error of point estimates; quantiles and equal-tailed credible
intervals of a weighted posterior sample (a particle cloud or a chain); the coverage of such intervals and
the pooled coverage over independent replicates with an exact binomial test of undercoverage. Used by
:func:`dpbayes.smc.study.run_replicate` and the chapter's notebooks; re-exported by
:mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpbayes.core.validation import check_int, check_probability

__all__ = ["CREDIBLE_LEVEL", "error_summary", "weighted_quantile", "credible_interval", "coverage", "PooledCoverage", "pooled_coverage"]


#: Level of the credible intervals a replicate records (beyond the paper).
CREDIBLE_LEVEL = 0.9


def _finite_1d(name: str, value: ArrayLike) -> NDArray[np.float64]:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    return arr


def _normalised_weights(weights: ArrayLike | None, size: int, per: str) -> NDArray[np.float64]:
    """Weights summing to one, one ``per`` value (equal when ``None``); checked before use."""
    if weights is None:
        return np.full(size, 1.0 / size)
    w = _finite_1d("weights", weights)
    if w.shape != (size,) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative, one per {per}, with a positive sum")
    return w / w.sum()


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
    w = _normalised_weights(weights, v.size, "value")
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


@dataclass(frozen=True)
class PooledCoverage:
    """Coverage of ``total`` credible intervals, ``hits`` of which contain the truth, tested against the nominal level."""

    coverage: float
    #: ``P[Binomial(total, level) <= hits]``: how likely so few covering intervals are if the level held
    p_value: float
    #: ``p_value < alpha``
    undercovers: bool


def pooled_coverage(hits: int, total: int, level: float = CREDIBLE_LEVEL, alpha: float = 0.01) -> PooledCoverage:
    """Pooled coverage of credible intervals with a one-sided exact binomial test of undercoverage (beyond the paper).

    The intervals are independent replicates (one per ``(eps, run)``), so under the nominal ``level`` the number
    that contain the truth is ``Binomial(total, level)``; the book's rule calls a method *undercovering* when
    the probability of at most ``hits`` covering intervals is below ``alpha``.
    """
    total = check_int("total", total, minimum=1)
    hits = check_int("hits", hits, minimum=0, maximum=total)
    level = float(check_probability("level", level))
    alpha = float(check_probability("alpha", alpha))
    p_value = float(stats.binom.cdf(hits, total, level))
    return PooledCoverage(coverage=hits / total, p_value=p_value, undercovers=p_value < alpha)
