"""Chapter 03's samplers: against the peer library ``particles`` at equal accuracy, and cost in n (by hand).

    .venv/bin/python benchmarks/bench_smc.py [options]    # smc_exact vs particles -> benchmarks/results/smc.json
    .venv/bin/python benchmarks/bench_smc.py scaling [--n 250 500 1000 2000] [--particles 1000] [--eps 1]
    .venv/bin/python benchmarks/bench_smc.py reanalyse benchmarks/results/smc.json    # no runs

``particles`` (Chopin's SMC library, PyPI ``particles``) is not a dependency of the book: install it
for this benchmark only, beside the project's numpy, with ``.venv/bin/python -m pip install --no-deps particles``.

Comparison (default mode)
-------------------------
Chapter 3's nonadaptive model (n = 1000, mu = 50, sigma^2 = 10, the fixed interval mu +- 10 sigma,
priors N(0, 10^4) and IG(1, 1)), one data set per eps, sampled by three sides that share the exact
log-likelihood (``dpbayes.smc.truncation``) and resample at ESS < N/2:

  ours        ``smc.smc_exact`` (resample-move, 5 random-walk MH steps)
  IBIS        particles' IBIS, ``wastefree=False``, 5 random-walk MH steps (chain length 6)
  waste-free  particles' default: waste-free, chains of length 10 (N particles in all, N / 10 resampled)

Design (what makes a lead distinguishable from noise):

* Interleaved: for each seed and each particle number N, the three sides run one after the other
  (the order rotates with the seed: A B C, B C A, C A B, ...), so a drift of the machine's load hits
  all sides alike. Seeds are grouped in blocks; ``os.getloadavg`` is recorded before and after
  every block, with the block's CPU and wall time.
* Clock: CPU time of the run (``time.process_time``), with every thread pool limited to one thread
  (``OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1``, set before NumPy is imported). Wall time is recorded beside it.
* Accuracy: per side and N, the RMS over seeds of the error of the final posterior means of mu
  and sigma against the exact quadrature posterior, in posterior sds; a side reaches a level at N
  when both RMS errors are at or below it.
* No extrapolation: the N at which a side reaches a level is where the piecewise log-log linear
  interpolant of its error on the ladder crosses the level after the last rung above it (from there
  on every rung is at or below the level), and its time is the log-log interpolant of the mean CPU
  time at that N. A level not reached at the ladder's largest N is "not reached" (never read off a
  fitted law), a level reached at every rung is "below ladder"; in either case no ratio and no
  verdict are given for that level.
* Uncertainty: each ratio (CPU time to the level, ours / peer; below 1: ours faster) has a 95 %
  **percentile** bootstrap interval over seeds (``--boot`` resamples of the seed indices, the same
  indices for all sides and all N, the whole ratio recomputed from the resampled errors and times).
  In a resample where a side does not reach the level at the top of the ladder its time is only
  bounded (above the top's time; for "below ladder", below the bottom's): the interval's lower end
  is taken over the resamples' lowest possible ratios and its upper end over their highest, so it
  is never narrower than the percentile interval of the unknown true ratios.
* Verdict per level: "ahead" (interval entirely below 1), "behind" (entirely above 1), else "level".
* The peer's version is ``importlib.metadata.version("particles")`` (the module's ``__version__``
  reports "0.3alpha" for 0.4).

Full run (needs a quiet machine: stop the notebooks first; about 40 CPU-minutes, on a quiet machine
about as much wall time; estimated from the reduced run at eps = 1, where a seed cost 12 CPU-s for ours
and IBIS up to N = 6,400 and 12 CPU-s for waste-free up to 25,600, each doubling of N doubling the
cost, and eps = 10 assumed alike; the waste-free rungs at 51,200 and 102,400 are there because its
error fell to only 0.026 posterior sds at 25,600)::

    .venv/bin/python benchmarks/bench_smc.py --eps 1 10 --seeds 20 --block 2 \\
        --ladder 50 100 200 400 800 1600 3200 6400 \\
        --ladder-wastefree 400 800 1600 3200 6400 12800 25600 51200 102400

Reduced run (shows the machinery; about 4 CPU-minutes (249 CPU-s); its result is in ``results/smc-reduced.json``)::

    .venv/bin/python benchmarks/bench_smc.py --eps 1 --seeds 10 --block 2 \\
        --ladder 50 100 200 400 800 1600 3200 6400 \\
        --ladder-wastefree 400 800 1600 3200 6400 12800 25600 \\
        --out benchmarks/results/smc-reduced.json

``bench_smc.py reanalyse FILE [--levels ...] [--boot B]`` recomputes a results file's ratios, intervals
and verdicts from the per-seed errors and CPU times it stores (no sampler runs).

Writing to ``results/smc.json`` keeps the results of the earlier, non-interleaved design only under
the key "superseded", with the reason.

Scaling mode
------------
Methods (paper Section 4.1 set-up: mu = 50, sigma^2 = 10, priors N(0, 10^4), IG(1, 1)):
  latent-adaptive     the paper's SMC with latent x and adaptive truncation (reference, ratio 1)
  latent-nonadaptive  the same SMC with the fixed interval mu +- 10 sigma
  exact-adaptive      SMC on theta alone with the exact likelihood (resample-move when ESS < N/2)
  mcmc-nonadaptive    exact-likelihood random-walk MH (3000 iterations, 1000 burn-in)
Ratios are against latent-adaptive in the same run (when it is among --methods).
The exponent is the least-squares slope of log(time) against log(n).
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # one thread everywhere, before NumPy (and numba) are imported
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse
import datetime
import importlib.metadata
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpbayes.smc import mcmc, samplers as smc, truncation

PAPER_B = {1.0: 0.06, 2.0: 0.12, 5.0: 0.54, 10.0: 0.96}
METHODS = ("latent-adaptive", "latent-nonadaptive", "exact-adaptive", "mcmc-nonadaptive")


def scaling(argv: list[str]) -> None:
    """Time per run of each sampler and the exponent of its growth in n."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    args = parser.parse_args(argv)
    mu, sigma = 50.0, np.sqrt(10.0)
    b = PAPER_B.get(args.eps, 0.5)
    fixed = (mu - 10 * sigma, mu + 10 * sigma)
    rows = []
    for n in args.n:
        rng = np.random.default_rng(args.seed)
        x = mu + sigma * rng.standard_normal(n)
        times = {}
        fixed_noise = np.random.default_rng(5).laplace(size=n)
        ex = None
        for name in args.methods:
            t0 = time.perf_counter()
            if name == "latent-adaptive":
                smc.smc_latent(x, args.eps, np.random.default_rng(1), n_particles=args.particles, ab=(-b, b))
            elif name == "latent-nonadaptive":
                smc.smc_latent(x, args.eps, np.random.default_rng(2), n_particles=args.particles, fixed_interval=fixed)
            elif name == "exact-adaptive":
                ex = smc.smc_exact(x, args.eps, np.random.default_rng(3), n_particles=args.particles, ab=(-b, b))
            else:
                y = np.clip(x, *fixed) + (fixed[1] - fixed[0]) * fixed_noise / args.eps
                mcmc.rwm_exact(y, *fixed, args.eps, np.random.default_rng(4), n_iter=3000, burn_in=1000)
            times[name] = time.perf_counter() - t0
        rows.append((n, times))
        ref = times.get("latent-adaptive")
        print(
            f"n={n:5d} N={args.particles} eps={args.eps:g}: "
            + ", ".join(f"{k} {v:7.2f} s" + (f" (x{v / ref:.2f})" if ref else "") for k, v in times.items())
            + (f"; exact-SMC resample-move events {ex.n_moves}" if ex is not None else ""),
            flush=True,
        )
    if len(rows) >= 2:
        ns = np.log([r[0] for r in rows])
        for name in rows[0][1]:
            slope = np.polyfit(ns, np.log([r[1][name] for r in rows]), 1)[0]
            print(f"exponent of n for {name}: {slope:.2f}")


