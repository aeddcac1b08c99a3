"""Benchmark: the UBaPP LP (11) with each CVXPY solver against the exact solver, same run.

Usage (paper scale is the default: K = 100, M_theta = 5000):

    python benchmarks/bench_ubapp.py [--K 100] [--M 5000] [--eps 1.0] \
        [--solvers HIGHS,CLARABEL,SCS,OSQP] [--timeout 3600] [--out results.json]

For each solver the LP is solved in a child process (killed after ``--timeout`` seconds) with
``require_dp=False`` so that the raw answer can be timed and scored; the script then reports

* the LP's wall time (CVXPY compilation + solve) and its ratio to the exact solver's time;
* the risk of the raw answer minus the exact optimum;
* whether the raw answer is eps-DP to ``DP_RTOL`` and, if not, whether the library's repair
  (``dpbayes.ubapp.optimal._repair``) certifies it within ``MAX_REPAIR_WEIGHT``, and the repaired risk.

The exact solver's time is the median of ``--repeat`` runs. Nothing here is a unit test: it is
run by hand and its output quoted in the chapter.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import statistics
import time
from typing import Any

import numpy as np

from dpbayes.core.losses import squared_loss_matrix
from dpbayes.ubapp.optimal import (
    DP_RTOL,
    LP_SOLVERS,
    MAX_REPAIR_WEIGHT,
    _both_directions,
    _repair,
    bayes_risk,
    binomial_likelihood,
    chain_neighbours,
    dp_log_violation,
    ubapp_exact,
    ubapp_lp,
    uniform_prior,
)


def _solve(K: int, M: int, eps: float, solver: str, queue: Any) -> None:
    theta = np.linspace(0.0, 1.0, M)
    t0 = time.perf_counter()
    try:
        sol = ubapp_lp(K, eps, theta, solver=solver, require_dp=False)
    except Exception as exc:  # report any solver failure as a result, not a crash
        queue.put({"solver": solver, "error": f"{type(exc).__name__}: {exc}", "wall_seconds": time.perf_counter() - t0})
        return
    queue.put({"solver": solver, "P": sol.P, "risk": sol.risk, "solve_seconds": sol.solve_seconds,
               "wall_seconds": time.perf_counter() - t0, "status": sol.info.get("status")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--K", type=int, default=100)
    parser.add_argument("--M", type=int, default=5000)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--solvers", default=",".join(LP_SOLVERS))
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    theta = np.linspace(0.0, 1.0, args.M)
    times = []
    for _ in range(args.repeat):
        exact = ubapp_exact(args.K, args.eps, theta)
        times.append(exact.solve_seconds)
    t_exact = statistics.median(times)
    print(f"K={args.K} M={args.M} eps={args.eps} machine={platform.machine()} cpus={mp.cpu_count()}")
    print(f"exact: risk={exact.risk:.15g} seconds(median of {args.repeat})={t_exact:.4g}")

    nb = chain_neighbours(args.K + 1)
    I, J = _both_directions(nb)
    L, Q, pi = squared_loss_matrix(theta), binomial_likelihood(args.K, theta), uniform_prior(theta)
    results: list[dict[str, Any]] = []
    for solver in args.solvers.split(","):
        queue: Any = mp.Queue()
        proc = mp.Process(target=_solve, args=(args.K, args.M, args.eps, solver, queue))
        t0 = time.perf_counter()
        proc.start()
        try:
            res = queue.get(timeout=args.timeout)
        except Exception:
            res = {"solver": solver, "error": f"timeout after {args.timeout:g} s", "wall_seconds": time.perf_counter() - t0}
        proc.join(timeout=10)
        if proc.is_alive():
            proc.terminate()
        row: dict[str, Any] = {"solver": solver, "wall_seconds": res["wall_seconds"]}
        if "error" in res:
            row["error"] = res["error"]
        else:
            P = res["P"]
            with np.errstate(divide="ignore"):
                excess = dp_log_violation(np.log(P), args.eps, nb)
            row.update(
                status=res["status"],
                solve_seconds=res["solve_seconds"],
                ratio_to_exact=res["solve_seconds"] / t_exact,
                risk=res["risk"],
                risk_minus_exact=res["risk"] - exact.risk,
                raw_dp_ok=bool(excess <= np.log1p(DP_RTOL)),
                raw_dp_excess=float(excess),
            )
            if not row["raw_dp_ok"]:
                R, lam, delta = _repair(P, args.eps, I, J)
                row.update(
                    repair_weight=lam,
                    repair_envelope_mass=delta,
                    certifiable=bool(lam <= MAX_REPAIR_WEIGHT and delta <= MAX_REPAIR_WEIGHT),
                    repaired_risk_minus_exact=bayes_risk(R, L, Q, pi) - exact.risk,
                )
        results.append(row)
        print(json.dumps(row))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"K": args.K, "M": args.M, "eps": args.eps, "exact_risk": exact.risk,
                       "exact_seconds": t_exact, "lp": results}, fh, indent=1)


if __name__ == "__main__":
    main()
