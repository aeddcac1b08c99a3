"""A fair two-stage baseline whose stage 2 allows for the pilot's own uncertainty (chapter 3, beyond the paper).

Beside the fixed intervals at the truth, the two-stage design ``m +- 2 c`` and its widened version
``m +- (2 c + z s_m)``, simulated on the study's replicates with the exact posterior and per-pilot
Cramer-Rao bounds. Re-exported by :mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbayes.smc import mcmc, samplers as smc, truncation
from dpbayes.core.executors import map_tasks
from dpbayes.smc.designs import _pilot_design_draws, fixed_interval_fisher
from dpbayes.core.validation import check_int, check_positive

__all__ = ["FAIR_DESIGNS", "FairReplicate", "fair_baseline_replicate", "fair_baseline_study"]


#: Designs of :func:`~dpbayes.smc.fair_baseline.fair_baseline_replicate`: the two best fixed intervals at the truth (``mu +- k sigma``,
#: ``k`` = 1, 2), the two-stage design ``m +- 2 c`` that ignores the pilot's uncertainty, and the fair one
#: ``m +- (2 c + z s_m)`` that widens by ``z`` pilot posterior standard deviations of ``mu``.
FAIR_DESIGNS = ("fixed-k1", "fixed-k2", "twostage-k2", "twostage-k2-wide")


@dataclass(frozen=True)
class FairReplicate:
    """Exact posterior means and per-pilot Cramer-Rao bounds of :data:`~dpbayes.smc.fair_baseline.FAIR_DESIGNS` on one replicate."""

    eps_index: int
    run: int
    #: design -> exact posterior means ``(mu, sigma)``
    estimates: dict[str, tuple[float, float]]
    #: design -> Cramer-Rao sd bounds ``(mu, sigma)`` of the releases this replicate made, at the truth
    cr: dict[str, tuple[float, float]]
    #: the pilot's posterior mean and sd of ``mu`` and posterior mean of ``sigma``: ``(m, s_m, c)``
    pilot: tuple[float, float, float]


def fair_baseline_replicate(
    n: int,
    mu: float,
    sigma: float,
    eps: float,
    eps_index: int,
    run: int,
    seed: int = 1,
    *,
    k: float = 2.0,
    z: float = 2.0,
    wide_halfwidth: float = 10.0,
    pilot_fraction: float = 0.1,
    n_grid: int = 17,
) -> FairReplicate:
    """The fair two-stage design beside the fixed intervals at the truth, on replicate ``(eps_index, run)``.

    Same individuals and standard Laplace draws as :func:`dpbayes.smc.study.run_replicate` and :func:`dpbayes.smc.designs.baseline_replicate`
    (``SeedSequence([seed, eps_index, run])``). The pilot (the first ``round(pilot_fraction n)``
    individuals) releases through ``mu +- wide_halfwidth sigma``; its exact posterior gives the mean ``m`` and
    sd ``s_m`` of ``mu`` and the mean ``c`` of ``sigma``. Stage 2 asks everyone else for ``m +- k c``
    (``"twostage-k2"``, with ``k = 2`` by default) or ``m +- (k c + z s_m)`` (``"twostage-k2-wide"``): the
    second allows for the pilot's own uncertainty about where the population is. Both are post-processing of
    released values, so each individual's release stays eps-DP. The Cramer-Rao bounds are computed per
    replicate (per pilot) from the exact Fisher information of the releases actually made.
    """

    k = float(check_positive("k", k))
    z = float(check_positive("z", z))
    sigma, eps, n_pilot, x, noise = _pilot_design_draws(n, mu, sigma, eps, wide_halfwidth, pilot_fraction, seed, eps_index, run)
    estimates: dict[str, tuple[float, float]] = {}
    cr: dict[str, tuple[float, float]] = {}

    def record(name: str, lower: NDArray[np.float64], upper: NDArray[np.float64], fisher: NDArray[np.float64]) -> None:
        y = np.clip(x, lower, upper) + (upper - lower) * noise / eps  # as smc.fixed_interval_releases
        q = mcmc.quadrature_posterior(y, lower, upper, eps, n_grid=n_grid)
        estimates[name] = (q.mean_mu, q.mean_sigma)
        bound = smc.cramer_rao_sd(fisher)
        cr[name] = (float(bound[0]), float(bound[1]))

    for name, kk in (("fixed-k1", 1.0), ("fixed-k2", 2.0)):
        record(name, np.full(n, mu - kk * sigma), np.full(n, mu + kk * sigma), fixed_interval_fisher(n, mu, sigma, kk, eps))
    wide = (mu - wide_halfwidth * sigma, mu + wide_halfwidth * sigma)
    y_p = np.clip(x[:n_pilot], *wide) + (wide[1] - wide[0]) * noise[:n_pilot] / eps
    q_p = mcmc.quadrature_posterior(y_p, *wide, eps, n_grid=n_grid)
    m, s_m, c = q_p.mean_mu, q_p.sd_mu, q_p.mean_sigma
    for name, half in (("twostage-k2", k * c), ("twostage-k2-wide", k * c + z * s_m)):
        lower = np.concatenate([np.full(n_pilot, wide[0]), np.full(n - n_pilot, m - half)])
        upper = np.concatenate([np.full(n_pilot, wide[1]), np.full(n - n_pilot, m + half)])
        F = truncation.fisher_information_normal(mu, sigma, np.array([wide[0], m - half]), np.array([wide[1], m + half]), eps)
        record(name, lower, upper, n_pilot * F[0] + (n - n_pilot) * F[1])
    return FairReplicate(eps_index, run, estimates, cr, (float(m), float(s_m), float(c)))


def fair_baseline_study(
    n: int,
    mu: float,
    sigma: float,
    eps_grid: Sequence[float],
    n_runs: int,
    seed: int = 1,
    *,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    **kwargs: Any,
) -> list[FairReplicate]:
    """:func:`~dpbayes.smc.fair_baseline.fair_baseline_replicate` for every ``(eps, run)``, ordered by eps index then run (self-seeded)."""
    eps_list = [float(check_positive("eps_grid", e)) for e in eps_grid]
    if not eps_list:
        raise ValueError("eps_grid must be non-empty")
    check_int("n_runs", n_runs, minimum=1)
    check_int("n_jobs", n_jobs, minimum=1)
    tasks = [(n, mu, sigma, e, i, run, seed) for i, e in enumerate(eps_list) for run in range(n_runs)]

    if kwargs:
        return map_tasks(_fair_task, [(t, kwargs) for t in tasks], n_jobs=n_jobs, progress=progress, label="fair-baseline")
    return map_tasks(fair_baseline_replicate, tasks, n_jobs=n_jobs, progress=progress, label="fair-baseline")


def _fair_task(task: tuple[Any, ...], kwargs: dict[str, Any]) -> FairReplicate:
    return fair_baseline_replicate(*task, **kwargs)
