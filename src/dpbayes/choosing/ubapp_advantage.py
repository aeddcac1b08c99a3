"""UBaPP's advantage over the Laplace baselines (chapter 1, beyond the paper).

Source: B. Lakshminarayanan and C. R. Rojas, "A Unified Approach to Differentially Private Bayes
Point Estimation" (IFAC World Congress 2023), Section 5 (the comparison with LBaPP, Laplace noise on
the posterior mean). The relative advantage ``(MSE_baseline - MSE_UBaPP) / MSE_baseline`` of the
optimal estimator (:func:`dpbayes.ubapp.optimal.ubapp_exact`, continuous-theta limit) over the paper's LBaPP
or over the fair baseline, Laplace noise on the count followed by the posterior mean; both risks are
exact. Where it is largest is located by optimisation (:func:`dpbayes.core.extremes.refine_scanned_extreme`).
"""

from __future__ import annotations

import numpy as np

from dpbayes.ubapp.optimal import ubapp_exact
from dpbayes.core.validation import check_choice, check_int, check_positive

__all__ = ["BASELINES", "relative_advantage", "largest_advantage", "eps_advantage_below"]

#: Baselines of :func:`relative_advantage`: the paper's LBaPP and the fair baseline, Laplace count + Bayes remap.
BASELINES = ("lbapp", "laplace-remap")


def relative_advantage(K: int, eps: float, beta_prior: tuple[float, float] = (1.0, 1.0), baseline: str = "lbapp") -> float:
    """``(MSE_baseline - MSE_UBaPP) / MSE_baseline``, both exact, UBaPP in the continuous-theta limit.

    ``baseline="lbapp"``: the paper's LBaPP (:func:`dpbayes.ubapp.lbapp.lbapp_mse`); ``"laplace-remap"``: Laplace
    noise on the count then the posterior mean (:func:`dpbayes.choosing.sample_complexity.laplace_remap_mse`).
    """
    from dpbayes.ubapp.lbapp import lbapp_mse

    baseline = check_choice("baseline", baseline, BASELINES)
    a, b = beta_prior
    if baseline == "lbapp":
        lb = lbapp_mse(K, eps, a, b)
    else:
        from dpbayes.choosing.sample_complexity import laplace_remap_mse

        lb = laplace_remap_mse(K, eps, a, b)
    return (lb - ubapp_exact(K, eps, beta_prior=(a, b)).risk) / lb


def largest_advantage(
    K: int, baseline: str = "laplace-remap", beta_prior: tuple[float, float] = (1.0, 1.0),
    eps_range: tuple[float, float] = (1e-3, 20.0), n_scan: int = 41,
) -> tuple[float, float]:
    """``(eps*, advantage)``: the largest :func:`relative_advantage` over eps in ``eps_range``, located by optimisation.

    A scan of ``n_scan`` log-spaced values, then bounded Brent search in log eps between the neighbours of the
    largest scanned value (``xatol = 1e-6``).
    """
    from dpbayes.core.extremes import refine_scanned_extreme

    K = check_int("K", K, minimum=1)
    lo, hi = check_positive("eps_range", np.asarray(eps_range, dtype=float))
    if not lo < hi:
        raise ValueError(f"eps_range must be increasing, got {eps_range!r}")
    n_scan = check_int("n_scan", n_scan, minimum=3)

    def advantage(log_e: float) -> float:
        return relative_advantage(K, float(np.exp(log_e)), beta_prior, baseline)

    grid = np.log(np.geomspace(lo, hi, n_scan))
    log_eps, value, _ = refine_scanned_extreme(advantage, grid, np.array([advantage(g) for g in grid]), maximize=True,
                                               xatol=1e-6)
    return float(np.exp(log_eps)), value


def eps_advantage_below(
    K: int,
    level: float = 0.01,
    beta_prior: tuple[float, float] = (1.0, 1.0),
    eps_range: tuple[float, float] = (1e-4, 1e3),
    n_scan: int = 241,
    baseline: str = "lbapp",
) -> float:
    """Smallest eps beyond which UBaPP's relative advantage over ``baseline`` (see :data:`BASELINES`) stays below ``level``.

    Scans ``n_scan`` log-spaced values of eps in ``eps_range``, takes the last scanned value at which
    the advantage is still ``>= level`` and refines the crossing after it with Brent's method.
    Returns ``nan`` if the advantage is below ``level`` on the whole range, ``inf`` if it never
    falls below it.
    """
    from scipy.optimize import brentq

    K = check_int("K", K, minimum=1)
    level = float(check_positive("level", level))
    lo, hi = check_positive("eps_range", np.asarray(eps_range, dtype=float))
    if not lo < hi:
        raise ValueError(f"eps_range must be increasing, got {eps_range!r}")
    n_scan = check_int("n_scan", n_scan, minimum=3)
    grid = np.geomspace(lo, hi, n_scan)
    adv = np.array([relative_advantage(K, e, beta_prior, baseline) for e in grid])
    above = np.nonzero(adv >= level)[0]
    if above.size == 0:
        return float("nan")
    last = int(above[-1])
    if last == n_scan - 1:
        return float("inf")
    f = lambda log_e: relative_advantage(K, float(np.exp(log_e)), beta_prior, baseline) - level  # noqa: E731
    return float(np.exp(brentq(f, np.log(grid[last]), np.log(grid[last + 1]), xtol=1e-12)))
