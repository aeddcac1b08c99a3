"""Locating the extreme of a function of one variable: a coarse scan, then bounded Brent inside the best bracket.

The book locates the extremes its verdicts rest on (the eps where a ratio peaks, the worst truth) by
optimisation rather than by reading them off a plotting grid. A scan alone can miss the extreme between
two grid points; a local optimiser alone can stop at a poor local extreme. Scanning first and refining
inside the bracket of the best scan point does both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbayes.core._extras import lazy_module
from dpbayes.core.validation import check_int, check_positive

# loaded on first use: dpbayes.release.statistic imports this module through estimator_choice and must stay light
optimize = lazy_module("scipy.optimize")

__all__ = ["refine_scanned_extreme", "extreme_over_eps"]


def refine_scanned_extreme(
    f: Callable[[float], float], grid: NDArray[np.float64], values: NDArray[np.float64], *, maximize: bool = False,
    xatol: float = 1e-9, limits: tuple[float | None, float | None] = (None, None),
) -> tuple[float, float, int]:
    """Refine the best point of a scan: bounded Brent between the grid neighbours of the best scanned value.

    The bracket is ``[grid[i - 1], grid[i + 1]]`` around the best scanned point ``i`` (NaN values are
    skipped); at an end of the scan it is the end cell, or reaches out to the limit on that side when one
    is given, and it never leaves ``limits``.

    Parameters
    ----------
    f : callable
        The function, of one float.
    grid : ndarray
        The scanned points, increasing (at least 2).
    values : ndarray
        ``f`` at ``grid`` (computed by the caller, often vectorised).
    maximize : bool
        Look for the largest value instead of the smallest.
    xatol : float
        Absolute tolerance of the bounded search, ``> 0``.
    limits : (float or None, float or None)
        Where the search may go: a lower (upper) limit extends the bracket of the first (last) scanned
        point down (up) to it and clips every bracket; ``None``: no extension, no clipping on that side.
        A bracket clipped to nothing returns the scanned point (``nfev = 0``).

    Returns
    -------
    (x, value, nfev)
        The refined point if it is at least as good as the best scanned one, else that scanned point;
        ``nfev`` counts the refinement's evaluations of ``f``.
    """
    grid = np.asarray(grid, dtype=float)
    values = np.asarray(values, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or values.shape != grid.shape or not np.all(np.diff(grid) > 0):
        raise ValueError("grid must be an increasing 1-d array of at least 2 points, with values of the same shape")
    xatol = float(check_positive("xatol", xatol))
    sign = -1.0 if maximize else 1.0
    if np.all(np.isnan(values)):
        raise ValueError("values must hold at least one number (all are NaN)")
    i = int(np.nanargmin(sign * values))
    lower, upper = limits
    lo = float(grid[i - 1]) if i > 0 else (float(lower) if lower is not None else float(grid[0]))
    hi = float(grid[i + 1]) if i + 1 < grid.size else (float(upper) if upper is not None else float(grid[-1]))
    lo = lo if lower is None else max(lo, float(lower))
    hi = hi if upper is None else min(hi, float(upper))
    if hi <= lo:
        return float(grid[i]), float(values[i]), 0
    res = optimize.minimize_scalar(lambda x: sign * f(float(x)), bounds=(lo, hi), method="bounded",
                                   options={"xatol": xatol})
    if res.fun <= sign * values[i]:
        return float(res.x), float(sign * res.fun), int(res.nfev)
    return float(grid[i]), float(values[i]), int(res.nfev)


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
    xs = np.linspace(np.log(eps_min), np.log(eps_max), n_coarse)
    vals = np.array([f(float(np.exp(x))) for x in xs])
    best_x, best_v, nfev = refine_scanned_extreme(lambda x: f(float(np.exp(x))), xs, vals, maximize=maximize, xatol=xatol)
    return {
        "eps": float(np.exp(best_x)),
        "value": best_v,
        "scan_eps": np.exp(xs),
        "scan_values": vals,
        "at_boundary": bool(np.isclose(best_x, xs[0], atol=10 * xatol) or np.isclose(best_x, xs[-1], atol=10 * xatol)),
        "nfev": int(n_coarse + nfev),
    }
