"""Distributional validation of a sampler's cloud against the exact grid posterior (chapter 3, beyond the paper).

:func:`~dpbayes.smc.sampler_checks.cloud_vs_exact` compares a (weighted) posterior sample of ``(mu, sigma)`` with the exact posterior
of the same releases: Wasserstein-1 distances of the marginals of ``mu`` and ``log sigma`` against those of
as many independent exact draws, and the ratio of standard deviations. Re-exported by
:mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpbayes.smc import mcmc
from dpbayes.smc.summaries import _finite_1d, _normalised_weights
from dpbayes.core.validation import check_int, check_positive

__all__ = ["CloudCheck", "cloud_vs_exact"]


@dataclass(frozen=True)
class CloudCheck:
    """A weighted posterior sample against the exact posterior of the same releases (see :func:`~dpbayes.smc.sampler_checks.cloud_vs_exact`)."""

    #: Wasserstein-1 distance of the cloud's marginal from the exact one, for ``mu`` and for ``log sigma``
    w1_mu: float
    w1_log_sigma: float
    #: the same distance for ``n_eff`` independent draws from the exact posterior (median over repetitions)
    w1_ref_mu: float
    w1_ref_log_sigma: float
    #: cloud standard deviation over the exact one, for ``mu`` and ``log sigma`` (below 1: too narrow)
    sd_ratio_mu: float
    sd_ratio_log_sigma: float
    #: effective sample size of the cloud (``1 / sum w^2``), the size of the reference samples
    n_eff: int
    #: largest exact posterior mass in an outer row or column of the grid (the grid's truncation error)
    edge_mass: float


def _w_sd(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    mean = weights @ values
    return float(np.sqrt(weights @ (values - mean) ** 2))


def cloud_vs_exact(
    mu: ArrayLike,
    sigma: ArrayLike,
    weights: ArrayLike | None,
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    rng: np.random.Generator,
    *,
    n_grid: int = 241,
    half_width: float = 8.0,
    n_ref: int = 20,
    posterior: mcmc.QuadraturePosterior | None = None,
) -> CloudCheck:
    """Compare a sampler's (weighted) cloud of ``(mu, sigma)`` with the exact posterior of its releases.

    The exact posterior comes from :func:`dpbayes.smc.mcmc.grid_posterior` on an ``n_grid x n_grid`` grid in
    ``mu`` and ``log sigma``, ``half_width`` posterior standard deviations either side of the posterior mean
    (located first by :func:`dpbayes.smc.mcmc.quadrature_posterior`); marginals are compared on the scales with
    finite moments, ``mu`` and ``log sigma`` (with the paper's inverse-gamma prior the posterior of ``sigma``
    itself can have an infinite variance). The reference distance is that of ``n_eff`` independent draws from
    the exact (gridded) marginal, the median over ``n_ref`` repetitions: a cloud whose distance is many times
    the reference is not a sample of the posterior of that size.

    ``posterior``: the :func:`dpbayes.smc.mcmc.quadrature_posterior` of these same releases (default
    settings), when the caller has computed it already; it is then not computed a second time.
    """

    m = _finite_1d("mu", mu)
    s = _finite_1d("sigma", sigma)
    if s.shape != m.shape or np.any(s <= 0):
        raise ValueError("sigma must hold one positive value per value of mu")
    w = _normalised_weights(weights, m.size, "particle")
    eps = float(check_positive("eps", eps))
    n_grid = check_int("n_grid", n_grid, minimum=21)
    n_ref = check_int("n_ref", n_ref, minimum=1)
    half_width = float(check_positive("half_width", half_width))
    q = mcmc.quadrature_posterior(y, lower, upper, eps) if posterior is None else posterior
    log_sd = max(float(np.sqrt(np.log1p((q.sd_sigma / q.mean_sigma) ** 2))), 1e-3)  # log-normal approximation
    mu_grid = np.linspace(q.mean_mu - half_width * q.sd_mu, q.mean_mu + half_width * q.sd_mu, n_grid)
    ls_grid = np.linspace(np.log(q.mean_sigma) - half_width * log_sd, np.log(q.mean_sigma) + half_width * log_sd, n_grid)
    g = mcmc.grid_posterior(y, lower, upper, eps, mu_grid, np.exp(ls_grid))
    pm, ps = g.prob.sum(axis=1), g.prob.sum(axis=0)
    edge = float(max(pm[0], pm[-1], ps[0], ps[-1]))
    ls = np.log(s)
    n_eff = int(round(1.0 / np.sum(w**2)))

    def ref(grid: NDArray[np.float64], p: NDArray[np.float64]) -> float:
        return float(np.median([stats.wasserstein_distance(rng.choice(grid, size=n_eff, p=p), grid, v_weights=p)
                                for _ in range(n_ref)]))

    def sd_grid(grid: NDArray[np.float64], p: NDArray[np.float64]) -> float:
        return _w_sd(grid, p / p.sum())

    return CloudCheck(
        w1_mu=float(stats.wasserstein_distance(m, mu_grid, u_weights=w, v_weights=pm)),
        w1_log_sigma=float(stats.wasserstein_distance(ls, ls_grid, u_weights=w, v_weights=ps)),
        w1_ref_mu=ref(mu_grid, pm), w1_ref_log_sigma=ref(ls_grid, ps),
        sd_ratio_mu=_w_sd(m, w) / sd_grid(mu_grid, pm), sd_ratio_log_sigma=_w_sd(ls, w) / sd_grid(ls_grid, ps),
        n_eff=n_eff, edge_mass=edge)
