"""Scaling of chapter 3's simulation study on Dask (run by hand: ``.venv/bin/python benchmarks/bench_dask.py``).

Measures, on one machine:

* ``simulation_study`` at a fixed medium size serially, on a ``LocalCluster`` of 1 and of 2 worker
  processes (``scheduler="local:N"``; the cluster's start-up is timed separately, it is paid once);
* the overhead per task: a cluster's wall time for many trivial tasks, divided by their number;
* from these, what a 16-worker cluster would give for the paper-scale study (120 replicates).

Every configuration must produce the same numbers; the script checks it.
"""

from __future__ import annotations

import time

import numpy as np

from dpbayes.core import executors
from dpbayes.smc import study as smc_study

CONFIG = smc_study.StudyConfig(n=200, n_particles=200, mu_true=50.0, sigma_true=np.sqrt(10.0),
                               nonadaptive_halfwidth=10.0, mcmc_iter=1000, mcmc_burn_in=200)
EPS_GRID, B_GRID = [0.5, 1.0, 5.0, 10.0], smc_study.default_b_grid([0.5, 1.0, 5.0, 10.0])
N_RUNS = 2  # 8 replicates


def _numbers(replicates):
    return [(r.eps_index, r.run, r.estimates, {k: v.tolist() for k, v in r.fisher.items()}) for r in replicates]


def _noop(i: int) -> int:
    return i


def main() -> None:
    n_tasks = len(EPS_GRID) * N_RUNS
    t0 = time.perf_counter()
    serial = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, N_RUNS)
    t_serial = time.perf_counter() - t0
    per_task = t_serial / n_tasks
    print(f"serial: {t_serial:.1f} s for {n_tasks} replicates ({per_task:.2f} s each)")
    overhead = 0.0
    for workers in (1, 2):
        t0 = time.perf_counter()
        with executors.connect(f"local:{workers}") as client:
            t_start = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = executors.map_on_cluster(client, smc_study.run_replicate,
                                           [(CONFIG, e, b, i, r, r == 0) for i, (e, b) in enumerate(zip(EPS_GRID, B_GRID))
                                            for r in range(N_RUNS)])
            t_run = time.perf_counter() - t0
            assert _numbers(got) == _numbers(serial), "different numbers on the cluster"
            if workers == 2:
                n_noop = 500
                t0 = time.perf_counter()
                executors.map_on_cluster(client, _noop, [(i,) for i in range(n_noop)])
                overhead = (time.perf_counter() - t0) / n_noop
        print(f"LocalCluster, {workers} worker(s): start {t_start:.1f} s, study {t_run:.1f} s, "
              f"speed-up {t_serial / t_run:.2f} (same numbers)")
    print(f"overhead per task (500 trivial tasks on 2 workers): {overhead * 1000:.1f} ms")
    # the paper-scale study: 120 replicates, each about (n / 200)^2 * (N / 200) times this size's (O(N n^2))
    scale = (1000 / CONFIG.n) ** 2 * (1000 / CONFIG.n_particles)
    big = 120 * per_task * scale
    print(f"paper scale (n = N = 1000, 120 replicates), extrapolated as O(N n^2): {big / 3600:.1f} h serial; "
          f"on 16 workers about {np.ceil(120 / 16) * per_task * scale / 3600 + 120 * overhead / 3600:.2f} h "
          f"(8 rounds of 16 replicates; the per-task overhead is negligible at this size)")


if __name__ == "__main__":
    main()
