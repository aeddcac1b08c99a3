"""Cost of the Chapter 03 samplers: time per run and growth in n (run by hand).

    .venv/bin/python benchmarks/bench_smc.py [--n 250 500 1000 2000] [--particles 1000] [--eps 1]

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
import time

import numpy as np

from dpbayes import mcmc, smc

PAPER_B = {1.0: 0.06, 2.0: 0.12, 5.0: 0.54, 10.0: 0.96}
METHODS = ("latent-adaptive", "latent-nonadaptive", "exact-adaptive", "mcmc-nonadaptive")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
