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
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpbayes import executors, mcmc, smc, truncation
from dpbayes.smc import NormalInvGammaPrior
from dpbayes.validation import check_choice, check_int, check_positive, check_probability

__all__ = ["CREDIBLE_LEVEL", "METHODS", "error_summary", "weighted_quantile", "credible_interval", "coverage", "PooledCoverage", "pooled_coverage",
           "fixed_interval_fisher", "design_fisher", "two_stage_pilot", "two_stage_fisher", "BASELINE_DESIGNS",
           "BaselineReplicate", "baseline_replicate", "baseline_study", "Replicate", "StudyConfig", "run_replicate", "simulation_study",
           "map_tasks", "replicate_mc_error", "seeded_two_stage_pilot", "seeded_interval_runs",
           "TRANSCRIPT_FIELDS", "released_transcript", "first_transcript_difference", "NeighbourCheck",
           "neighbour_stream_check", "PAIRED_VERDICTS", "PairedComparison", "paired_comparison", "sign_test_p",
           "FAIR_DESIGNS", "FairReplicate", "fair_baseline_replicate", "fair_baseline_study", "CloudCheck", "cloud_vs_exact"]

#: Level of the credible intervals a replicate records (beyond the paper).
CREDIBLE_LEVEL = 0.9
#: The estimators of the study, in the order the chapter reports them.
METHODS = ("SMC-adaptive", "SMC-nonadaptive", "MCMC", "exact-SMC-adaptive")
_STREAM = {"data": 0, "noise": 1, "SMC-adaptive": 2, "SMC-nonadaptive": 3, "MCMC": 4, "exact-SMC-adaptive": 5}


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
        :func:`dpbayes.smc_study.credible_interval`). Beyond the paper, which reports point
        estimates only.
    releases : dict
        Method -> ``(y, lower, upper)``: the releases that method saw and the interval of each
        (SMC-nonadaptive and MCMC see the same fixed-interval releases). With them the exact
        posterior of every method's data can be computed afterwards
        (:func:`dpbayes.mcmc.quadrature_posterior`), which measures each sampler's Monte-Carlo error.
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
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence([config.seed, eps_index, run]).spawn(6)]
    x = config.mu_true + config.sigma_true * streams[_STREAM["data"]].standard_normal(config.n)
    noise = config.noise_scale_factor * streams[_STREAM["noise"]].laplace(size=config.n)  # shared by all methods
    ab = (-b, b)
    fixed = config.fixed_interval
    results: dict[str, tuple[tuple[float, float], smc.SMCResult | None]] = {}
    clouds: dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]] = {}
    common: dict[str, Any] = dict(n_particles=config.n_particles, noise=noise, store_every=config.store_every)
    if "SMC-adaptive" in config.methods:
        ada = smc.smc_latent(x, eps, streams[_STREAM["SMC-adaptive"]], ab=ab, **common)
        results["SMC-adaptive"] = ((ada.mean_mu[-1], ada.mean_sigma[-1]), ada)
        clouds["SMC-adaptive"] = (ada.final_mu, ada.final_sigma, ada.final_weights)
    if "SMC-nonadaptive" in config.methods:
        non = smc.smc_latent(x, eps, streams[_STREAM["SMC-nonadaptive"]], fixed_interval=fixed, **common)
        results["SMC-nonadaptive"] = ((non.mean_mu[-1], non.mean_sigma[-1]), None)
        clouds["SMC-nonadaptive"] = (non.final_mu, non.final_sigma, non.final_weights)
    if "MCMC" in config.methods:  # on the nonadaptive releases, identical to those SMC-nonadaptive saw
        y_fixed, l_fixed, r_fixed = smc.fixed_interval_releases(x, fixed, eps, noise)
        chain = mcmc.rwm_exact(y_fixed, l_fixed, r_fixed, eps, streams[_STREAM["MCMC"]],
                               n_iter=config.mcmc_iter, burn_in=config.mcmc_burn_in)
        results["MCMC"] = ((chain.mean_mu, chain.mean_sigma), None)
        clouds["MCMC"] = (chain.mu, chain.sigma, None)
    if "exact-SMC-adaptive" in config.methods:
        exa = smc.smc_exact(x, eps, streams[_STREAM["exact-SMC-adaptive"]], ab=ab, **common)
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
    (:func:`dpbayes.truncation.best_interval`, paper eq. (13)), which is what chapter 3's notebook
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
        ``"local:N"`` (a ``LocalCluster`` of N processes); see :mod:`dpbayes.executors`. Without it the
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


