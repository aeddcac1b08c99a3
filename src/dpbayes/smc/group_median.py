"""Sensitivity of the median of a group of bounded records (chapter 3, paper §4.2).

The paper's real-data section releases, for each geographical unit, the median household income of the
unit, and argues that "the median of a group of household incomes has the same sensitivity as a single
household income". With household incomes in ``[lower, upper]`` and the neighbour relation "one
household's income replaced" (the unit's size unchanged), the median of a group of ``m`` incomes is
monotone in every record, so the largest change is attained by replacing one record by ``lower`` or by
``upper`` (:func:`~dpbayes.smc.group_median.largest_median_change`). Over all groups the worst case is
``upper - lower`` for odd ``m`` and ``(upper - lower) / 2`` for even ``m`` (the median of an even group
being the mean of its two middle values): :func:`~dpbayes.smc.group_median.group_median_sensitivity` in
closed form, :func:`~dpbayes.smc.group_median.exhaustive_group_median_sensitivity` by exhaustive search over
all groups on a grid that contains both limits.
"""

from __future__ import annotations

from itertools import combinations_with_replacement

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.validation import check_int

__all__ = ["largest_median_change", "group_median_sensitivity", "exhaustive_group_median_sensitivity"]


def _check_limits(lower: float, upper: float) -> tuple[float, float]:
    lo, hi = float(lower), float(upper)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"lower and upper must be finite, got lower={lower!r}, upper={upper!r}")
    if not lo < hi:
        raise ValueError(f"lower must be smaller than upper, got lower={lower!r}, upper={upper!r}")
    return lo, hi


def largest_median_change(groups: ArrayLike, lower: float, upper: float) -> NDArray[np.float64]:
    """Largest change of each group's median when one of its records is replaced by a value in ``[lower, upper]``.

    Parameters
    ----------
    groups : array_like
        Shape ``(..., m)``, ``m >= 1``: the records of each group along the last axis, each in
        ``[lower, upper]``.
    lower, upper : float
        The records' limits; finite, ``lower < upper``.

    Returns
    -------
    ndarray
        Shape ``groups.shape[:-1]``: ``max_i max_v |median(x with x_i = v) - median(x)|`` over
        ``v`` in ``[lower, upper]``. Exact: the median is non-decreasing in every record, so the
        maximum over ``v`` is attained at ``v = lower`` or ``v = upper``.
    """
    lo, hi = _check_limits(lower, upper)
    x = np.asarray(groups, dtype=float)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"groups must have at least one record along the last axis, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or np.any(x < lo) or np.any(x > hi):
        raise ValueError(f"every record of groups must lie in [lower, upper] = [{lo}, {hi}]")
    m = x.shape[-1]
    base = np.median(x, axis=-1)
    worst = np.zeros(base.shape)
    for i in range(m):
        for v in (lo, hi):
            y = x.copy()
            y[..., i] = v
            worst = np.maximum(worst, np.abs(np.median(y, axis=-1) - base))
    return worst


def group_median_sensitivity(m: int, lower: float, upper: float) -> float:
    """Closed-form sensitivity of the median of ``m`` records in ``[lower, upper]`` under one record replaced.

    Parameters
    ----------
    m : int
        Group size, ``m >= 1``.
    lower, upper : float
        The records' limits; finite, ``lower < upper``.

    Returns
    -------
    float
        ``upper - lower`` for odd ``m``; ``(upper - lower) / 2`` for even ``m`` (median = mean of the two
        middle values). Never more than the sensitivity ``upper - lower`` of one record.
    """
    m = check_int("m", m, minimum=1)
    lo, hi = _check_limits(lower, upper)
    return (hi - lo) if m % 2 == 1 else (hi - lo) / 2.0


def exhaustive_group_median_sensitivity(m: int, lower: float, upper: float, grid_points: int = 5) -> float:
    """Largest median change over every group of ``m`` records on an evenly spaced grid of ``[lower, upper]``.

    The median does not depend on the records' order, so every multiset of ``m`` grid values is searched
    once (``C(grid_points + m - 1, m)`` groups); the replacement value ranges over the whole interval
    (:func:`~dpbayes.smc.group_median.largest_median_change`). The grid contains both limits, where the worst
    groups lie, so the result equals the supremum over all groups in ``[lower, upper]``.

    Parameters
    ----------
    m : int
        Group size, ``1 <= m <= 12``.
    lower, upper : float
        The records' limits; finite, ``lower < upper``.
    grid_points : int
        Grid values including both limits, ``2 <= grid_points <= 50``.
    """
    m = check_int("m", m, minimum=1, maximum=12)
    grid_points = check_int("grid_points", grid_points, minimum=2, maximum=50)
    lo, hi = _check_limits(lower, upper)
    grid = np.linspace(lo, hi, grid_points)
    groups = np.array(list(combinations_with_replacement(grid, m)), dtype=float)
    return float(np.max(largest_median_change(groups, lo, hi)))
