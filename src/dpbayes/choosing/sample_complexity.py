"""Sample complexity of private Bayes estimators of a Bernoulli parameter (beyond the UBaPP paper).

The slides of Lakshminarayanan & Rojas ("A Unified Approach to Differentially Private Bayes Point
Estimation", IFAC WC 2023, slide "Plots (MSE v.s. K)") claim a "high gain in sample complexity" for
UBaPP at eps = 0.001 without a number. Here: the smallest number of trials K at which an
estimator's exact Bayes MSE falls to a given fraction of the prior variance.

UBaPP is taken in its continuous-theta limit (truncated geometric mechanism on the count, then the
posterior mean given the noisy count; :func:`dpbayes.ubapp.optimal.ubapp_exact` with ``theta_grid=None``),
computed here in ``O(K)`` instead of ``O(K^2)`` so that K of several ten thousands is cheap.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import signal, stats

from dpbayes.core.validation import check_int, check_positive

__all__ = ["ubapp_continuous_mse", "laplace_remap_mse", "smallest_K"]


def _two_sided_filter(v: np.ndarray, a: float) -> np.ndarray:
    """``u_z = sum_y a^{|z - y|} v_y`` by a causal and an anti-causal first-order recursion."""
    fwd = signal.lfilter([1.0], [1.0, -a], v)
    bwd = signal.lfilter([1.0], [1.0, -a], v[::-1])[::-1]
    return fwd + bwd - v


def ubapp_continuous_mse(K: int, eps: float, a: float = 1.0, b: float = 1.0) -> float:
    """Bayes MSE of UBaPP in the continuous-theta limit, Beta(a, b) prior, in ``O(K)`` operations.

    Same quantity as ``ubapp_exact(K, eps, beta_prior=(a, b)).risk``: the count ``y`` is released
    through the truncated geometric mechanism ``G[z, y] = c_z e^{-eps |z - y|}`` (``c_z = (1 - e^{-eps})/(1 + e^{-eps})``
    inside, ``1/(1 + e^{-eps})`` at ``z = 0, K``) and the estimate is ``m_z = E[theta | z]``. With
    ``p_z = sum_y G[z, y] Pr(y)`` and ``p_z m_z = sum_y G[z, y] Pr(y) E[theta | y]`` (each a two-sided
    exponential filter of a vector), ``MSE = E[theta^2] - sum_z p_z m_z^2``.
    """
    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    a, b = check_positive("a", a), check_positive("b", b)
    y = np.arange(K + 1)
    p_y = stats.betabinom.pmf(y, K, a, b)
    m_y = (y + a) / (K + a + b)
    r = float(np.exp(-eps))
    c = np.full(K + 1, -np.expm1(-eps) / (1.0 + r))
    c[0] = c[-1] = 1.0 / (1.0 + r)
    p_z = c * _two_sided_filter(p_y, r)
    pm_z = c * _two_sided_filter(p_y * m_y, r)
    second_moment = a * (a + 1.0) / ((a + b) * (a + b + 1.0))
    return float(second_moment - np.sum(pm_z**2 / p_z))


def laplace_remap_mse(K: int, eps: float, a: float = 1.0, b: float = 1.0) -> float:
    """Bayes MSE of the fair baseline, Laplace count + Bayes remap, Beta(a, b) prior, in ``O(K max(1, eps))``.

    Same quantity as :func:`dpbayes.ubapp.lbapp.laplace_count_remap_mse` (whose quadrature costs ``O(K^2)``), from chapter 5's
    exact conditional moments (:func:`dpbayes.choosing.candidates.candidate_moments`, candidate ``"laplace-bayes"``,
    estimand ``"theta"``; clamping the noisy count to ``[0, K]`` first changes nothing) averaged over the prior; eps in ``[1e-9, 20]``
    (:func:`dpbayes.choosing.candidates.bayes_risk`). ``K <= 100000``.
    """
    from dpbayes.choosing.candidates import bayes_risk, candidate_moments

    K = check_int("K", K, minimum=1, maximum=100000)
    eps = check_positive("eps", eps)
    a, b = check_positive("a", a), check_positive("b", b)
    bias, msd = candidate_moments("laplace-bayes", K, eps, prior=(a, b), estimand="theta")
    return bayes_risk(bias, msd, prior=(a, b), estimand="theta")


def smallest_K(mse: Callable[[int], float], target: float, K_max: int, *, exhaustive: bool = False, window: int = 50) -> int | None:
    """Smallest integer ``K`` in ``[1, K_max]`` with ``mse(K) <= target``.

    ``exhaustive=True`` evaluates every K from 1 upwards (no assumption; cost ``K*`` evaluations).
    ``exhaustive=False`` (default) assumes ``mse`` is non-increasing in K: it doubles K until the
    target is reached and bisects, ``O(log K_max)`` evaluations; it then checks the assumption where
    it matters, requiring ``mse(K) > target`` for each of the ``window`` values of K below the answer
    (a ``RuntimeError`` otherwise). The tests compare both modes on full scans. Returns ``None`` if
    the target is not reached by ``K_max``.
    """
    target = check_positive("target", target)
    K_max = check_int("K_max", K_max, minimum=1)
    window = check_int("window", window, minimum=0)
    if exhaustive:
        for K in range(1, K_max + 1):
            if mse(K) <= target:
                return K
        return None
    if mse(1) <= target:
        return 1
    lo, hi = 1, 2  # mse(lo) > target
    while mse(min(hi, K_max)) > target:
        if hi >= K_max:
            return None
        lo, hi = hi, 2 * hi
    hi = min(hi, K_max)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mse(mid) <= target:
            hi = mid
        else:
            lo = mid
    for K in range(max(1, hi - window), hi):
        if mse(K) <= target:
            raise RuntimeError(f"mse is not non-increasing near K = {hi}: mse({K}) <= target; use exhaustive=True")
    return hi