def map_tasks(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
    label: str = "task",
) -> list[Any]:
    """``[fn(*task) for task in tasks]`` on the executor the study's replicates use, in task order.

    The same choice as :func:`simulation_study`: a Dask cluster when ``scheduler`` (or the environment
    variable ``DPBAYES_SCHEDULER``) names one, else ``n_jobs`` spawned local processes, else (``n_jobs = 1``)
    this process. ``fn`` must be a module-level function of self-seeded tasks, so that the results do
    not depend on where or in which order the tasks run.

    Parameters
    ----------
    fn : callable
        Picklable function applied to each task's arguments.
    tasks : sequence of tuple
        Positional arguments, one tuple per task.
    n_jobs : int
        Worker processes (ignored on a cluster).
    progress : callable, optional
        ``progress(0, total)`` before the first task and ``progress(done, total)`` after each one.
    scheduler : str, optional
        As in :func:`simulation_study`.
    label : str
        Prefix of the cluster task keys.

    Returns
    -------
    list
        One result per task, in the order of ``tasks``.
    """
    check_int("n_jobs", n_jobs, minimum=1)
    address = executors.resolve_scheduler(scheduler)
    tasks = list(tasks)
    if progress is not None:
        progress(0, len(tasks))

    def collect(results: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for result in results:
            out.append(result)
            if progress is not None:
                progress(len(out), len(tasks))
        return out

    if address is not None:
        finished = 0

        def count(index: int, result: Any) -> None:
            nonlocal finished
            finished += 1
            if progress is not None:
                progress(finished, len(tasks))

        with executors.connect(address) as client:
            return executors.map_on_cluster(client, fn, tasks, done=count, label=label)
    if n_jobs == 1 or len(tasks) <= 1:
        return collect(fn(*task) for task in tasks)  # lazily: progress follows the work
    # spawn, not fork: the caller may be a Jupyter kernel with live threads
    with ProcessPoolExecutor(max_workers=min(n_jobs, len(tasks)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *task) for task in tasks]
        return collect(fut.result() for fut in futures)


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
    :func:`dpbayes.smc.smc_exact` with base interval ``designs[i]`` on stream ``6 + i``.

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

# ---------------------------------------------------------------------------------------------------
# Beyond the paper: error summaries, credible intervals and fairer non-adaptive baselines.
#
# The paper's study compares the adaptive interval with one fixed interval, mu +- 10 sigma centred at the
# *true* mean, and reports accuracy only (Fig. 2, Table 1). The functions below give what a reader needs
# to judge that comparison: RMSE, mean and median absolute error; equal-tailed credible intervals of a
# weighted particle cloud or a chain and their coverage; the exact total Fisher information of
# fixed-interval designs and of a two-stage design (a pilot fraction through a wide interval, then one
# fixed interval at the pilot's posterior mean; each individual releases once with the same eps, and the
# second interval is post-processing of releases, so the design is eps-DP per individual, paper
# Proposition 1). Fisher informations are exact (dpbayes.truncation.fisher_information_normal).
# ---------------------------------------------------------------------------------------------------


def _finite_1d(name: str, value: ArrayLike) -> NDArray[np.float64]:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    return arr


def error_summary(estimates: ArrayLike, truth: float) -> dict[str, float]:
    """Root-mean-square, mean absolute and median absolute error of ``estimates`` about ``truth``.

    Returns
    -------
    dict
        ``rmse``, ``mae`` (mean absolute error), ``medae`` (median absolute error).
    """
    est = _finite_1d("estimates", estimates)
    if not np.isfinite(truth):
        raise ValueError(f"truth must be a finite number, got {truth!r}")
    err = est - float(truth)
    return {
        "rmse": float(np.sqrt(np.mean(err**2))),
        "mae": float(np.mean(np.abs(err))),
        "medae": float(np.median(np.abs(err))),
    }


def weighted_quantile(values: ArrayLike, probs: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Quantiles of a weighted sample (inverse of the weighted empirical CDF, no interpolation).

    The ``p``-quantile is the smallest value whose cumulative normalised weight reaches ``p``;
    with equal weights this is ``numpy.quantile(values, p, method="inverted_cdf")``.
    """
    v = _finite_1d("values", values)
    p = np.atleast_1d(check_probability("probs", probs))
    if weights is None:
        w = np.full(v.size, 1.0 / v.size)
    else:
        w = _finite_1d("weights", weights)
        if w.shape != v.shape or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative, one per value, with a positive sum")
        w = w / w.sum()
    order = np.argsort(v, kind="stable")
    cdf = np.cumsum(w[order])
    cdf[-1] = 1.0
    idx = np.searchsorted(cdf, p - 1e-12, side="left")
    return v[order][np.minimum(idx, v.size - 1)]


def credible_interval(values: ArrayLike, weights: ArrayLike | None = None, level: float = 0.9) -> tuple[float, float]:
    """Equal-tailed ``level`` credible interval of a (weighted) posterior sample."""
    level = float(check_probability("level", level, open_interval=True))
    lo, hi = weighted_quantile(values, [(1 - level) / 2, (1 + level) / 2], weights)
    return float(lo), float(hi)


def coverage(intervals: ArrayLike, truth: float) -> float:
    """Fraction of intervals ``(lower, upper)`` (shape ``(k, 2)``) that contain ``truth``."""
    iv = np.asarray(intervals, dtype=float)
    if iv.ndim != 2 or iv.shape[1] != 2 or iv.shape[0] == 0 or not np.all(np.isfinite(iv)):
        raise ValueError("intervals must be a non-empty (k, 2) array of finite (lower, upper) pairs")
    if np.any(iv[:, 0] > iv[:, 1]):
        raise ValueError("intervals must have lower <= upper")
    return float(np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1])))


@dataclass(frozen=True)
class PooledCoverage:
    """Coverage of ``total`` credible intervals, ``hits`` of which contain the truth, tested against the nominal level."""

    coverage: float
    #: ``P[Binomial(total, level) <= hits]``: how likely so few covering intervals are if the level held
    p_value: float
    #: ``p_value < alpha``
    undercovers: bool


def pooled_coverage(hits: int, total: int, level: float = CREDIBLE_LEVEL, alpha: float = 0.01) -> PooledCoverage:
    """Pooled coverage of credible intervals with a one-sided exact binomial test of undercoverage (beyond the paper).

    The intervals are independent replicates (one per ``(eps, run)``), so under the nominal ``level`` the number
    that contain the truth is ``Binomial(total, level)``; the book's rule calls a method *undercovering* when
    the probability of at most ``hits`` covering intervals is below ``alpha``.
    """
    total = check_int("total", total, minimum=1)
    hits = check_int("hits", hits, minimum=0, maximum=total)
    level = float(check_probability("level", level))
    alpha = float(check_probability("alpha", alpha))
    p_value = float(stats.binom.cdf(hits, total, level))
    return PooledCoverage(coverage=hits / total, p_value=p_value, undercovers=p_value < alpha)


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

    Same number as :func:`dpbayes.smc.realised_fisher_information`, but each distinct interval is
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
    exact-likelihood SMC (:func:`dpbayes.smc.smc_exact`). Stage 2 asks everyone else for
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
# posterior mean needs no Monte Carlo: dpbayes.mcmc.quadrature_posterior computes it in a fraction of a
# second at n = 1000. Each replicate (eps_index, run) draws its individuals and Laplace draws from the
# same streams as run_replicate, so with the same seed, n and truth the designs see exactly the
# individuals and noise of the simulation study's replicate (common random numbers with the stored runs).
# ---------------------------------------------------------------------------------------------------

#: Designs of :func:`baseline_replicate`: fixed intervals ``mu +- k sigma`` centred at the truth
#: (``k`` = 1, 2, 5, 10 and the adaptive half-width ``b*``, an oracle), and two-stage designs (a pilot
#: through the wide interval, then ``m +- k c`` at the pilot's posterior means, ``k`` = ``b*``, 1, 2).
BASELINE_DESIGNS = ("fixed-k1", "fixed-k2", "fixed-k5", "fixed-k10", "fixed-bstar",
                    "twostage-bstar", "twostage-k1", "twostage-k2")


@dataclass(frozen=True)
class BaselineReplicate:
    """Exact posterior means of every baseline design on one replicate.

    Attributes
    ----------
    eps_index, run : int
    estimates : dict
        Design -> exact posterior means ``(mu, sigma)`` (:func:`dpbayes.mcmc.quadrature_posterior`).
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
    :func:`run_replicate` (``SeedSequence([seed, eps_index, run])``), so that every design of a replicate sees
    the same data.
    """
    check_int("n", n, minimum=2)
    sigma = float(check_positive("sigma", sigma))
    eps = float(check_positive("eps", eps))
    check_positive("wide_halfwidth", wide_halfwidth)
    check_probability("pilot_fraction", pilot_fraction, open_interval=True)
    n_pilot = int(round(pilot_fraction * n))
    check_int("round(pilot_fraction * n)", n_pilot, minimum=1, maximum=n - 1)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence([seed, eps_index, run]).spawn(6)]
    x = mu + sigma * streams[_STREAM["data"]].standard_normal(n)
    noise = streams[_STREAM["noise"]].laplace(size=n)
    return sigma, eps, n_pilot, x, noise


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
) -> BaselineReplicate:
    """Every design of :data:`BASELINE_DESIGNS` on replicate ``(eps_index, run)``, exact posterior means.

    The individuals ``x`` and standard Laplace draws come from the streams of :func:`run_replicate`
    (``SeedSequence([seed, eps_index, run])``), shared by all designs. Fixed designs release all ``n``
    through ``[mu - k sigma, mu + k sigma]`` (paper eq. (14)); the two-stage design releases the first
    ``round(pilot_fraction n)`` individuals through ``mu +- wide_halfwidth sigma`` (the paper's
    baseline), computes the exact posterior means ``(m, c)`` of those releases, and asks everyone else
    for ``[m - k c, m + k c]``; each individual releases once with ``eps`` (eps-DP per individual, the
    second interval being post-processing of released values, paper Proposition 1). The posterior of a
    design uses all its releases with their intervals (:func:`dpbayes.mcmc.quadrature_posterior`,
    ``n_grid`` points per axis before the grid widens itself).
    """
    from dpbayes import mcmc  # mcmc imports smc; imported here to keep this module's imports as they were

    b = float(check_positive("b", b))
    sigma, eps, n_pilot, x, noise = _pilot_design_draws(n, mu, sigma, eps, wide_halfwidth, pilot_fraction, seed, eps_index, run)
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
    """:func:`baseline_replicate` for every ``(eps, run)``, ordered by eps index then run.

    Each replicate seeds itself, so ``n_jobs`` worker processes change the wall time only. ``kwargs``
    go to :func:`baseline_replicate`.
    """
    eps_list = [float(check_positive("eps_grid", e)) for e in eps_grid]
    b_list = [float(check_positive("b_grid", v)) for v in b_grid]
    if not eps_list or len(b_list) != len(eps_list):
        raise ValueError(f"eps_grid must be non-empty and b_grid needs one half-width per eps ({len(eps_list)}), got {len(b_list)}")
    check_int("n_runs", n_runs, minimum=1)
    check_int("n_jobs", n_jobs, minimum=1)
    tasks = [(n, mu, sigma, e, v, i, run, seed) for i, (e, v) in enumerate(zip(eps_list, b_list)) for run in range(n_runs)]
    out: list[BaselineReplicate] = []
    if progress is not None:
        progress(0, len(tasks))
    if n_jobs == 1:
        for task in tasks:
            out.append(baseline_replicate(*task, **kwargs))
            if progress is not None:
                progress(len(out), len(tasks))
        return out
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(baseline_replicate, *task, **kwargs) for task in tasks]
        for fut in futures:
            out.append(fut.result())
            if progress is not None:
                progress(len(out), len(tasks))
    return out


# ---------------------------------------------------------------------------------------------------
# The released transcript of an online run (paper Proposition 1 and Remark 1, beyond the paper's proof):
# everything a run makes public, step by step, so that a test can compare two runs on neighbouring streams.
# ---------------------------------------------------------------------------------------------------

#: Per-step released quantities of an :class:`dpbayes.smc.SMCResult`, in the order of :func:`released_transcript`.
TRANSCRIPT_FIELDS = ("y", "lower", "upper", "mean_mu", "mean_sigma", "ess")


def released_transcript(result: smc.SMCResult) -> NDArray[np.float64]:
    """Everything an online run releases after each step, one row per step.

    Row ``t`` (0-based) holds the release ``y_t``, the interval ``[l_t, r_t]`` it was asked through,
    the posterior means of ``mu`` and ``sigma`` and the effective sample size after step ``t``
    (:data:`TRANSCRIPT_FIELDS`), then the particle cloud (``mu``, ``sigma``, weights) if it was
    stored at that step, else NaN. Proposition 1 of the paper treats all of these (``Theta_t``,
    ``s_t``, ``Y_t``) as released.

    Returns
    -------
    ndarray
        Shape ``(n, 6 + 3 N)``, ``N`` the number of particles.
    """
    if not isinstance(result, smc.SMCResult):
        raise TypeError(f"result must be a dpbayes.smc.SMCResult, got {type(result).__name__}")
    n = result.y.size
    per_step = np.column_stack([np.asarray(getattr(result, f), dtype=float) for f in TRANSCRIPT_FIELDS])
    N = result.final_mu.size
    clouds = np.full((n, 3 * N), np.nan)
    for k, step in enumerate(result.stored_steps):
        clouds[int(step) - 1] = np.concatenate([result.stored_mu[k], result.stored_sigma[k], result.stored_weights[k]])
    return np.hstack([per_step, clouds])


def first_transcript_difference(a: smc.SMCResult, b: smc.SMCResult) -> int:
    """First step (0-based) at which two runs' released transcripts differ in any bit; ``n`` if none.

    NaN entries (steps without a stored cloud) compare equal to NaN. The two runs must have the same
    length and particle number.
    """
    ta, tb = released_transcript(a), released_transcript(b)
    if ta.shape != tb.shape:
        raise ValueError(f"the two runs differ in length or particle number: {ta.shape} against {tb.shape}")
    same = (ta == tb) | (np.isnan(ta) & np.isnan(tb))
    rows = np.flatnonzero(~same.all(axis=1))
    return int(rows[0]) if rows.size else int(ta.shape[0])


@dataclass(frozen=True)
class NeighbourCheck:
    """Two runs on streams that differ in one record ``k``, same seed (see :func:`neighbour_stream_check`)."""

    #: index of the replaced record
    k: int
    #: first step at which the released transcripts differ (``k`` when only release ``k`` onwards moves)
    first_difference: int
    #: whether the interval asked of record ``k`` is the same in both runs (it depends on earlier outputs only)
    same_interval_at_k: bool
    #: largest ``|log p(y | x_k) - log p(y | x_k')|`` over a grid of ``y``, for record ``k``'s interval
    max_privacy_loss: float


def neighbour_stream_check(
    sampler: Callable[..., smc.SMCResult],
    x: ArrayLike,
    k: int,
    x_k_new: float,
    eps: float,
    seed: int,
    *,
    n_y: int = 2001,
    **sampler_kwargs: Any,
) -> NeighbourCheck:
    """Replace record ``k`` of an ordered stream and compare the two runs' transcripts (same seed).

    The neighbour relation of the paper's Proposition 1: two streams of the same length and order that
    differ in one record (replacement; adding or removing a record shifts every later index and is not
    covered). Both runs use ``numpy.random.default_rng(seed)``; since neither the mechanism nor the sampler
    draws a data-dependent number of random numbers, everything released before step ``k`` and the
    interval asked of record ``k`` must be bit-identical, and release ``k`` has privacy loss at most
    ``eps`` (exact Laplace densities on a grid of ``n_y`` values around the interval).

    Parameters
    ----------
    sampler : callable
        :func:`dpbayes.smc.smc_latent` or :func:`dpbayes.smc.smc_exact`, called as
        ``sampler(x, eps, rng, **sampler_kwargs)``.
    x : array_like, shape (n,)
        The stream; ``k`` in ``[0, n)``.
    x_k_new : float
        The replacement value of record ``k``.
    """
    xs = _finite_1d("x", x)
    k = check_int("k", k, minimum=0, maximum=xs.size - 1)
    if not np.isfinite(x_k_new):
        raise ValueError(f"x_k_new must be a finite number, got {x_k_new!r}")
    eps = float(check_positive("eps", eps))
    seed = check_int("seed", seed, minimum=0)
    n_y = check_int("n_y", n_y, minimum=3)
    x2 = xs.copy()
    x2[k] = float(x_k_new)
    a = sampler(xs, eps, np.random.default_rng(seed), **sampler_kwargs)
    b = sampler(x2, eps, np.random.default_rng(seed), **sampler_kwargs)
    lo, hi = float(a.lower[k]), float(a.upper[k])
    same_interval = bool(lo == b.lower[k] and hi == b.upper[k])
    width = hi - lo
    y = np.linspace(lo - 20.0 * width / eps, hi + 20.0 * width / eps, n_y)
    loss = truncation.log_density_privatised_given_x(y, xs[k], lo, hi, eps) - truncation.log_density_privatised_given_x(y, x2[k], lo, hi, eps)
    return NeighbourCheck(k=k, first_difference=first_transcript_difference(a, b), same_interval_at_k=same_interval,
                          max_privacy_loss=float(np.max(np.abs(loss))))


# ---------------------------------------------------------------------------------------------------
# Verdicts with their uncertainty (beyond the paper): paired comparisons of two estimators over shared
# replicates (the same individuals and noise), and the sign test of a handful of runs.
# ---------------------------------------------------------------------------------------------------

#: Verdict words of :func:`paired_comparison`, from the first estimator's point of view.
PAIRED_VERDICTS = ("more accurate", "less accurate", "indistinguishable", "undecided")


@dataclass(frozen=True)
class PairedComparison:
    """Two estimators on the same replicates (see :func:`paired_comparison`)."""

    #: number of shared replicates
    n: int
    #: ``MSE_b / MSE_a`` over the replicates (above 1: the first estimator is more accurate)
    mse_ratio: float
    #: paired bootstrap percentile interval of ``mse_ratio`` (its size; the verdict uses ``permutation_p``)
    ci_low: float
    ci_high: float
    #: two-sided sign-flip permutation p-value of ``log mse_ratio`` (exact level under exchangeable pairs)
    permutation_p: float
    #: two-sided Wilcoxon signed-rank p-value of the paired differences ``|err_b| - |err_a|``
    wilcoxon_p: float
    #: how many replicates the first estimator has the smaller absolute error
    wins: int
    #: one of :data:`PAIRED_VERDICTS`
    verdict: str


def paired_comparison(
    est_a: ArrayLike,
    est_b: ArrayLike,
    truth: float,
    *,
    level: float = 0.95,
    equivalence: float = 1.25,
    n_boot: int = 10000,
    seed: int = 0,
) -> PairedComparison:
    """Is estimator ``a`` more accurate than ``b`` on the same replicates? MSE ratio, paired tests.

    Replicate ``i`` gives both estimators the same data, so the errors are paired. The verdict is a
    two-sided sign-flip permutation test of ``log(MSE_b / MSE_a)``: under the null hypothesis that the two
    squared errors of a replicate are exchangeable, swapping them within random pairs (``n_boot`` times)
    gives the statistic's null distribution, so the test has its level exactly (a paired percentile
    bootstrap of the ratio rejects too often with 10-30 heavy-tailed replicates: about 10 % at the 5 %
    level). *More accurate* / *less accurate* when ``permutation_p < 1 - level`` and the ratio is above /
    below 1; otherwise *indistinguishable* if the paired bootstrap percentile interval of the ratio (replicate
    indices resampled, same ``n_boot``) lies within ``[1/equivalence, equivalence]``, else *undecided* (the
    replicates cannot rank the two). The Wilcoxon signed-rank test of ``|err_b| - |err_a|`` (a rank test of
    the absolute errors, robust to one wild replicate) is reported beside it.
    Random numbers: ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    est_a, est_b : array_like, shape (n,)
        Estimates of the two estimators, replicate by replicate; ``n >= 2``.
    truth : float
        The true value.
    level : float
        Level of the bootstrap interval, in (0, 1).
    equivalence : float
        MSE ratio within which two estimators count as indistinguishable, ``> 1``.
    """
    a = _finite_1d("est_a", est_a)
    b = _finite_1d("est_b", est_b)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"est_a and est_b must have the same length >= 2, got {a.size} and {b.size}")
    if not np.isfinite(truth):
        raise ValueError(f"truth must be a finite number, got {truth!r}")
    level = float(check_probability("level", level, open_interval=True))
    equivalence = float(check_positive("equivalence", equivalence))
    if equivalence <= 1.0:
        raise ValueError(f"equivalence must be > 1, got {equivalence!r}")
    n_boot = check_int("n_boot", n_boot, minimum=100)
    seed = check_int("seed", seed, minimum=0)
    ea, eb = (a - truth) ** 2, (b - truth) ** 2
    if ea.sum() == 0:
        raise ValueError("estimator a has zero error on every replicate: the MSE ratio is undefined")
    if eb.sum() == 0:
        raise ValueError("estimator b has zero error on every replicate: the MSE ratio is undefined")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(n_boot, a.size))
    sa, sb = ea[idx].sum(axis=1), eb[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(sa > 0, sb / sa, np.inf)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    observed = abs(np.log(eb.sum() / ea.sum()))
    swap = rng.random((n_boot, a.size)) < 0.5
    pa, pb = np.where(swap, eb, ea).sum(axis=1), np.where(swap, ea, eb).sum(axis=1)
    with np.errstate(divide="ignore"):
        null = np.abs(np.log(pb) - np.log(pa))
    p_perm = float((1 + np.sum(null >= observed * (1 - 1e-12))) / (n_boot + 1))
    diff = np.abs(b - truth) - np.abs(a - truth)
    p = float(stats.wilcoxon(diff).pvalue) if np.any(diff != 0) else 1.0
    ratio = float(eb.sum() / ea.sum())
    if p_perm < 1 - level and ratio > 1:
        verdict = "more accurate"
    elif p_perm < 1 - level and ratio < 1:
        verdict = "less accurate"
    elif lo >= 1.0 / equivalence and hi <= equivalence:
        verdict = "indistinguishable"
    else:
        verdict = "undecided"
    return PairedComparison(n=int(a.size), mse_ratio=ratio, ci_low=float(lo), ci_high=float(hi), permutation_p=p_perm,
                            wilcoxon_p=p, wins=int(np.sum(diff > 0)), verdict=verdict)


def sign_test_p(wins: int, n: int) -> float:
    """Two-sided exact sign test: ``P`` of a split at least as lopsided as ``wins`` of ``n`` under 1/2.

    With ``n = 5`` runs the smallest possible value is ``2 / 2^5 = 0.0625`` (``wins`` 0 or 5): five runs
    cannot reach the 5 % level whatever they show.
    """
    n = check_int("n", n, minimum=1)
    wins = check_int("wins", wins, minimum=0, maximum=n)
    return float(stats.binomtest(wins, n, 0.5, alternative="two-sided").pvalue)


# ---------------------------------------------------------------------------------------------------
# A fair two-stage baseline (beyond the paper): stage 2 allows for the pilot's own uncertainty.
# ---------------------------------------------------------------------------------------------------

#: Designs of :func:`fair_baseline_replicate`: the two best fixed intervals at the truth (``mu +- k sigma``,
#: ``k`` = 1, 2), the two-stage design ``m +- 2 c`` that ignores the pilot's uncertainty, and the fair one
#: ``m +- (2 c + z s_m)`` that widens by ``z`` pilot posterior standard deviations of ``mu``.
FAIR_DESIGNS = ("fixed-k1", "fixed-k2", "twostage-k2", "twostage-k2-wide")


@dataclass(frozen=True)
class FairReplicate:
    """Exact posterior means and per-pilot Cramer-Rao bounds of :data:`FAIR_DESIGNS` on one replicate."""

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

    Same individuals and standard Laplace draws as :func:`run_replicate` and :func:`baseline_replicate`
    (``SeedSequence([seed, eps_index, run])``). The pilot (the first ``round(pilot_fraction n)``
    individuals) releases through ``mu +- wide_halfwidth sigma``; its exact posterior gives the mean ``m`` and
    sd ``s_m`` of ``mu`` and the mean ``c`` of ``sigma``. Stage 2 asks everyone else for ``m +- k c``
    (``"twostage-k2"``, with ``k = 2`` by default) or ``m +- (k c + z s_m)`` (``"twostage-k2-wide"``): the
    second allows for the pilot's own uncertainty about where the population is. Both are post-processing of
    released values, so each individual's release stays eps-DP. The Cramer-Rao bounds are computed per
    replicate (per pilot) from the exact Fisher information of the releases actually made.
    """
    from dpbayes import mcmc  # mcmc imports smc; as in baseline_replicate

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
    """:func:`fair_baseline_replicate` for every ``(eps, run)``, ordered by eps index then run (self-seeded)."""
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


# ---------------------------------------------------------------------------------------------------
# Distributional validation of a sampler's cloud against the exact grid posterior (beyond the paper).
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CloudCheck:
    """A weighted posterior sample against the exact posterior of the same releases (see :func:`cloud_vs_exact`)."""

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
) -> CloudCheck:
    """Compare a sampler's (weighted) cloud of ``(mu, sigma)`` with the exact posterior of its releases.

    The exact posterior comes from :func:`dpbayes.mcmc.grid_posterior` on an ``n_grid x n_grid`` grid in
    ``mu`` and ``log sigma``, ``half_width`` posterior standard deviations either side of the posterior mean
    (located first by :func:`dpbayes.mcmc.quadrature_posterior`); marginals are compared on the scales with
    finite moments, ``mu`` and ``log sigma`` (with the paper's inverse-gamma prior the posterior of ``sigma``
    itself can have an infinite variance). The reference distance is that of ``n_eff`` independent draws from
    the exact (gridded) marginal, the median over ``n_ref`` repetitions: a cloud whose distance is many times
    the reference is not a sample of the posterior of that size.
    """
    from dpbayes import mcmc  # mcmc imports smc; as in baseline_replicate

    m = _finite_1d("mu", mu)
    s = _finite_1d("sigma", sigma)
    if s.shape != m.shape or np.any(s <= 0):
        raise ValueError("sigma must hold one positive value per value of mu")
    if weights is None:
        w = np.full(m.size, 1.0 / m.size)
    else:
        w = _finite_1d("weights", weights)
        if w.shape != m.shape or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative, one per particle, with a positive sum")
        w = w / w.sum()
    eps = float(check_positive("eps", eps))
    n_grid = check_int("n_grid", n_grid, minimum=21)
    n_ref = check_int("n_ref", n_ref, minimum=1)
    half_width = float(check_positive("half_width", half_width))
    q = mcmc.quadrature_posterior(y, lower, upper, eps)
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
