"""A two-stage baseline that needs no truth: pilot placed from the public prior, settings tuned on prior draws.

The fair two-stage design of :mod:`dpbayes.smc.fair_baseline` places its pilot at ``mu +- 10 sigma`` of the *true*
``(mu, sigma)`` and fixes its settings; it is an oracle. Here the pilot interval is placed from the public prior
alone (``prior mean +- w`` prior standard deviations of ``mu``, as the adaptive SMC's first interval is placed
without data), and the settings (pilot fraction, ``w``, the stage-2 half-width ``k c + z s_m``) are chosen by
simulation on populations drawn from the prior (preposterior analysis: the Bayes risk of ``mu`` in units of the
drawn ``sigma``), on random streams no verdict replicate uses. Neither function takes the true ``(mu, sigma)``
of the population it is judged on. Each individual releases once through an interval that depends on public
values and earlier releases only, so every release stays eps-DP (paper eq. (10), Proposition 1). Beyond the paper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.executors import map_tasks
from dpbayes.core.validation import check_int, check_positive, check_probability
from dpbayes.smc.mcmc import quadrature_posterior
from dpbayes.smc.replicate_streams import replicate_streams
from dpbayes.smc.samplers import NormalInvGammaPrior

__all__ = ["DEFAULT_SETTINGS", "TwoStageSetting", "prior_pilot_interval", "truthfree_study", "truthfree_two_stage",
           "tune_two_stage"]


@dataclass(frozen=True)
class TwoStageSetting:
    """Settings of the truth-free two-stage design.

    ``pilot_fraction`` of the individuals release through ``prior mean +- pilot_width`` prior sds of ``mu``;
    the rest through ``m +- (k c + z s_m)``, with the pilot's exact posterior mean ``m`` and sd ``s_m`` of ``mu``
    and posterior mean ``c`` of ``sigma``.
    """

    pilot_fraction: float
    pilot_width: float
    k: float
    z: float

    def __post_init__(self) -> None:
        check_probability("pilot_fraction", self.pilot_fraction, open_interval=True)
        check_positive("pilot_width", self.pilot_width)
        check_positive("k", self.k)
        if not np.isfinite(self.z) or self.z < 0:
            raise ValueError(f"z must be a finite number >= 0, got {self.z!r}")


#: The settings :func:`~dpbayes.smc.truthfree_baseline.tune_two_stage` chooses among by default.
DEFAULT_SETTINGS = tuple(TwoStageSetting(f, w, k, z) for f in (0.1, 0.25, 0.5) for w in (0.5, 2.0)
                         for k in (1.0, 2.0) for z in (1.0, 3.0))


def prior_pilot_interval(prior: NormalInvGammaPrior, pilot_width: float) -> tuple[float, float]:
    """The pilot's interval from the public prior alone: ``mu_mean +- pilot_width sqrt(mu_var)``."""
    w = float(check_positive("pilot_width", pilot_width)) * float(np.sqrt(prior.mu_var))
    return prior.mu_mean - w, prior.mu_mean + w


def truthfree_two_stage(
    x: ArrayLike,
    noise: ArrayLike,
    eps: float,
    settings: Sequence[TwoStageSetting],
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    *,
    n_grid: int = 17,
) -> NDArray[np.float64]:
    """Exact posterior means of ``(mu, sigma)`` of the two-stage design under each setting, on one population.

    The releases are ``clamp(x_t, l_t, r_t) + (r_t - l_t) noise_t / eps`` (paper eq. (10); ``noise`` standard
    Laplace draws), the pilot's interval from :func:`~dpbayes.smc.truthfree_baseline.prior_pilot_interval`, stage 2
    from the pilot's exact posterior (:func:`dpbayes.smc.mcmc.quadrature_posterior`; settings sharing a pilot share
    its posterior). Nothing here reads the population's true parameters: ``x`` and ``noise`` only make the
    releases.

    Parameters
    ----------
    x, noise : array_like, shape (n,)
        The individuals' values and their standard Laplace draws, ``n >= 2``.
    eps : float
        Privacy parameter of every release.
    settings : sequence of TwoStageSetting
        The designs to run.
    prior : NormalInvGammaPrior
        The analyst's public prior (paper Section 4.1 by default).
    n_grid : int
        Quadrature points per axis.

    Returns
    -------
    ndarray, shape (len(settings), 2)
        Posterior means ``(mu, sigma)`` per setting.
    """
    xx = np.asarray(x, dtype=float)
    nn = np.asarray(noise, dtype=float)
    if xx.ndim != 1 or xx.shape != nn.shape or xx.size < 2:
        raise ValueError(f"x and noise must be 1-d of the same length >= 2, got {xx.shape} and {nn.shape}")
    eps = float(check_positive("eps", eps))
    n = xx.size
    pilots: dict[tuple[int, float], tuple[float, float, float]] = {}
    out = np.empty((len(settings), 2))
    for i, s in enumerate(settings):
        n_pilot = min(max(int(round(s.pilot_fraction * n)), 1), n - 1)
        lo_p, hi_p = prior_pilot_interval(prior, s.pilot_width)
        key = (n_pilot, s.pilot_width)
        if key not in pilots:
            y_p = np.clip(xx[:n_pilot], lo_p, hi_p) + (hi_p - lo_p) * nn[:n_pilot] / eps
            q = quadrature_posterior(y_p, lo_p, hi_p, eps, prior, n_grid=n_grid)
            pilots[key] = (q.mean_mu, q.sd_mu, q.mean_sigma)
        m, s_m, c = pilots[key]
        half = s.k * c + s.z * s_m
        lower = np.concatenate([np.full(n_pilot, lo_p), np.full(n - n_pilot, m - half)])
        upper = np.concatenate([np.full(n_pilot, hi_p), np.full(n - n_pilot, m + half)])
        y = np.clip(xx, lower, upper) + (upper - lower) * nn / eps
        q = quadrature_posterior(y, lower, upper, eps, prior, n_grid=n_grid)
        out[i] = (q.mean_mu, q.mean_sigma)
    return out


