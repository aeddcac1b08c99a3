"""The worst case of a large count in ``O(1 / eps)``: the clamped geometric count's worst risk and a lower bound.

For ``n`` records and two-sided geometric noise ``G`` with ``P(G = t) = (1 - q) / (1 + q) q^|t|``,
``q = exp(-eps)``, the count ``c`` is released as ``z = clamp(c + G, 0, n)``. Far from the ends of
``{0..n}`` neither the release nor any remap of it can tell where the ends are, so for ``n`` much larger than
``1 / eps`` the worst case over the counts is decided by a window of width ``D`` (:func:`tail_width`) at each
end, and both quantities below cost ``O(D)`` instead of the ``O(n)`` of
:func:`dpbayes.choosing.candidates.compare_estimators` (which, for the minimax remap, also solves an
optimisation over ``n + 1`` values).

* :func:`clamped_geometric_worst_risk`: the exact worst mean squared error of ``z`` about ``c`` over the counts.
  ``E[(z - c)^2 | c] = h(c) + h(n - c)`` with ``h(a) = sum_{t=1}^{a} t^2 p(t) + a^2 P(G > a)`` (the noise
  clipped at the ends; ``P(G > a) = q^(a+1) / (1 + q)``), and ``h(a)`` is constant to double precision once
  ``q^a`` underflows, at ``a >= D``.
* :func:`count_minimax_lower_bound`: a lower bound on the worst risk of *every* estimator computed from ``z``
  (every remap, the minimax one included). The worst risk is at least the Bayes risk under the uniform prior on
  ``{0..n}``, which is at least that of the best estimator from the unclamped ``y = c + G`` (``z`` is a function
  of ``y``): ``(1 / (n + 1)) sum_y min_m sum_c p(y - c) (c - m)^2``. Each inner sum only decreases when its
  terms are restricted to ``|y - c| <= D``, and the outer one when the ``y`` that see no such term are dropped,
  so the truncated sum is still a lower bound; it has ``n - 2D + 1`` identical middle terms and ``4D`` edge
  terms, each from prefix sums over ``t = -D..D``.

If the worst risk of the plain count is within a factor ``1 + tie`` of the lower bound, no remap can be better
by more than ``tie``: :func:`dpbayes.choosing.decision.recommend` then chooses the count without solving for
the minimax remap. Beyond the book's sources (the minimax remap itself: Gupte & Sundararajan 2010).
"""

from __future__ import annotations

import math

import numpy as np

from dpbayes.core.validation import check_int, check_privacy_parameter

__all__ = ["MAX_TAIL_WIDTH", "tail_width", "clamped_geometric_worst_risk", "count_minimax_lower_bound"]

#: Largest half-width ``D`` of the end windows (memory ``O(D)``); a smaller ``eps`` returns ``None``.
MAX_TAIL_WIDTH = 5_000_000


def tail_width(eps: float) -> int:
    """``D``: the smallest width with ``q^D`` below the smallest positive double (``q = exp(-eps)``), at least 1."""
    eps = check_privacy_parameter(eps, "eps")
    return max(1, math.ceil(746.0 / eps))


def _noise(n: int, eps: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``t = -D..D``, ``p(t)`` (the two-sided geometric law of scale ``1 / eps``, untruncated) and ``D``; ``None``
    when the ends of ``{0..n}`` are closer than ``2 D`` or ``D`` exceeds :data:`MAX_TAIL_WIDTH`."""
    n = check_int("n", n, minimum=1, maximum=10**12)
    width = tail_width(eps)
    if width > MAX_TAIL_WIDTH or n < 2 * width:
        return None
    t = np.arange(-width, width + 1, dtype=float)
    # (1 - q) / (1 + q) = tanh(eps / 2) with q = exp(-eps), accurate for small eps
    return t, math.tanh(eps / 2.0) * np.exp(-eps * np.abs(t)), width


def clamped_geometric_worst_risk(n: int, eps: float) -> float | None:
    """Exact largest ``E[(clamp(c + G, 0, n) - c)^2]`` over ``c = 0..n``, in counts squared.

    Parameters
    ----------
    n : int
        Number of records, ``>= 1``.
    eps : float
        Privacy parameter, in ``[1e-9, 20]``.

    Returns
    -------
    float or None
        The worst risk; ``None`` when ``n < 2 D`` (:func:`tail_width`) or ``D`` exceeds :data:`MAX_TAIL_WIDTH`
        (then the ends interact and the ``O(n)`` computation of :mod:`dpbayes.choosing.candidates` applies).
    """
    noise = _noise(n, eps)
    if noise is None:
        return None
    t, p, _ = noise
    pos = t > 0
    # h(a) for a >= D: the clipped tail has underflowed, h is sum t^2 p(t) over t >= 1
    h_far = float(np.sum(t[pos] ** 2 * p[pos]))
    # c within D of an end: h(c) + h(n - c) <= h(D) + h_far; every c farther gives 2 h_far, the largest
    return 2.0 * h_far


def count_minimax_lower_bound(n: int, eps: float) -> float | None:
    """A lower bound on ``max_c E[(T(z) - c)^2]`` for every estimator ``T`` of the count from the clamped release.

    Parameters
    ----------
    n : int
        Number of records, ``>= 1``.
    eps : float
        Privacy parameter, in ``[1e-9, 20]``.

    Returns
    -------
    float or None
        The bound, in counts squared (module docstring); ``None`` under the conditions of
        :func:`clamped_geometric_worst_risk`.
    """
    noise = _noise(n, eps)
    if noise is None:
        return None
    t, p, width = noise
    # the middle terms: the whole window t = -D..D, whose mean is 0 by symmetry
    middle = float(np.sum(t**2 * p))
    # the edge terms at the low end: y = -D..D-1 sees t = c - y in [-y, D]; suffix sums over t from -y to D
    # (the high end is the mirror image)
    s0 = np.cumsum(p[::-1])[::-1]
    s1 = np.cumsum((t * p)[::-1])[::-1]
    s2 = np.cumsum((t**2 * p)[::-1])[::-1]
    start = np.arange(1, 2 * width + 1)  # index of t = -y for y = D-1 .. -D, i.e. t = -D+1 .. D
    seen = s0[start] > 0.0  # far out, p(t) has underflowed: those y add nothing (a smaller, still valid bound)
    mean = np.divide(s1[start], s0[start], out=np.zeros(start.size), where=seen)
    # min over m of sum p(t) (t - m)^2 = s2 - s0 mean^2 (>= 0 up to rounding)
    edge = np.maximum(s2[start] - s0[start] * mean**2, 0.0)
    total = (n - 2 * width + 1) * middle + 2.0 * float(np.sum(edge))
    return total / (n + 1)
