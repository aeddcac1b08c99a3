"""How much the adaptive interval explores, window by window (chapter 3, paper §3.2.1).

The paper centres the truncation interval of step ``t`` at a draw from the posterior after step
``t - 1`` and argues that the exploration "is automatically handled by the posterior distribution ...
which is spread over a wide region at the beginning but gets more concentrated as more data are
received". The exploration at step ``t`` is the offset of the interval's centre from the posterior mean
it was drawn around; :func:`~dpbayes.smc.exploration.window_spread` gives the standard deviation of those
offsets in consecutive windows of steps, and :func:`~dpbayes.smc.exploration.spread_ratio` the ratio of the
last window's spread to a reference window's (the first, or a later one) with a percentile bootstrap interval (offsets resampled within
each window).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.validation import check_int, check_probability

__all__ = ["window_spread", "spread_ratio"]


def _windows(offsets: ArrayLike, n_windows: int) -> list[NDArray[np.float64]]:
    x = np.asarray(offsets, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("offsets must be a one-dimensional array of finite values")
    n_windows = check_int("n_windows", n_windows, minimum=2)
    if x.size < 2 * n_windows:
        raise ValueError(f"offsets must have at least 2 values per window (2 * n_windows = {2 * n_windows}), got {x.size}")
    return np.array_split(x, n_windows)


def window_spread(offsets: ArrayLike, n_windows: int) -> NDArray[np.float64]:
    """Standard deviation (``ddof=1``) of the offsets in each of ``n_windows`` consecutive windows.

    Parameters
    ----------
    offsets : array_like
        One-dimensional, finite: the exploration offset of each step, in step order.
    n_windows : int
        Number of consecutive windows (as equal as ``numpy.array_split`` makes them), ``>= 2``,
        with at least two offsets each.

    Returns
    -------
    ndarray
        Shape ``(n_windows,)``.
    """
    return np.array([w.std(ddof=1) for w in _windows(offsets, n_windows)])


def spread_ratio(offsets: ArrayLike, n_windows: int, n_boot: int = 2000, level: float = 0.95,
                 seed: int = 0, reference: int = 0) -> tuple[float, float, float]:
    """Ratio of the last window's spread to a reference window's, with a percentile bootstrap interval.

    Parameters
    ----------
    offsets, n_windows
        As in :func:`~dpbayes.smc.exploration.window_spread`.
    n_boot : int
        Bootstrap resamples, ``>= 100``; offsets are resampled with replacement within each window.
    level : float
        Level of the interval, in ``(0, 1)``.
    seed : int
        Seed of the resampling, ``>= 0``.
    reference : int
        Index of the reference window, ``0 <= reference < n_windows - 1`` (0: the first window, where the
        prior still dominates; 1: the first window after it).

    Returns
    -------
    tuple of float
        ``(ratio, lower, upper)``; a ratio below one with ``upper < 1`` means the exploration shrank.
    """
    n_boot = check_int("n_boot", n_boot, minimum=100)
    seed = check_int("seed", seed, minimum=0)
    level = check_probability("level", level, open_interval=True)
    wins = _windows(offsets, n_windows)
    reference = check_int("reference", reference, minimum=0, maximum=len(wins) - 2)
    first, last = wins[reference], wins[-1]
    ratio = float(last.std(ddof=1) / first.std(ddof=1))
    rng = np.random.default_rng(seed)
    bf = first[rng.integers(0, first.size, size=(n_boot, first.size))].std(axis=1, ddof=1)
    bl = last[rng.integers(0, last.size, size=(n_boot, last.size))].std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = bl / bf
    alpha = (1.0 - float(level)) / 2.0
    lo, hi = np.nanquantile(boot, [alpha, 1.0 - alpha])
    return ratio, float(lo), float(hi)