MU, SIGMA2, N_OBS = 50.0, 10.0, 1000
LEVELS = (0.1, 0.05, 0.02)
RESULTS = Path(__file__).resolve().parent / "results" / "smc.json"
FORMAT = "bench_smc/2: interleaved seeds, CPU time, percentile bootstrap over seeds, no extrapolation"
SUPERSEDED_REASON = (
    "not interleaved (all runs of one side, then the next, while the load drifted), no uncertainty on the "
    "ratios, the 0.02 level read off a fitted law far past the ladder's largest N, and particles 0.4 "
    "recorded as '0.3alpha'; re-measure with the interleaved design (issue 52)"
)
CONFIDENCE = 0.95
BOOT_SEED = 20240052  # seed of the bootstrap's resampling (the same in a run and in its reanalysis)


# --- pure functions: the no-extrapolation rule, the bootstrap interval, the verdict -----------------

def crossing(ns: Sequence[float], errors: Sequence[float], level: float) -> tuple[str, float | None]:
    """The particle number from which the error curve on the ladder stays at or below ``level``.

    ``errors[i]`` is the error at ``ns[i]`` (``ns`` increasing). Returns ``("not reached", None)`` if
    the largest rung is above the level (whatever a fitted law would predict beyond the ladder);
    ``("below ladder", None)`` if every rung is at or below it; otherwise ``("reached", N)`` with
    ``N`` on the piecewise log-log linear interpolant between the last rung above the level and the
    next one (a noisy dip below the level at a smaller N does not count).
    """
    ns_a = np.asarray(ns, dtype=float)
    err = np.asarray(errors, dtype=float)
    if ns_a.ndim != 1 or ns_a.size == 0 or ns_a.shape != err.shape or np.any(np.diff(ns_a) <= 0):
        raise ValueError("ns must be increasing and of the same length as errors")
    if not level > 0:
        raise ValueError(f"level must be positive, got {level}")
    if err[-1] > level:
        return "not reached", None
    above = np.flatnonzero(err > level)
    if above.size == 0:
        return "below ladder", None
    i = int(above[-1]) + 1
    x0, x1 = np.log(ns_a[i - 1]), np.log(ns_a[i])
    e0, e1 = np.log(err[i - 1]), np.log(max(err[i], 1e-300))
    frac = (e0 - np.log(level)) / (e0 - e1)  # e0 > log(level) >= e1
    return "reached", float(np.exp(x0 + frac * (x1 - x0)))


