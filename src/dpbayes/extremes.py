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
from scipy import optimize

from dpbayes.validation import check_int, check_positive

__all__ = ["extreme_over_eps"]


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