def _tune_task(n: int, eps: float, seed: int, eps_index: int, j: int, settings: tuple[TwoStageSetting, ...],
               prior: NormalInvGammaPrior, n_grid: int) -> NDArray[np.float64]:
    # one population drawn from the prior; squared errors of mu in units of its sigma, per setting
    rng = np.random.default_rng(np.random.SeedSequence([seed, eps_index, j, 7919]))  # 7919: a stream of its own
    mu_j, s2_j = prior.sample(1, rng)
    sig_j = float(np.sqrt(s2_j[0]))
    x = mu_j[0] + sig_j * rng.standard_normal(n)
    noise = rng.laplace(size=n)
    est = truthfree_two_stage(x, noise, eps, settings, prior, n_grid=n_grid)
    return np.asarray(((est[:, 0] - mu_j[0]) / sig_j) ** 2)


def tune_two_stage(
    n: int,
    eps: float,
    n_tune: int,
    seed: int,
    eps_index: int = 0,
    settings: Sequence[TwoStageSetting] = DEFAULT_SETTINGS,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    *,
    n_grid: int = 17,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[TwoStageSetting, NDArray[np.float64]]:
    """The setting of smallest simulated Bayes risk of ``mu`` on ``n_tune`` populations drawn from the prior.

    Population ``j`` draws ``(mu_j, sigma_j)`` from ``prior``, ``n`` individuals and their Laplace draws
    (``SeedSequence([seed, eps_index, j, 7919])``, a stream that no replicate of the study uses); each setting's
    score is the mean of ``((mu_hat - mu_j) / sigma_j)^2``. Ties go to the first setting. No argument is the
    population on which the chosen design is judged.

    Returns
    -------
    tuple
        The chosen setting and the scores, shape (len(settings),).
    """
    n = check_int("n", n, minimum=2)
    eps = float(check_positive("eps", eps))
    n_tune = check_int("n_tune", n_tune, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    eps_index = check_int("eps_index", eps_index, minimum=0)
    sets = tuple(settings)
    if not sets:
        raise ValueError("settings must be non-empty")
    tasks = [(n, eps, seed, eps_index, j, sets, prior, n_grid) for j in range(n_tune)]
    errs = np.array(map_tasks(_tune_task, tasks, n_jobs=n_jobs, progress=progress, label="two-stage-tuning"))
    scores = errs.mean(axis=0)
    return sets[int(np.argmin(scores))], scores


def _study_task(n: int, population_mu: float, population_sigma: float, eps: float, eps_index: int, run: int, seed: int,
                setting: TwoStageSetting, n_grid: int) -> NDArray[np.float64]:
    streams = replicate_streams(seed, eps_index, run)
    x = population_mu + population_sigma * streams["data"].standard_normal(n)
    noise = streams["noise"].laplace(size=n)
    return truthfree_two_stage(x, noise, eps, [setting], n_grid=n_grid)[0]


def truthfree_study(
    n: int,
    population_mu: float,
    population_sigma: float,
    eps_grid: Sequence[float],
    settings: Sequence[TwoStageSetting],
    n_runs: int,
    seed: int = 1,
    *,
    n_grid: int = 17,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> NDArray[np.float64]:
    """The truth-free design (one setting per eps) on the study's replicates: posterior means, shape (n_eps, n_runs, 2).

    ``population_mu`` and ``population_sigma`` only *simulate* the individuals of replicate ``(eps_index, run)``,
    the same individuals and Laplace draws as :func:`dpbayes.smc.study.run_replicate`
    (:func:`dpbayes.smc.replicate_streams.replicate_streams`), so the design is paired with SMC-adaptive; the
    design itself (:func:`~dpbayes.smc.truthfree_baseline.truthfree_two_stage`) sees only the releases.
    """
    eps_list = [float(check_positive("eps_grid", e)) for e in eps_grid]
    if not eps_list or len(settings) != len(eps_list):
        raise ValueError(f"eps_grid must be non-empty with one setting per eps, got {len(eps_list)} and {len(settings)}")
    n_runs = check_int("n_runs", n_runs, minimum=1)
    tasks = [(n, float(population_mu), float(check_positive("population_sigma", population_sigma)), e, i, run, seed,
              settings[i], n_grid) for i, e in enumerate(eps_list) for run in range(n_runs)]
    out = map_tasks(_study_task, tasks, n_jobs=n_jobs, progress=progress, label="truthfree-two-stage")
    return np.asarray(out, dtype=float).reshape(len(eps_list), n_runs, 2)