def time_at(ns: Sequence[float], times: Sequence[float], n: float) -> float:
    """Mean run time at ``n`` by log-log linear interpolation on the ladder; no extrapolation.

    Raises ``ValueError`` for ``n`` outside ``[ns[0], ns[-1]]``.
    """
    ns_a = np.asarray(ns, dtype=float)
    if not ns_a[0] * (1 - 1e-12) <= n <= ns_a[-1] * (1 + 1e-12):
        raise ValueError(f"N = {n:g} is outside the ladder [{ns_a[0]:g}, {ns_a[-1]:g}]: no extrapolation")
    return float(np.exp(np.interp(np.log(n), np.log(ns_a), np.log(np.asarray(times, dtype=float)))))


def time_bounds(ns: Sequence[float], errors: Sequence[float], times: Sequence[float], level: float) -> tuple[str, float, float]:
    """CPU time to reach ``level``: ``(status, low, high)``; ``low == high`` when reached on the ladder.

    "not reached": more than the time at the largest N (``high = inf``); "below ladder": less than the
    time at the smallest N (``low = 0``).
    """
    status, n = crossing(ns, errors, level)
    if status == "reached":
        assert n is not None
        t = time_at(ns, times, n)
        return status, t, t
    if status == "not reached":
        return status, float(times[-1]), float("inf")
    return status, 0.0, float(times[0])


