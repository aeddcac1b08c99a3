"""The simulation study of Yildirim (2024), Section 4.1: repeated runs of every method per eps.

One *replicate* is one ``(eps, run)`` pair: draw ``n`` individuals from ``N(mu, sigma^2)`` and one
standard Laplace draw each, then let every requested method see the same individuals and the same
noise (paper Fig. 2 compares methods on common data). Each replicate has its own
``numpy.random.SeedSequence([seed, eps_index, run])``, spawned into one stream for the data, one for
the noise and one per method, so

* the numbers do not depend on how many replicates run at once or in which order, and
* leaving a method out does not change the others.

That independence is what lets :func:`simulation_study` spread the replicates over worker
processes: at the paper's scale (``n = N = 1000``, 30 runs, 4 eps) the latent-x SMC needs hours of
CPU time, and the replicates are the only coarse-grained parallelism available.

The study's follow-ups live in modules of one concept each, and every name is re-exported here (so that
``from dpbayes.smc import study as smc_study`` gives every ``smc_study.<name>`` the notebooks and tests use):

* :mod:`dpbayes.smc.summaries` -- error summaries, weighted quantiles, credible intervals, coverage and
  pooled coverage;
* :mod:`dpbayes.smc.designs` -- the exact Fisher information of fixed and two-stage designs and the
  baseline designs on the study's replicates;
* :mod:`dpbayes.smc.fair_baseline` -- the fair two-stage baseline (stage 2 widened by the pilot's
  uncertainty);
* :mod:`dpbayes.smc.stream_privacy` -- the released transcript of an online run and the neighbouring-stream
  check;
* :mod:`dpbayes.smc.paired_tests` -- paired comparisons of two estimators and the sign test;
* :mod:`dpbayes.smc.sampler_checks` -- a sampler's cloud against the exact posterior.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbayes.smc import mcmc, samplers as smc, truncation
from dpbayes.core.executors import map_tasks  # noqa: F401 (re-exported: the notebooks call smc_study.map_tasks)
from dpbayes.smc.replicate_streams import replicate_streams
from dpbayes.smc.paired_tests import PAIRED_VERDICTS, PairedComparison, paired_comparison, sign_test_p  # noqa: F401 (re-exported)
from dpbayes.smc.sampler_checks import CloudCheck, cloud_vs_exact  # noqa: F401 (re-exported)
from dpbayes.smc.designs import (  # noqa: F401 (re-exported)
    BASELINE_DESIGNS,
    BaselineReplicate,
    baseline_replicate,
    baseline_study,
    design_fisher,
    fixed_interval_fisher,
    two_stage_fisher,
    two_stage_pilot,
)
from dpbayes.smc.fair_baseline import FAIR_DESIGNS, FairReplicate, fair_baseline_replicate, fair_baseline_study  # noqa: F401 (re-exported)
from dpbayes.smc.summaries import (  # noqa: F401 (re-exported)
    CREDIBLE_LEVEL,
    PooledCoverage,
    coverage,
    credible_interval,
    error_summary,
    pooled_coverage,
    weighted_quantile,
)
from dpbayes.smc.stream_privacy import (  # noqa: F401 (re-exported)
    TRANSCRIPT_FIELDS,
    NeighbourCheck,
    first_transcript_difference,
    neighbour_stream_check,
    released_transcript,
)
from dpbayes.core.validation import check_choice, check_int, check_positive

__all__ = ["CREDIBLE_LEVEL", "METHODS", "error_summary", "weighted_quantile", "credible_interval", "coverage", "PooledCoverage", "pooled_coverage",
           "fixed_interval_fisher", "design_fisher", "two_stage_pilot", "two_stage_fisher", "BASELINE_DESIGNS",
           "BaselineReplicate", "baseline_replicate", "baseline_study", "Replicate", "StudyConfig", "run_replicate", "simulation_study",
           "map_tasks", "replicate_mc_error", "seeded_two_stage_pilot", "seeded_interval_runs",
           "TRANSCRIPT_FIELDS", "released_transcript", "first_transcript_difference", "NeighbourCheck",
           "neighbour_stream_check", "PAIRED_VERDICTS", "PairedComparison", "paired_comparison", "sign_test_p",
           "FAIR_DESIGNS", "FairReplicate", "fair_baseline_replicate", "fair_baseline_study", "CloudCheck", "cloud_vs_exact"]


#: The estimators of the study, in the order the chapter reports them.
METHODS = ("SMC-adaptive", "SMC-nonadaptive", "MCMC", "exact-SMC-adaptive")


@dataclass(frozen=True)
class StudyConfig:
    """Everything a replicate needs besides its ``(eps, run)`` coordinates.

    ``ab`` half-widths come per eps from ``b_grid`` (the interval is ``[m - b c, m + b c]``);
    the nonadaptive methods use the fixed interval ``mu +- nonadaptive_halfwidth * sigma``.
    ``noise_scale_factor`` scales the data's Laplace noise only (1 is correct; ``1/sqrt(2)``
    mimics the author's code, where the samplers still assume scale ``(r - l)/eps``).
    """

    n: int
    n_particles: int
    mu_true: float
    sigma_true: float
    nonadaptive_halfwidth: float
    methods: tuple[str, ...] = METHODS
    noise_scale_factor: float = 1.0
    mcmc_iter: int = 2000
    mcmc_burn_in: int = 500
    store_every: int = 20
    seed: int = 1

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=1)
        check_int("n_particles", self.n_particles, minimum=1)
        check_positive("sigma_true", self.sigma_true)
        check_positive("nonadaptive_halfwidth", self.nonadaptive_halfwidth)
        check_positive("noise_scale_factor", self.noise_scale_factor)
        check_int("mcmc_iter", self.mcmc_iter, minimum=1)
        check_int("mcmc_burn_in", self.mcmc_burn_in, minimum=0)
        check_int("store_every", self.store_every, minimum=1)
        check_int("seed", self.seed, minimum=0)
        if not self.methods:
            raise ValueError(f"methods must name at least one of {', '.join(METHODS)}")
        for m in self.methods:
            check_choice("methods", m, METHODS)

    @classmethod
    def from_parameters(cls, values: Mapping[str, Any]) -> "StudyConfig":
        """The configuration that notebook 03b's parameters describe.

        ``values`` holds 03b's parameter names (``sigma2_true`` is the variance; ``methods`` is put in
        canonical order); names the configuration does not use (``n_runs``, ``eps_grid``...) are ignored.
        """
        return cls(n=values["n"], n_particles=values["n_particles"], mu_true=values["mu_true"],
                   sigma_true=float(np.sqrt(values["sigma2_true"])),
                   nonadaptive_halfwidth=values["nonadaptive_halfwidth"],
                   methods=tuple(m for m in METHODS if m in values["methods"]),
                   noise_scale_factor=values["noise_scale_factor"], mcmc_iter=values["mcmc_iter"],
                   mcmc_burn_in=values["mcmc_burn_in"], store_every=values["store_every"], seed=values["seed"])

    @property
    def fixed_interval(self) -> tuple[float, float]:
        half = self.nonadaptive_halfwidth * self.sigma_true
        return (self.mu_true - half, self.mu_true + half)


@dataclass(frozen=True)
class Replicate:
    """What one replicate contributes to the chapter's figures and tables.

    Attributes
    ----------
    eps_index, run : int
        Coordinates of the replicate.
    estimates : dict
        Method -> final posterior means ``(mu, sigma)``.
    fisher : dict
        Method -> total exact Fisher information (2 x 2) of the releases that method saw, at the
        truth: realised intervals for adaptive methods, ``n`` times one release for the fixed one.
    latent_runs : tuple of SMCResult or None
        ``(SMC-adaptive, SMC-nonadaptive)`` results when both ran and ``keep_runs`` was set (for
        the particle plot of the paper's Fig. 1), else None.
    intervals : dict
        Method -> equal-tailed 90 % credible intervals ``((mu_lo, mu_hi), (sigma_lo, sigma_hi))``
        of the final posterior approximation (weighted particle cloud, or the post-burn-in chain;
        :func:`dpbayes.smc.summaries.credible_interval`). Beyond the paper, which reports point
        estimates only.
    releases : dict
        Method -> ``(y, lower, upper)``: the releases that method saw and the interval of each
        (SMC-nonadaptive and MCMC see the same fixed-interval releases). With them the exact
        posterior of every method's data can be computed afterwards
        (:func:`dpbayes.smc.mcmc.quadrature_posterior`), which measures each sampler's Monte-Carlo error.
    """

    eps_index: int
    run: int
    estimates: dict[str, tuple[float, float]]
    fisher: dict[str, NDArray[np.float64]]
    latent_runs: tuple[smc.SMCResult, smc.SMCResult] | None
    intervals: dict[str, tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=dict)
    releases: dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]] = field(default_factory=dict)


def run_replicate(config: StudyConfig, eps: float, b: float, eps_index: int, run: int, keep_runs: bool = False) -> Replicate:
    """Run every method of ``config`` on replicate ``(eps_index, run)`` (paper Section 4.1).

    Parameters
    ----------
    config : StudyConfig
    eps : float
        Privacy parameter of every release (each individual's release is eps-DP).
    b : float
        Half-width of the adaptive interval ``[-b, b]`` for the standard normal (paper Table of
        best intervals; the interval asked of individual ``t`` is ``[m - b c, m + b c]``).
    eps_index, run : int
        Enter the seed, so that a replicate is reproducible on its own.
    keep_runs : bool
        Return the two latent-x SMC results (large: the stored particles) for plotting.
    """
    check_positive("eps", eps)
    check_positive("b", b)
    streams = replicate_streams(config.seed, eps_index, run)
    x = config.mu_true + config.sigma_true * streams["data"].standard_normal(config.n)
    noise = config.noise_scale_factor * streams["noise"].laplace(size=config.n)  # shared by all methods
    ab = (-b, b)
    fixed = config.fixed_interval
    results: dict[str, tuple[tuple[float, float], smc.SMCResult | None]] = {}
    clouds: dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]] = {}
    common: dict[str, Any] = dict(n_particles=config.n_particles, noise=noise, store_every=config.store_every)
    if "SMC-adaptive" in config.methods:
        ada = smc.smc_latent(x, eps, streams["SMC-adaptive"], ab=ab, **common)
        results["SMC-adaptive"] = ((ada.mean_mu[-1], ada.mean_sigma[-1]), ada)
        clouds["SMC-adaptive"] = (ada.final_mu, ada.final_sigma, ada.final_weights)
    if "SMC-nonadaptive" in config.methods:
        non = smc.smc_latent(x, eps, streams["SMC-nonadaptive"], fixed_interval=fixed, **common)
        results["SMC-nonadaptive"] = ((non.mean_mu[-1], non.mean_sigma[-1]), None)
        clouds["SMC-nonadaptive"] = (non.final_mu, non.final_sigma, non.final_weights)
    if "MCMC" in config.methods:  # on the nonadaptive releases, identical to those SMC-nonadaptive saw
        y_fixed, l_fixed, r_fixed = smc.fixed_interval_releases(x, fixed, eps, noise)
        chain = mcmc.rwm_exact(y_fixed, l_fixed, r_fixed, eps, streams["MCMC"],
                               n_iter=config.mcmc_iter, burn_in=config.mcmc_burn_in)
        results["MCMC"] = ((chain.mean_mu, chain.mean_sigma), None)
        clouds["MCMC"] = (chain.mu, chain.sigma, None)
    if "exact-SMC-adaptive" in config.methods:
        exa = smc.smc_exact(x, eps, streams["exact-SMC-adaptive"], ab=ab, **common)
        results["exact-SMC-adaptive"] = ((exa.mean_mu[-1], exa.mean_sigma[-1]), exa)
        clouds["exact-SMC-adaptive"] = (exa.final_mu, exa.final_sigma, exa.final_weights)

    fixed_fisher = config.n * truncation.fisher_information_normal(config.mu_true, config.sigma_true, *fixed, eps)
    estimates, fisher, intervals = {}, {}, {}
    releases: dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]] = {}
    if "SMC-adaptive" in config.methods:
        releases["SMC-adaptive"] = (ada.y, ada.lower, ada.upper)
    if "SMC-nonadaptive" in config.methods or "MCMC" in config.methods:
        fixed_rel = smc.fixed_interval_releases(x, fixed, eps, noise)
        for name in ("SMC-nonadaptive", "MCMC"):
            if name in config.methods:
                releases[name] = fixed_rel
    if "exact-SMC-adaptive" in config.methods:
        releases["exact-SMC-adaptive"] = (exa.y, exa.lower, exa.upper)
    for name in METHODS:  # canonical order, whatever the order of config.methods
        if name not in results:
            continue
        point, adaptive_run = results[name]
        estimates[name] = (float(point[0]), float(point[1]))
        mu_s, sigma_s, w_s = clouds[name]
        intervals[name] = (credible_interval(mu_s, w_s, CREDIBLE_LEVEL),
                           credible_interval(sigma_s, w_s, CREDIBLE_LEVEL))
        fisher[name] = (fixed_fisher if adaptive_run is None else
                        smc.realised_fisher_information(adaptive_run.lower, adaptive_run.upper,
                                                        config.mu_true, config.sigma_true, eps))
    latent = None
    if keep_runs and {"SMC-adaptive", "SMC-nonadaptive"} <= set(config.methods):
        latent = (ada, non)
    return Replicate(eps_index, run, estimates, fisher, latent, intervals, releases)


def default_b_grid(eps_grid: Sequence[float]) -> list[float]:
    """Half-widths ``b*`` of the adaptive interval ``[-b*, b*]`` for each eps when none are given.

    The paper's own ``b*`` (``truncation.PAPER_INTERVALS``) for its four eps values; for any other eps
    the best symmetric interval of the exact Fisher information about ``mu`` on the author's grid
    (:func:`dpbayes.smc.truncation.best_interval`, paper eq. (13)), which is what chapter 3's notebook
    03a computes for the paper's eps.
    """
    out = []
    for eps in eps_grid:
        eps_f = float(check_positive("eps_grid", eps))
        paper = truncation.PAPER_INTERVALS.get(eps_f)
        b = paper[1] if paper is not None else truncation.best_interval(eps_f, "paper", "exact")[1]
        out.append(round(float(b), 10))
    return out


def simulation_study(
    config: StudyConfig,
    eps_grid: Sequence[float],
    b_grid: Sequence[float],
    n_runs: int,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
) -> list[Replicate]:
    """All replicates ``(eps, run)`` of the study; run 0 of each eps keeps its latent-x SMC results.

    Parameters
    ----------
    config : StudyConfig
    eps_grid, b_grid : sequences of float
        Privacy parameters and the adaptive half-width for each (same length).
    n_runs : int
        Replicates per eps (paper: 30).
    n_jobs : int
        Worker processes. The result is identical for every ``n_jobs`` (each replicate seeds
        itself); with ``n_jobs = 1`` everything runs in this process. Ignored on a cluster.
    progress : callable, optional
        Called as ``progress(0, total)`` before the first replicate (so that a progress bar's clock
        starts with the work) and as ``progress(done, total)`` after each one (on a cluster: after
        each finished cluster task).
    scheduler : str, optional
        Run the replicates on a Dask cluster: a scheduler address (``"tcp://HOST:8786"``) or
        ``"local:N"`` (a ``LocalCluster`` of N processes); see :mod:`dpbayes.core.executors`. Without it the
        environment variable ``DPBAYES_SCHEDULER`` is used if set (so a notebook run by papermill
        uses a cluster without a new parameter), else ``n_jobs`` local processes. The numbers are the
        same everywhere.

    Returns
    -------
    list of Replicate
        Ordered by eps index, then run.
    """
    eps_list = [float(check_positive("eps_grid", e)) for e in eps_grid]
    b_list = [float(check_positive("b_grid", b)) for b in b_grid]
    if not eps_list:
        raise ValueError("eps_grid must not be empty")
    if len(b_list) != len(eps_list):
        raise ValueError(f"b_grid needs one half-width per entry of eps_grid ({len(eps_list)}), got {len(b_list)}")
    check_int("n_runs", n_runs, minimum=1)
    check_int("n_jobs", n_jobs, minimum=1)
    tasks = [(config, eps, b, i, run, run == 0) for i, (eps, b) in enumerate(zip(eps_list, b_list)) for run in range(n_runs)]
    return map_tasks(run_replicate, tasks, n_jobs=n_jobs, progress=progress, scheduler=scheduler, label="replicate")


# ---------------------------------------------------------------------------------------------------
# The notebook's per-replicate follow-ups (exact posteriors, two-stage pilots, off-centre intervals), as
# self-seeded module-level tasks, so that they go through map_tasks like the replicates.
# ---------------------------------------------------------------------------------------------------
def replicate_mc_error(
    releases: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]],
    estimates: Mapping[str, tuple[float, float]],
    eps: float,
) -> dict[str, tuple[float, float, float, float]]:
    """Each method's posterior means minus the exact quadrature posterior means of the releases it saw.

    SMC-nonadaptive and MCMC see the same releases: one quadrature serves both.

    Parameters
    ----------
    releases, estimates : mapping
        A :class:`Replicate`'s ``releases`` and ``estimates``.
    eps : float
        The replicate's privacy parameter.

    Returns
    -------
    dict
        Method -> ``(d_mu, d_sigma, sd_mu, sd_sigma)`` (differences and exact posterior sds), in
        :data:`METHODS` order.
    """
    exact: dict[str, Any] = {}
    out: dict[str, tuple[float, float, float, float]] = {}
    for m in METHODS:
        if m not in estimates:
            continue
        group = "fixed" if m in ("SMC-nonadaptive", "MCMC") else m
        if group not in exact:
            exact[group] = mcmc.quadrature_posterior(*releases[m], eps)
        q = exact[group]
        mu_hat, sigma_hat = estimates[m]
        out[m] = (mu_hat - q.mean_mu, sigma_hat - q.mean_sigma, q.sd_mu, q.sd_sigma)
    return out


def seeded_two_stage_pilot(
    seed: int, eps_index: int, run: int, n_pilot: int, mu: float, sigma: float, noise_scale_factor: float,
    eps: float, pilot_interval: tuple[float, float], n_particles: int,
) -> tuple[float, float]:
    """:func:`two_stage_pilot` on its own individuals, seeded by ``SeedSequence([seed, 1000 + eps_index, run])``.

    The streams are spawned as data, noise and SMC, apart from the study's replicates.

    Returns
    -------
    (float, float)
        The pilot's posterior means ``(m, c)``.
    """
    s_data, s_noise, s_smc = np.random.SeedSequence([seed, 1000 + eps_index, run]).spawn(3)
    x_p = mu + sigma * np.random.default_rng(s_data).standard_normal(n_pilot)
    w_p = noise_scale_factor * np.random.default_rng(s_noise).laplace(size=n_pilot)
    return two_stage_pilot(x_p, eps, w_p, pilot_interval, np.random.default_rng(s_smc), n_particles=n_particles)


def seeded_interval_runs(
    seed: int, run: int, n: int, mu: float, sigma: float, noise_scale_factor: float, eps: float,
    n_particles: int, designs: Sequence[tuple[float, float]],
) -> list[tuple[float, float]]:
    """Exact-likelihood SMC of replicate ``(eps index 0, run)`` with other adaptive base intervals.

    The replicate's own individuals and noise (the stream layout of :func:`run_replicate`:
    ``SeedSequence([seed, 0, run]).spawn(8)``, data and noise first); design ``i`` runs
    :func:`dpbayes.smc.samplers.smc_exact` with base interval ``designs[i]`` on stream ``6 + i``.

    Returns
    -------
    list of (float, float)
        Final posterior means ``(mu, sigma)``, one per design.
    """
    if len(designs) > 2:
        raise ValueError(f"at most two designs (streams 6 and 7), got {len(designs)}")
    ss = np.random.SeedSequence([seed, 0, run]).spawn(8)
    x = mu + sigma * np.random.default_rng(ss[0]).standard_normal(n)
    noise = noise_scale_factor * np.random.default_rng(ss[1]).laplace(size=n)
    out = []
    for ab, s in zip(designs, ss[6:]):
        res = smc.smc_exact(x, eps, np.random.default_rng(s), n_particles=n_particles, ab=(float(ab[0]), float(ab[1])),
                            noise=noise, store_every=n)
        out.append((float(res.mean_mu[-1]), float(res.mean_sigma[-1])))
    return out
