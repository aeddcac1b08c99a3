"""Chapter 1 at a fixed true theta: the frequentist risk of UBaPP and its baselines (beyond the UBaPP paper).

The UBaPP paper (Lakshminarayanan & Rojas, IFAC WC 2023) optimises the *Bayes* risk, the mean squared
error averaged over the prior of theta. A reader who publishes one data set's estimate also needs the
mean squared error at each fixed theta,

``R(theta) = E[(est - theta)^2 | theta]``, the count ``y ~ Binomial(K, theta)``,

whose prior average is the Bayes risk. Here for the chapter's four estimators, with a ``Beta(a, b)``
prior (uniform by default) used by their posterior means:

* ``"ubapp"``: UBaPP's continuous-theta limit, the truncated geometric mechanism on ``y`` then
  ``E[theta | z]`` (:func:`dpbayes.ubapp.optimal.ubapp_exact` with ``theta_grid=None``);
* ``"lbapp-clipped"``: LBaPP clipped to ``[0, 1]`` (:func:`dpbayes.ubapp.lbapp.clipped_lbapp_estimate`);
* ``"laplace-remap"``: Laplace noise on the count then the posterior mean of theta given it
  (:func:`dpbayes.ubapp.lbapp.laplace_count_remap_mse`; clamping the noisy count to ``[0, K]`` first changes
  nothing, since the posterior given ``y + L <= 0`` equals the posterior given any value below 0);
* ``"no-privacy"``: the posterior mean ``E[theta | y]``.

The risks are exact and reuse chapter 5's registry (:data:`dpbayes.choosing.candidates.CANDIDATES`:
``"geometric-bayes-theta"``, ``"lbapp-clipped"``, ``"laplace-bayes"``, ``"no-privacy"`` with
``estimand="theta"``), whose conditional moments given the count are combined with the binomial law
by :func:`dpbayes.choosing.candidates.theta_risk`; the tests check that their prior averages equal
chapter 1's exact Bayes MSEs. :func:`ubapp_grid_theta_risk` gives the same curve for UBaPP on a grid
(the optimum of LP (11), from the exact solver). Crossings of two curves are located by Brent's
method after a scan, the worst case over theta by bounded optimisation
(:func:`dpbayes.choosing.candidates.worst_theta_risk`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from dpbayes.choosing.candidates import candidate_moments, theta_risk, worst_theta_risk
from dpbayes.core.extremes import refine_scanned_extreme
from dpbayes.core.validation import check_choice, check_int, check_positive

__all__ = ["ESTIMATORS", "risk_function", "theta_risk_curve", "ubapp_grid_theta_risk", "crossing_thetas", "worst_case"]

#: Chapter 1's estimators and the names of their candidates in :data:`dpbayes.choosing.candidates.CANDIDATES`.
ESTIMATORS: dict[str, str] = {
    "ubapp": "geometric-bayes-theta",
    "lbapp-clipped": "lbapp-clipped",
    "laplace-remap": "laplace-bayes",
    "no-privacy": "no-privacy",
}

FloatArray = NDArray[np.float64]


def _moments(estimator: str, K: int, eps: float, beta_prior: tuple[float, float]) -> tuple[FloatArray, FloatArray]:
    estimator = check_choice("estimator", estimator, tuple(ESTIMATORS))
    K = check_int("K", K, minimum=1, maximum=100000)
    eps = float(check_positive("eps", eps))
    a, b = (float(check_positive(f"beta_prior[{i}]", v)) for i, v in enumerate(beta_prior))
    return candidate_moments(ESTIMATORS[estimator], K, eps, prior=(a, b), estimand="theta")


def risk_function(estimator: str, K: int, eps: float, beta_prior: tuple[float, float] = (1.0, 1.0)) -> Callable[[ArrayLike], FloatArray]:
    """``theta -> R(theta)``, the exact mean squared error at fixed theta of one of :data:`ESTIMATORS`.

    Parameters
    ----------
    estimator : str
        A key of :data:`ESTIMATORS`.
    K : int
        Number of Bernoulli trials, ``1 <= K <= 100000``.
    eps : float
        Privacy parameter, ``> 0`` (``[1e-9, 20]``, the range of chapter 5's registry).
    beta_prior : (a, b)
        The prior the estimators' posterior means use, ``a, b > 0``.

    Returns
    -------
    callable
        Maps an array of theta in ``[0, 1]`` to the risks there (same shape).
    """
    bias, msd = _moments(estimator, K, eps, beta_prior)

    def risk(theta: ArrayLike) -> FloatArray:
        th = np.asarray(theta, dtype=float)
        return np.asarray(theta_risk(bias, msd, th.ravel()), dtype=float).reshape(th.shape)

    return risk


def theta_risk_curve(estimator: str, K: int, eps: float, theta: ArrayLike, beta_prior: tuple[float, float] = (1.0, 1.0)) -> FloatArray:
    """``R(theta)`` at each ``theta`` in ``[0, 1]`` (see :func:`risk_function`)."""
    return risk_function(estimator, K, eps, beta_prior)(theta)


def ubapp_grid_theta_risk(K: int, eps: float, theta_grid: ArrayLike, theta: ArrayLike) -> FloatArray:
    """``R(theta)`` of UBaPP on a grid: the optimum of LP (11), uniform prior on ``theta_grid``, squared loss.

    The exact solver (:func:`dpbayes.ubapp.optimal.ubapp_exact`) gives the truncated geometric mechanism ``G[z, y]``
    and a remap ``z -> t_z`` onto the grid; then ``R(theta) = sum_y Binom(y; K, theta) sum_z G[z, y] (t_z - theta)^2``,
    an exact sum of ``(K + 1)^2`` terms per theta.
    """
    from dpbayes.ubapp.optimal import truncated_geometric_logmatrix, ubapp_exact

    K = check_int("K", K, minimum=1, maximum=5000)
    sol = ubapp_exact(K, float(check_positive("eps", eps)), np.asarray(theta_grid, dtype=float))
    t = sol.estimates[np.asarray(sol.info["remap"], dtype=int)]  # estimate of each noisy count z
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    if np.any(~np.isfinite(th)) or np.any(th < 0.0) or np.any(th > 1.0):
        raise ValueError("theta must lie in [0, 1]")
    G = np.exp(truncated_geometric_logmatrix(K, sol.eps))  # G[z, y]
    W = stats.binom.pmf(np.arange(K + 1)[None, :], K, th.ravel()[:, None])  # (n_theta, K + 1)
    sq = (t[:, None] - th.ravel()[None, :]) ** 2  # (K + 1 outputs z, n_theta)
    out = np.einsum("ny,zy,zn->n", W, G, sq)
    return out.reshape(np.shape(theta)) if np.ndim(theta) else out


def crossing_thetas(f: Callable[[ArrayLike], FloatArray], g: Callable[[ArrayLike], FloatArray], n_scan: int = 401,
                    interval: tuple[float, float] = (0.0, 1.0), xtol: float = 1e-12) -> FloatArray:
    """The thetas in ``interval`` where two risk curves cross: a scan for sign changes of ``f - g``, then Brent's method.

    Parameters
    ----------
    f, g : callable
        Risk functions (:func:`risk_function`).
    n_scan : int
        Equally spaced thetas of the scan, ``>= 3``; crossings closer than the scan's spacing may be missed.
    interval : (low, high)
        Sub-interval of ``[0, 1]``, ``low < high``.
    xtol : float
        Brent's absolute tolerance, ``> 0``.
    """
    n_scan = check_int("n_scan", n_scan, minimum=3)
    lo, hi = (float(v) for v in interval)
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(f"interval must satisfy 0 <= low < high <= 1, got {interval!r}")
    xtol = float(check_positive("xtol", xtol))
    grid = np.linspace(lo, hi, n_scan)
    d = np.asarray(f(grid)) - np.asarray(g(grid))

    def diff(t: float) -> float:
        return float(np.asarray(f(np.array([t])))[0] - np.asarray(g(np.array([t])))[0])

    roots = [float(grid[i]) for i in np.nonzero(d == 0.0)[0]]
    for i in np.nonzero(d[:-1] * d[1:] < 0.0)[0]:
        roots.append(float(optimize.brentq(diff, grid[i], grid[i + 1], xtol=xtol)))
    return np.array(sorted(roots))


def worst_case(f_or_estimator: Any, K: int | None = None, eps: float | None = None,
               beta_prior: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
    """``(theta*, R(theta*))``, the largest risk over ``theta`` in ``[0, 1]``, located by optimisation.

    ``f_or_estimator`` is a key of :data:`ESTIMATORS` (then ``K`` and ``eps`` are required; the search is
    :func:`dpbayes.choosing.candidates.worst_theta_risk`: a 201-point grid, then bounded Brent search) or a risk
    function (the same search on it).
    """
    if isinstance(f_or_estimator, str):
        if K is None or eps is None:
            raise ValueError("K and eps are required when an estimator name is given")
        bias, msd = _moments(f_or_estimator, K, eps, beta_prior)
        return worst_theta_risk(bias, msd)
    f = f_or_estimator
    grid = np.linspace(0.0, 1.0, 201)
    best_t, best_v, _ = refine_scanned_extreme(lambda t: float(np.asarray(f(np.array([t])))[0]), grid,
                                               np.asarray(f(grid), dtype=float), maximize=True, xatol=1e-9)
    return best_t, best_v