def ratio_bounds(ours: tuple[str, float, float], peer: tuple[str, float, float]) -> tuple[float, float]:
    """Bounds of ours / peer from the two sides' time bounds (``time_bounds`` results)."""
    _, lo_o, hi_o = ours
    _, lo_p, hi_p = peer
    with np.errstate(divide="ignore", invalid="ignore"):
        low = lo_o / hi_p if np.isfinite(hi_p) else 0.0
        high = hi_o / lo_p if lo_p > 0 else float("inf")
    return float(low), float(high)


def percentile_interval(lows: Sequence[float], highs: Sequence[float] | None = None,
                        confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval; with censored resamples, from their lowest and highest possible values.

    ``lows[b] <= highs[b]`` bound the statistic of resample ``b`` (equal when it is known). The lower
    end is the ``(1 - confidence) / 2`` quantile of ``lows``, the upper end the ``(1 + confidence) / 2``
    quantile of ``highs``, both as order statistics (no interpolation, so an infinite bound stays one).
    """
    lo = np.sort(np.asarray(lows, dtype=float))
    hi = np.sort(np.asarray(lows if highs is None else highs, dtype=float))
    if lo.size == 0 or lo.shape != hi.shape or np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError("lows and highs must be non-empty, of equal length and not NaN")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = (1 - confidence) / 2
    b = lo.size
    # inverted-cdf quantiles (the smallest order statistic with empirical cdf >= q): no interpolation
    i_lo = max(0, int(np.ceil(alpha * b - 1e-9)) - 1)
    i_hi = min(b - 1, max(0, int(np.ceil((1 - alpha) * b - 1e-9)) - 1))
    return float(lo[i_lo]), float(hi[i_hi])


def verdict(interval: tuple[float, float] | None) -> str:
    """"ahead" / "behind" only where the interval of ours / peer excludes 1, else "level".

    ``None`` (no ratio: a side did not reach the level on the ladder) gives "not reached".
    """
    if interval is None:
        return "not reached"
    low, high = interval
    if not low <= high:
        raise ValueError(f"not an interval: {interval}")
    if high < 1.0:
        return "ahead"
    if low > 1.0:
        return "behind"
    return "level"


def side_summary(ns: Sequence[float], errs: np.ndarray, times: np.ndarray, idx: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Error curve (max over mu, sigma of the RMS over seeds) and mean time per rung.

    ``errs``: shape (seeds, rungs, 2); ``times``: (seeds, rungs); ``idx``: seed indices (a resample).
    """
    e = errs if idx is None else errs[idx]
    t = times if idx is None else times[idx]
    rms = np.sqrt(np.mean(np.square(e), axis=0))  # (rungs, 2)
    return rms.max(axis=1), t.mean(axis=0)


def compare(ours: dict[str, Any], peer: dict[str, Any], levels: Sequence[float], n_boot: int,
            rng: np.random.Generator) -> dict[str, Any]:
    """Ratios ours / peer at each level with percentile bootstrap intervals over seeds, and verdicts.

    ``ours`` and ``peer``: ``{"ladder": [...], "errors": (seeds, rungs, 2), "times": (seeds, rungs)}``
    with the same seeds in the same order (rows).
    """
    n_seeds = ours["errors"].shape[0]
    if peer["errors"].shape[0] != n_seeds:
        raise ValueError("both sides need the same seeds")
    idx = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
    curves = {}
    for name, side in (("ours", ours), ("peer", peer)):
        full = side_summary(side["ladder"], side["errors"], side["times"])
        boot = [side_summary(side["ladder"], side["errors"], side["times"], i) for i in idx]
        curves[name] = (full, boot)
    out = {}
    for level in levels:
        point_o = time_bounds(ours["ladder"], *curves["ours"][0], level)
        point_p = time_bounds(peer["ladder"], *curves["peer"][0], level)
        entry: dict[str, Any] = {"ours": {"status": point_o[0], "time": point_o[1] if point_o[0] == "reached" else None},
                                 "peer": {"status": point_p[0], "time": point_p[1] if point_p[0] == "reached" else None}}
        if point_o[0] != "reached" or point_p[0] != "reached":
            # no ratio, no verdict; only what the ladder bounds (e.g. ours reached, the peer not even at its
            # largest N: ours / peer < ours' time / the peer's time at that N), from the full sample
            low, high = ratio_bounds(point_o, point_p)
            entry.update(ratio=None, interval=None, verdict="not reached" if "not reached" in (point_o[0], point_p[0])
                         else "below ladder", ratio_bounds_on_ladder=[low, high if np.isfinite(high) else None])
        else:
            bounds = np.array([ratio_bounds(time_bounds(ours["ladder"], *bo, level), time_bounds(peer["ladder"], *bp, level))
                               for bo, bp in zip(curves["ours"][1], curves["peer"][1])])
            interval = percentile_interval(bounds[:, 0], bounds[:, 1])
            censored = int(np.sum(bounds[:, 0] != bounds[:, 1]))
            entry.update(ratio=point_o[1] / point_p[1], interval=list(interval), verdict=verdict(interval),
                         censored_resamples=censored)
        out[str(level)] = entry
    return out


# --- the runs -----------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """CPU model, logical cores, Python and library versions, thread settings."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "particles": peer_version(), "compiled_kernels": compiled_kernels(),
            "threads": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                        "NUMBA_NUM_THREADS")}}


