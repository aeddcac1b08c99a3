"""Chapter 03's samplers: against the peer library ``particles`` at equal accuracy, and cost in n (by hand).

    .venv/bin/python benchmarks/bench_smc.py                 # smc_exact vs particles -> benchmarks/results/smc.json
    .venv/bin/python benchmarks/bench_smc.py scaling [--n 250 500 1000 2000] [--particles 1000] [--eps 1]

``particles`` (Chopin's SMC library, PyPI ``particles``) is not a dependency of the book: install it
for this benchmark only, beside the project's numpy, with ``.venv/bin/python -m pip install --no-deps particles``.

The comparison (default) runs chapter 3's nonadaptive model (n = 1000, mu = 50, sigma^2 = 10, the fixed
interval mu +- 10 sigma, priors N(0, 10^4) and IG(1, 1)) for eps = 1 and 10 on one data set each, with
``smc.smc_exact`` and with particles' IBIS (5 random-walk MH steps per resample-move, ``wastefree=False``)
and its waste-free default (``len_chain = 10``), all with the same exact log-likelihood
(``dpbayes.smc.truncation``) and resampling at ESS < N/2. For each method and particle number of a ladder,
``--seeds`` runs give the RMS error of the final posterior means of mu and sigma against the exact
quadrature posterior, in posterior sds, and the mean CPU and wall time of a run. The time to reach an
accuracy level is read off the fitted laws ``error = a N^(-1/2)`` (a pooled over the ladder) and
``time = c + b N`` (least squares), with ``time`` the CPU time of a run (this process, one thread: the
machine is shared, and CPU time is far less sensitive to the other processes than wall time; the mean
wall time is recorded beside it): ``N(level) = (a / level)^2``; both mu and sigma must reach the level.
The machine (CPU model, cores) and its load (``os.getloadavg``) before and after are recorded.

Scaling mode:

Methods (paper Section 4.1 set-up: mu = 50, sigma^2 = 10, priors N(0, 10^4), IG(1, 1)):
  latent-adaptive     the paper's SMC with latent x and adaptive truncation (reference, ratio 1)
  latent-nonadaptive  the same SMC with the fixed interval mu +- 10 sigma
  exact-adaptive      SMC on theta alone with the exact likelihood (resample-move when ESS < N/2)
  mcmc-nonadaptive    exact-likelihood random-walk MH (3000 iterations, 1000 burn-in)
Ratios are against latent-adaptive in the same run (when it is among --methods).
The exponent is the least-squares slope of log(time) against log(n).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
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


def machine() -> dict[str, Any]:
    """CPU model, logical cores, Python and library versions."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import particles

    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "particles": getattr(particles, "__version__", "?"), "compiled_kernels": compiled_kernels()}


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


METHODS_VS = {
    "dpbayes smc_exact": lambda prob, n, s: run_dpbayes(prob, n, s),
    "particles IBIS (5 MH steps)": lambda prob, n, s: run_particles(prob, n, s, wastefree=False),
    "particles waste-free (default)": lambda prob, n, s: run_particles(prob, n, s, wastefree=True),
}


def versus_particles(argv: list[str]) -> None:
    """smc_exact against particles at equal accuracy; writes benchmarks/results/smc.json."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--ladder", type=int, nargs="+", default=[300, 600, 1200], help="particle numbers N")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    report: dict[str, Any] = {"machine": machine(), "load_before": load_before, "seeds": args.seeds,
                              "clock": "CPU time of this process (time.process_time); wall time beside it",
                              "ladder": args.ladder, "levels": list(LEVELS), "n": N_OBS, "mu": MU,
                              "sigma2": SIGMA2, "settings": []}
    for eps in args.eps:
        prob = problem(eps)
        exact, sd = np.array(prob["exact"]), np.array(prob["sd"])
        entry: dict[str, Any] = {"eps": eps, "exact_mean": prob["exact"], "exact_sd": prob["sd"], "methods": {}}
        for name, fn in METHODS_VS.items():
            fn(prob, 50, 0)  # warm-up (imports, compilation)
            per_n = []
            for n_particles in args.ladder:
                errs, times, walls = [], [], []
                for seed in range(args.seeds):
                    t0, w0 = time.process_time(), time.perf_counter()
                    est = fn(prob, n_particles, 1000 + seed)
                    times.append(time.process_time() - t0)
                    walls.append(time.perf_counter() - w0)
                    errs.append((np.array(est) - exact) / sd)
                rms = np.sqrt(np.mean(np.square(errs), axis=0))
                per_n.append({"N": n_particles, "rms_err_mu": float(rms[0]), "rms_err_sigma": float(rms[1]),
                              "time_mean": float(np.mean(times)), "wall_mean": float(np.mean(walls))})
                print(f"eps={eps:g} {name:32s} N={n_particles:5d}: RMS error / sd mu {rms[0]:.4f} sigma {rms[1]:.4f}, "
                      f"{np.mean(times):6.2f} s CPU per run", flush=True)
            ns = np.array([r["N"] for r in per_n], dtype=float)
            # error = a N^(-1/2): a pooled over the ladder (mean of squared error times N), per parameter
            a = np.sqrt([np.mean([r[k] ** 2 * r["N"] for r in per_n]) for k in ("rms_err_mu", "rms_err_sigma")])
            tm = np.array([r["time_mean"] for r in per_n])
            b, c = np.polyfit(ns, tm, 1) if ns.size > 1 else (tm[0] / ns[0], 0.0)
            b = max(float(b), 1e-12)
            times_at = {}
            for level in LEVELS:
                n_needed = float(np.max((a / level) ** 2))
                times_at[str(level)] = {"N": n_needed, "time": float(max(c, 0.0) + b * n_needed)}
            entry["methods"][name] = {"ladder": per_n, "a_mu_sigma": a.tolist(), "time_fit_c_b": [float(c), b],
                                      "at_level": times_at}
        ours = entry["methods"]["dpbayes smc_exact"]["at_level"]
        for name, res in entry["methods"].items():
            res["time_ratio_to_dpbayes"] = {lv: res["at_level"][lv]["time"] / ours[lv]["time"] for lv in ours}
        report["settings"].append(entry)
    report["load_after"] = os.getloadavg()
    report["wall_seconds"] = time.perf_counter() - started
    print(f"\nmachine: {report['machine']['cpu']}, {report['machine']['cores']} cores; load (1, 5, 15 min) "
          f"before {tuple(round(v, 2) for v in load_before)}, after {tuple(round(v, 2) for v in report['load_after'])}")
    print("time to reach the level (both mu and sigma), and ratio to dpbayes smc_exact:")
    for entry in report["settings"]:
        for name, res in entry["methods"].items():
            cells = ", ".join(f"{lv}: {res['at_level'][lv]['time']:7.2f} s (x{res['time_ratio_to_dpbayes'][lv]:.2f})"
                              for lv in res["at_level"])
            print(f"eps={entry['eps']:g} {name:32s} {cells}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {args.out} ({report['wall_seconds']:.0f} s)")


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["scaling"]:
        scaling(argv[1:])
    else:
        versus_particles(argv)


if __name__ == "__main__":
    main()
