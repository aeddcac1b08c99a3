"""Non-adaptive and two-stage designs of the truncation interval and their exact Fisher information (chapter 3).

Beyond the paper, whose study compares the adaptive interval with one fixed interval, ``mu +- 10 sigma``
centred at the *true* mean: the exact total Fisher information of fixed-interval designs and of a two-stage
design (a pilot fraction through a wide interval, then one fixed interval at the pilot's posterior mean; each
individual releases once with the same eps, and the second interval is post-processing of releases, so the
design is eps-DP per individual, paper Proposition 1), and the baseline designs simulated on the study's
replicates with the exact posterior (:func:`~dpbayes.smc.designs.baseline_replicate`, :func:`~dpbayes.smc.designs.baseline_study`). Fisher
informations are exact (:func:`dpbayes.smc.truncation.fisher_information_normal`). Re-exported by
:mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.smc import design_criteria, mcmc, samplers as smc, truncation
from dpbayes.core.executors import map_tasks
from dpbayes.smc.replicate_streams import replicate_streams
from dpbayes.smc.samplers import NormalInvGammaPrior
from dpbayes.smc.summaries import _finite_1d
from dpbayes.core.validation import check_int, check_interval, check_positive, check_probability

__all__ = ["fixed_interval_fisher", "design_fisher", "mirror_intervals", "two_stage_pilot", "two_stage_fisher", "BASELINE_DESIGNS", "BaselineReplicate", "baseline_replicate", "baseline_study"]


def fixed_interval_fisher(n: int, mu: float, sigma: float, halfwidth: float, eps: float) -> NDArray[np.float64]:
    """Total exact Fisher information of ``n`` releases through ``[mu - k sigma, mu + k sigma]``.

    ``n F^eps_{l,r}(mu, sigma)`` with ``k = halfwidth`` (paper eq. (6)); by Theorem 3 this is
    ``n F^eps_{-k,k}(0, 1) / sigma^2``. The interval is centred at the *true* mean: the most
    favourable fixed interval of that width (the paper's non-adaptive baseline has ``k = 10``).
    """
    check_int("n", n, minimum=1)
    sigma = check_positive("sigma", sigma)
    k = check_positive("halfwidth", halfwidth)
    return n * truncation.fisher_information_normal(mu, sigma, mu - k * sigma, mu + k * sigma, eps)


def design_fisher(lower: ArrayLike, upper: ArrayLike, mu: float, sigma: float, eps: float) -> NDArray[np.float64]:
    """Total exact Fisher information at ``(mu, sigma)`` of releases made with the given intervals.

    Same number as :func:`dpbayes.smc.samplers.realised_fisher_information`, but each distinct interval is
    evaluated once (a two-stage design has two), so it is cheap for long runs.
    """
    lo = _finite_1d("lower", lower)
    hi = np.broadcast_to(np.asarray(upper, dtype=float), lo.shape)
    pairs, counts = np.unique(np.column_stack([lo, hi]), axis=0, return_counts=True)
    F = truncation.fisher_information_normal(mu, sigma, pairs[:, 0], pairs[:, 1], eps)
    return np.einsum("k,kij->ij", counts.astype(float), F)


def two_stage_pilot(
    x_pilot: ArrayLike,
    eps: float,
    noise: ArrayLike,
    pilot_interval: tuple[float, float],
    rng: np.random.Generator,
    *,
    n_particles: int = 200,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
) -> tuple[float, float]:
    """Stage 1 of a two-stage design: the pilot's posterior means of ``(mu, sigma)``.

    The pilot individuals release through the fixed ``pilot_interval`` with the given standard
    Laplace draws (paper eq. (10), each release eps-DP); the posterior is computed with the
    exact-likelihood SMC (:func:`dpbayes.smc.samplers.smc_exact`). Stage 2 asks everyone else for
    ``[m - k c, m + k c]`` around the returned ``(m, c)``; that interval is post-processing of released
    values, so the whole design is eps-DP per individual (paper Proposition 1).
    """
    res = smc.smc_exact(x_pilot, eps, rng, n_particles=n_particles, fixed_interval=pilot_interval,
                        noise=noise, prior=prior, store_every=max(1, np.size(x_pilot)))
    return float(res.mean_mu[-1]), float(res.mean_sigma[-1])


def two_stage_fisher(
    n: int,
    n_pilot: int,
    mu: float,
    sigma: float,
    pilot_interval: tuple[float, float],
    centre: float,
    scale: float,
    halfwidth: float,
    eps: float,
) -> NDArray[np.float64]:
    """Total exact Fisher information at ``(mu, sigma)`` of a two-stage design given its pilot estimate.

    ``n_pilot F(pilot_interval) + (n - n_pilot) F([centre - halfwidth scale, centre + halfwidth scale])``
    (paper eq. (6), releases independent given the intervals).
    """
    check_int("n", n, minimum=2)
    check_int("n_pilot", n_pilot, minimum=1, maximum=n - 1)
    scale = check_positive("scale", scale)
    k = check_positive("halfwidth", halfwidth)
    lower = np.array([pilot_interval[0], centre - k * scale])
    upper = np.array([pilot_interval[1], centre + k * scale])
    F = truncation.fisher_information_normal(mu, sigma, lower, upper, eps)
    return n_pilot * F[0] + (n - n_pilot) * F[1]



# ---------------------------------------------------------------------------------------------------
# Beyond the paper: the fair non-adaptive baselines simulated with the exact posterior (no sampler).
#
# A non-adaptive design's releases are independent given theta with a closed-form likelihood, so their
# posterior mean needs no Monte Carlo: dpbayes.smc.mcmc.quadrature_posterior computes it in a fraction of a
# second at n = 1000. Each replicate (eps_index, run) draws its individuals and Laplace draws from the
# same streams as run_replicate, so with the same seed, n and truth the designs see exactly the
# individuals and noise of the simulation study's replicate (common random numbers with the stored runs).
# ---------------------------------------------------------------------------------------------------

#: Designs of :func:`~dpbayes.smc.designs.baseline_replicate`: fixed intervals ``mu +- k sigma`` centred at the truth
#: (``k`` = 1, 2, 5, 10 and the adaptive half-width ``b*``, an oracle), and two-stage designs (a pilot
#: through the wide interval, then ``m +- k c`` at the pilot's posterior means, ``k`` = ``b*``, 1, 2).
BASELINE_DESIGNS = ("fixed-k1", "fixed-k2", "fixed-k5", "fixed-k10", "fixed-bstar", "fixed-mirror",
                    "twostage-bstar", "twostage-k1", "twostage-k2")


@dataclass(frozen=True)
class BaselineReplicate:
    """Exact posterior means of every baseline design on one replicate.

    Attributes
    ----------
    eps_index, run : int
    estimates : dict
        Design -> exact posterior means ``(mu, sigma)`` (:func:`dpbayes.smc.mcmc.quadrature_posterior`).
    fisher : dict
        Design -> total exact Fisher information (2 x 2) at the truth of the releases it made.
    pilot : tuple of float
        The two-stage pilot's posterior means ``(m, c)``.
    edge_mass : float
        Largest quadrature edge mass over the designs (the quadrature's truncation error).
    """

    eps_index: int
    run: int
    estimates: dict[str, tuple[float, float]]
    fisher: dict[str, NDArray[np.float64]]
    pilot: tuple[float, float]
    edge_mass: float


def _pilot_design_draws(
    n: int, mu: float, sigma: float, eps: float, wide_halfwidth: float, pilot_fraction: float, seed: int, eps_index: int,
    run: int,
) -> tuple[float, float, int, NDArray[np.float64], NDArray[np.float64]]:
    """The checks and draws the pilot-based designs share: ``(sigma, eps, n_pilot, x, noise)``.

    The individuals and standard Laplace draws of replicate ``run`` at ``eps_index``, the same streams as
    :func:`dpbayes.smc.study.run_replicate` (:func:`dpbayes.smc.replicate_streams.replicate_streams`), so that every design of a replicate sees
    the same data.
    """
    check_int("n", n, minimum=2)
    sigma = float(check_positive("sigma", sigma))
    eps = float(check_positive("eps", eps))
    check_positive("wide_halfwidth", wide_halfwidth)
    check_probability("pilot_fraction", pilot_fraction, open_interval=True)
    n_pilot = int(round(pilot_fraction * n))
    check_int("round(pilot_fraction * n)", n_pilot, minimum=1, maximum=n - 1)
    streams = replicate_streams(seed, eps_index, run)
    x = mu + sigma * streams["data"].standard_normal(n)
    noise = streams["noise"].laplace(size=n)
    return sigma, eps, n_pilot, x, noise


def mirror_intervals(
    mu: float, sigma: float, ab: tuple[float, float], flip: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Intervals of the mirror-randomised design: ``[mu + a sigma, mu + b sigma]``, or ``[mu - b sigma, mu - a sigma]`` where ``flip``.

    The coin is public and independent of the data, so the design costs no privacy: each individual
    still releases once through a data-independent interval (paper eq. (10), Proposition 1). Averaged
    over the coin, the off-diagonal Fisher information of the two orientations cancels
    (:mod:`dpbayes.smc.design_criteria`).

    Parameters
    ----------
    mu, sigma : float
        Centre and scale the standardised interval is placed at (``sigma > 0``).
    ab : tuple of float
        The standardised interval ``(a, b)``, ``a < b``.
    flip : array_like of bool, shape (n,)
        The coins: ``True`` asks for the mirror image.

    Returns
    -------
    lower, upper : ndarray, shape (n,)
    """
    sigma = float(check_positive("sigma", sigma))
    a, b = check_interval("ab", ab)
    coins = np.asarray(flip)
    if coins.dtype != bool or coins.ndim != 1:
        raise ValueError("flip must be a 1-D boolean array (one public coin per individual)")
    lower = np.where(coins, mu - b * sigma, mu + a * sigma)
    upper = np.where(coins, mu - a * sigma, mu + b * sigma)
    return lower, upper


def _mirror_coins(n: int, seed: int, eps_index: int, run: int) -> NDArray[np.bool_]:
    return replicate_streams(seed, eps_index, run)["mirror-coin"].random(n) < 0.5


def _a_optimal_mirror(eps: float) -> tuple[float, float]:
    opt = design_criteria.optimal_design(eps, "A", "mirror")
    return opt.a, opt.b


def baseline_replicate(
    n: int,
    mu: float,
    sigma: float,
    eps: float,
    b: float,
    eps_index: int,
    run: int,
    seed: int = 1,
    *,
    wide_halfwidth: float = 10.0,
    pilot_fraction: float = 0.1,
    n_grid: int = 17,
    mirror_ab: tuple[float, float] | None = None,
) -> BaselineReplicate:
    """Every design of :data:`~dpbayes.smc.designs.BASELINE_DESIGNS` on replicate ``(eps_index, run)``, exact posterior means.

    The individuals ``x`` and standard Laplace draws come from the streams of :func:`dpbayes.smc.study.run_replicate`
    (``SeedSequence([seed, eps_index, run])``), shared by all designs. Fixed designs release all ``n``
    through ``[mu - k sigma, mu + k sigma]`` (paper eq. (14)); the two-stage design releases the first
    ``round(pilot_fraction n)`` individuals through ``mu +- wide_halfwidth sigma`` (the paper's
    baseline), computes the exact posterior means ``(m, c)`` of those releases, and asks everyone else
    for ``[m - k c, m + k c]``; each individual releases once with ``eps`` (eps-DP per individual, the
    second interval being post-processing of released values, paper Proposition 1). The posterior of a
    design uses all its releases with their intervals (:func:`dpbayes.smc.mcmc.quadrature_posterior`,
    ``n_grid`` points per axis before the grid widens itself). The mirror-randomised design
    (``"fixed-mirror"``, beyond the paper) asks individual ``t`` for ``[mu + a sigma, mu + b sigma]`` or
    its mirror image by a public fair coin (:func:`~dpbayes.smc.designs.mirror_intervals`), with ``mirror_ab = (a, b)`` the
    A-optimal mirror-randomised interval at ``eps`` (:func:`dpbayes.smc.design_criteria.optimal_design`,
    computed here when not given); like the fixed designs it is placed at the truth.
    """
    b = float(check_positive("b", b))
    if mirror_ab is None:
        mirror_ab = _a_optimal_mirror(eps)
    sigma, eps, n_pilot, x, noise = _pilot_design_draws(n, mu, sigma, eps, wide_halfwidth, pilot_fraction, seed, eps_index, run)
    mirror = mirror_intervals(mu, sigma, mirror_ab, _mirror_coins(n, seed, eps_index, run))  # checks mirror_ab first
    estimates: dict[str, tuple[float, float]] = {}
    fisher: dict[str, NDArray[np.float64]] = {}
    edge = 0.0

    def posterior(lower: NDArray[np.float64], upper: NDArray[np.float64]) -> tuple[float, float]:
        nonlocal edge
        y = np.clip(x, lower, upper) + (upper - lower) * noise / eps  # as smc.fixed_interval_releases
        q = mcmc.quadrature_posterior(y, lower, upper, eps, n_grid=n_grid)
        edge = max(edge, q.edge_mass)
        return q.mean_mu, q.mean_sigma

    for name, k in (("fixed-k1", 1.0), ("fixed-k2", 2.0), ("fixed-k5", 5.0), ("fixed-k10", 10.0), ("fixed-bstar", b)):
        lower, upper = np.full(n, mu - k * sigma), np.full(n, mu + k * sigma)
        estimates[name] = posterior(lower, upper)
        fisher[name] = fixed_interval_fisher(n, mu, sigma, k, eps)
    estimates["fixed-mirror"] = posterior(*mirror)
    fisher["fixed-mirror"] = design_fisher(*mirror, mu, sigma, eps)
    wide = (mu - wide_halfwidth * sigma, mu + wide_halfwidth * sigma)
    y_p = np.clip(x[:n_pilot], *wide) + (wide[1] - wide[0]) * noise[:n_pilot] / eps
    q_p = mcmc.quadrature_posterior(y_p, *wide, eps, n_grid=n_grid)
    m, c = q_p.mean_mu, q_p.mean_sigma
    for name, k in (("twostage-bstar", b), ("twostage-k1", 1.0), ("twostage-k2", 2.0)):
        lower = np.concatenate([np.full(n_pilot, wide[0]), np.full(n - n_pilot, m - k * c)])
        upper = np.concatenate([np.full(n_pilot, wide[1]), np.full(n - n_pilot, m + k * c)])
        estimates[name] = posterior(lower, upper)
        fisher[name] = two_stage_fisher(n, n_pilot, mu, sigma, wide, m, c, k, eps)
    return BaselineReplicate(eps_index, run, estimates, fisher, (m, c), edge)


def _baseline_task(task: tuple[Any, ...], mirror_ab: tuple[float, float], kwargs: dict[str, Any]) -> BaselineReplicate:
    # a module-level function of one tuple, as map_tasks needs (picklable for worker processes)
    return baseline_replicate(*task, **kwargs, mirror_ab=mirror_ab)


def baseline_study(
    n: int,
    mu: float,
    sigma: float,
    eps_grid: Sequence[float],
    b_grid: Sequence[float],
    n_runs: int,
    seed: int = 1,
    *,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    **kwargs: Any,
) -> list[BaselineReplicate]:
    """:func:`~dpbayes.smc.designs.baseline_replicate` for every ``(eps, run)``, ordered by eps index then run.

    Each replicate seeds itself, so ``n_jobs`` worker processes change the wall time only. ``kwargs``
    go to :func:`~dpbayes.smc.designs.baseline_replicate`.
    """
    eps_list = [float(check_positive("eps_grid", e)) for e in eps_grid]
    b_list = [float(check_positive("b_grid", v)) for v in b_grid]
    if not eps_list or len(b_list) != len(eps_list):
        raise ValueError(f"eps_grid must be non-empty and b_grid needs one half-width per eps ({len(eps_list)}), got {len(b_list)}")
    check_int("n_runs", n_runs, minimum=1)
    check_int("n_jobs", n_jobs, minimum=1)
    if "mirror_ab" in kwargs:
        raise ValueError("baseline_study computes mirror_ab itself, one optimum per eps; do not pass it")
    mirror = [_a_optimal_mirror(e) for e in eps_list]  # once per eps, not in every replicate
    tasks = [(n, mu, sigma, e, v, i, run, seed) for i, (e, v) in enumerate(zip(eps_list, b_list)) for run in range(n_runs)]
    return map_tasks(_baseline_task, [(task, mirror[task[5]], kwargs) for task in tasks], n_jobs=n_jobs,
                     progress=progress, label="baseline")