def peer_version() -> str:
    """The installed distribution's version (``particles.__version__`` says "0.3alpha" for 0.4)."""
    return importlib.metadata.version("particles")


def compiled_kernels() -> bool | None:
    """Whether dpbayes uses its compiled kernels (None: a dpbayes without them, e.g. an older checkout)."""
    try:
        from dpbayes.smc import _kernels as _smc_kernels
    except ImportError:
        return None
    return _smc_kernels.compiled_enabled()


def problem(eps: float) -> dict[str, Any]:
    """One data set of chapter 3's nonadaptive model and its exact quadrature posterior."""
    sigma = np.sqrt(SIGMA2)
    fixed = (MU - 10 * sigma, MU + 10 * sigma)
    x = MU + sigma * np.random.default_rng(2024).standard_normal(N_OBS)
    noise = np.random.default_rng(2025).laplace(size=N_OBS)
    y, lower, upper = smc.fixed_interval_releases(x, fixed, eps, noise)
    q = mcmc.quadrature_posterior(y, lower, upper, eps)
    return {"eps": eps, "x": x, "noise": noise, "fixed": fixed, "y": y, "lower": lower, "upper": upper,
            "exact": (q.mean_mu, q.mean_sigma), "sd": (q.sd_mu, q.sd_sigma)}


def run_dpbayes(prob: dict[str, Any], n_particles: int, seed: int) -> tuple[float, float]:
    res = smc.smc_exact(prob["x"], prob["eps"], np.random.default_rng(seed), n_particles=n_particles,
                        fixed_interval=prob["fixed"], noise=prob["noise"], store_every=N_OBS)
    return float(res.mean_mu[-1]), float(res.mean_sigma[-1])


def run_particles(prob: dict[str, Any], n_particles: int, seed: int, wastefree: bool) -> tuple[float, float]:
    import particles
    from particles import distributions as dists
    from particles import smc_samplers as ssp

    y, lower, upper, eps = prob["y"], prob["lower"], prob["upper"], prob["eps"]
    lo, hi, eps_arr = np.asarray(lower[0]), np.asarray(upper[0]), np.asarray(eps, dtype=float)

    class PrivatisedNormal(ssp.StaticModel):  # type: ignore[misc]
        """Releases y_t of chapter 3's model; theta = (mu, log sigma^2) with the same priors."""

        def logpyt(self, theta: Any, t: int) -> Any:
            sig = np.exp(0.5 * theta["lsig2"])
            return truncation._loglik(np.asarray(y[t]), theta["mu"], sig, lo, hi, eps_arr)

        def loglik(self, theta: Any, t: int | None = None) -> Any:
            # vectorised over the observations, as smc_exact's moves (particles' default loops over t)
            t = self.T - 1 if t is None else t
            if t < 0:
                return np.zeros(theta.shape[0])
            return smc._exact_loglik_sum(y[: t + 1], lower[: t + 1], upper[: t + 1], theta["mu"],
                                         np.exp(0.5 * theta["lsig2"]), eps)

    prior = dists.StructDist({"mu": dists.Normal(loc=0.0, scale=100.0), "lsig2": dists.LogD(dists.InvGamma(a=1.0, b=1.0))})
    model = PrivatisedNormal(data=y, prior=prior)
    if wastefree:  # particles' default: waste-free, chains of length 10 (n_particles in all, N / 10 resampled)
        fk = ssp.IBIS(model)
        n_arg = max(1, n_particles // fk.len_chain)
    else:  # standard IBIS: resample, then 5 random-walk MH steps (chain length 6)
        fk = ssp.IBIS(model, wastefree=False, len_chain=6)
        n_arg = n_particles
    np.random.seed(seed)
    alg = particles.SMC(fk=fk, N=n_arg, ESSrmin=0.5, verbose=False, collect=None, store_history=False)
    alg.run()
    w = alg.W
    theta = alg.X.theta
    return float(np.sum(w * theta["mu"])), float(np.sum(w * np.exp(0.5 * theta["lsig2"])))


SIDES: dict[str, Callable[[dict[str, Any], int, int], tuple[float, float]]] = {
    "dpbayes smc_exact": lambda prob, n, s: run_dpbayes(prob, n, s),
    "particles IBIS (5 MH steps)": lambda prob, n, s: run_particles(prob, n, s, wastefree=False),
    "particles waste-free (default)": lambda prob, n, s: run_particles(prob, n, s, wastefree=True),
}
OURS = "dpbayes smc_exact"


def measure(prob: dict[str, Any], ladders: dict[str, list[int]], seeds: list[int], block: int) -> dict[str, Any]:
    """Interleaved runs: per seed and N, every side whose ladder holds N, in an order rotating with the seed."""
    names = list(SIDES)
    exact, sd = np.array(prob["exact"]), np.array(prob["sd"])
    errs = {k: np.full((len(seeds), len(ladders[k]), 2), np.nan) for k in names}
    cpu = {k: np.full((len(seeds), len(ladders[k])), np.nan) for k in names}
    wall = {k: np.full((len(seeds), len(ladders[k])), np.nan) for k in names}
    all_n = sorted(set().union(*ladders.values()))
    for k in names:  # warm-up (imports, compilation), not timed
        SIDES[k](prob, 50, 0)
    blocks = []
    for b0 in range(0, len(seeds), block):
        rec: dict[str, Any] = {"seeds": seeds[b0 : b0 + block], "load_before": os.getloadavg()}
        c0, w0 = time.process_time(), time.perf_counter()
        for i in range(b0, min(b0 + block, len(seeds))):
            order = names[i % len(names):] + names[: i % len(names)]
            for n in all_n:
                for k in order:
                    if n not in ladders[k]:
                        continue
                    j = ladders[k].index(n)
                    t0, t1 = time.process_time(), time.perf_counter()
                    est = SIDES[k](prob, n, seeds[i])
                    cpu[k][i, j] = time.process_time() - t0
                    wall[k][i, j] = time.perf_counter() - t1
                    errs[k][i, j] = (np.array(est) - exact) / sd
        rec.update(load_after=os.getloadavg(), cpu_seconds=time.process_time() - c0, wall_seconds=time.perf_counter() - w0)
        blocks.append(rec)
        print(f"  eps={prob['eps']:g} seeds {rec['seeds']}: {rec['cpu_seconds']:.0f} CPU-s, {rec['wall_seconds']:.0f} s wall, "
              f"load {rec['load_before'][0]:.2f} -> {rec['load_after'][0]:.2f}", flush=True)
    return {"errors": errs, "cpu": cpu, "wall": wall, "blocks": blocks}


def superseded(out: Path) -> dict[str, Any] | None:
    """The earlier design's results kept under "superseded" (with the reason), never as current results."""
    if not out.exists():
        return None
    old = json.loads(out.read_text())
    if old.get("format") == FORMAT:  # a run of this design: carry its own superseded block over
        return old.get("superseded")
    return {"reason": SUPERSEDED_REASON, "results": old}


def versus_particles(argv: list[str]) -> None:
    """smc_exact against particles at equal accuracy; writes benchmarks/results/smc.json (or --out)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--block", type=int, default=2, help="seeds per block (load recorded per block)")
    parser.add_argument("--ladder", type=int, nargs="+", default=[50, 100, 200, 400, 800, 1600, 3200, 6400],
                        help="particle numbers N of ours and IBIS")
    parser.add_argument("--ladder-wastefree", type=int, nargs="+",
                        default=[400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400],
                        help="particle numbers N (in all) of the waste-free sampler")
    parser.add_argument("--levels", type=float, nargs="+", default=list(LEVELS))
    parser.add_argument("--boot", type=int, default=4000, help="bootstrap resamples of the seeds")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    for name, ladder in (("--ladder", args.ladder), ("--ladder-wastefree", args.ladder_wastefree)):
        if sorted(set(ladder)) != ladder or ladder[0] < 10:
            raise SystemExit(f"{name} must be increasing particle numbers >= 10")
    ladders = {OURS: args.ladder, "particles IBIS (5 MH steps)": args.ladder,
               "particles waste-free (default)": args.ladder_wastefree}
    seeds = [1000 + s for s in range(args.seeds)]
    started_cpu, started = time.process_time(), time.perf_counter()
    report: dict[str, Any] = {
        "format": FORMAT,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "benchmarks/bench_smc.py " + " ".join(argv),
        "machine": machine(),
        "clock": "CPU time of each run (time.process_time, thread pools limited to 1); wall time recorded beside it",
        "design": "interleaved per seed and N, side order rotating with the seed; the same seeds for all sides",
        "interval": f"percentile bootstrap over seeds, {CONFIDENCE:.0%}, {args.boot} resamples, seed indices "
                    "resampled jointly for all sides and N; censored resamples bounded (see the module docstring)",
        "verdict_rule": "ahead: interval of ours/peer entirely below 1; behind: entirely above 1; else level",
        "extrapolation": "none: a level not reached at the ladder's largest N is 'not reached'",
        "seeds": seeds, "block": args.block, "ladders": ladders, "levels": args.levels, "boot": args.boot,
        "n": N_OBS, "mu": MU, "sigma2": SIGMA2, "settings": [],
    }
    rng = np.random.default_rng(BOOT_SEED)
    for eps in args.eps:
        prob = problem(eps)
        m = measure(prob, ladders, seeds, args.block)
        entry: dict[str, Any] = {"eps": eps, "exact_mean": list(prob["exact"]), "exact_sd": list(prob["sd"]),
                                 "blocks": m["blocks"], "sides": {}, "versus": {}}
        data = {}
        for k in SIDES:
            errs, cpu = m["errors"][k], m["cpu"][k]
            curve, tmean = side_summary(ladders[k], errs, cpu)
            rms = np.sqrt(np.mean(np.square(errs), axis=0))
            entry["sides"][k] = {
                "ladder": [{"N": n, "rms_err_mu": float(rms[j, 0]), "rms_err_sigma": float(rms[j, 1]),
                            "cpu_mean": float(tmean[j]), "wall_mean": float(np.mean(m["wall"][k][:, j]))}
                           for j, n in enumerate(ladders[k])],
                "per_seed": {"errors": errs.tolist(), "cpu": cpu.tolist()},
            }
            data[k] = {"ladder": ladders[k], "errors": errs, "times": cpu}
        for k in SIDES:
            if k != OURS:
                entry["versus"][k] = compare(data[OURS], data[k], args.levels, args.boot, rng)
        report["settings"].append(entry)
    report["cpu_seconds"] = time.process_time() - started_cpu
    report["wall_seconds"] = time.perf_counter() - started
    sup = superseded(args.out)
    if sup is not None:
        report["superseded"] = sup
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {args.out} ({report['cpu_seconds']:.0f} CPU-s, {report['wall_seconds']:.0f} s wall)")


def reanalyse(argv: list[str]) -> None:
    """Recompute the ratios, intervals and verdicts of a results file from its per-seed data (no runs)."""
    parser = argparse.ArgumentParser(description="bench_smc.py reanalyse FILE: " + (reanalyse.__doc__ or ""))
    parser.add_argument("file", type=Path)
    parser.add_argument("--levels", type=float, nargs="+", default=None)
    parser.add_argument("--boot", type=int, default=None)
    args = parser.parse_args(argv)
    report = json.loads(args.file.read_text())
    if report.get("format") != FORMAT or not report.get("settings"):
        raise SystemExit(f"{args.file} holds no run of this design")
    levels = args.levels or report["levels"]
    n_boot = args.boot or int(report.get("boot", 4000))
    rng = np.random.default_rng(BOOT_SEED)
    for entry in report["settings"]:
        data = {k: {"ladder": report["ladders"][k], "errors": np.array(side["per_seed"]["errors"]),
                    "times": np.array(side["per_seed"]["cpu"])} for k, side in entry["sides"].items()}
        entry["versus"] = {k: compare(data[OURS], data[k], levels, n_boot, rng) for k in data if k != OURS}
    report.update(levels=levels, boot=n_boot)
    report["reanalysed"] = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                            "command": "benchmarks/bench_smc.py reanalyse " + " ".join(argv)}
    print_table(report)
    args.file.write_text(json.dumps(report, indent=1) + "\n")
    print(f"rewritten {args.file}")


def print_table(report: dict[str, Any]) -> None:
    mach = report["machine"]
    print(f"\nmachine: {mach['cpu']}, {mach['cores']} cores; particles {mach['particles']}; {report['interval']}")
    print("CPU time to equal accuracy, ours / peer (below 1: ours faster), [95 % interval], verdict:")
    for entry in report["settings"]:
        loads = [b["load_before"][0] for b in entry["blocks"]] + [entry["blocks"][-1]["load_after"][0]]
        print(f"eps={entry['eps']:g}: load (1 min) over the blocks {min(loads):.2f}-{max(loads):.2f}")
        for peer, levels in entry["versus"].items():
            cells = []
            for lv, r in levels.items():
                if r["ratio"] is None:
                    lo, hi = r.get("ratio_bounds_on_ladder") or (0.0, None)
                    bound = f"< {hi:.2f}" if lo == 0 and hi is not None else f"> {lo:.2f}" if lo > 0 else "unbounded"
                    cells.append(f"{lv}: {r['verdict']} (ours {r['ours']['status']}, peer {r['peer']['status']}; "
                                 f"ratio {bound})")
                else:
                    lo, hi = r["interval"]
                    cells.append(f"{lv}: {r['ratio']:.2f} [{lo:.2f}, {hi:.2f}] {r['verdict']}")
            print(f"  vs {peer:32s} " + "; ".join(cells))


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["scaling"]:
        scaling(argv[1:])
    elif argv[:1] == ["reanalyse"]:
        reanalyse(argv[1:])
    else:
        versus_particles(argv)


if __name__ == "__main__":
    main()
