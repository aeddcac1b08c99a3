"""Time of ``compare_estimators`` (chapter 5) against the release it compares, and against dense sums.

Run by hand: ``.venv/bin/python benchmarks/bench_estimator_choice.py`` (about a minute on 2 cores).
For each ``n`` and estimand: the best of three wall-clock times of ``compare_estimators(n, epsilon=1)``
(every candidate that applies at that ``n``), the time of building the optimal release itself
(``OptimalProportionRelease(n, 1, estimand="theta")``, the chapter 1 remap in ``O(n)``) in the same run, and their ratio;
at ``n <= 2000`` also the dense ``O(n^2)`` reference (the truncated geometric law as a matrix, the
moments of the posterior-mean remap by matrix products), and its ratio. The machine and its load
(1-minute load average) are recorded in ``benchmarks/results/estimator-choice.json``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from dpbayes.choosing import candidates as ec
from dpbayes.release.statistic import OptimalProportionRelease
from dpbayes.ubapp.optimal import truncated_geometric_logmatrix

RESULTS = Path(__file__).with_name("results") / "estimator-choice.json"


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def dense_remap_moments(n: int, eps: float) -> None:
    law = np.exp(truncated_geometric_logmatrix(n, eps))  # law[z, c]
    post = law @ np.arange(n + 1) / law.sum(axis=1) / n  # flat prior on the counts
    err = post[:, None] - np.arange(n + 1)[None, :] / n
    (law * err).sum(axis=0), (law * err**2).sum(axis=0)


def main() -> None:
    rows = []
    for n in (10**3, 10**4, 10**5, 10**6):
        for estimand in ("proportion", "theta"):
            t_cmp = best_of(lambda: ec.compare_estimators(n, 1.0, estimand=estimand))
            t_rel = best_of(lambda: OptimalProportionRelease(n, 1.0, estimand="theta")._init_beta(1.0, 1.0))
            row = {"n": n, "estimand": estimand, "compare_s": t_cmp, "release_remap_s": t_rel, "ratio_to_remap": t_cmp / t_rel}
            if n <= 2000:
                t_dense = best_of(lambda: dense_remap_moments(n, 1.0))
                t_one = best_of(lambda: ec.candidate_moments("geometric-bayes", n, 1.0))
                row.update({"dense_one_candidate_s": t_dense, "one_candidate_s": t_one, "dense_over_ours": t_dense / t_one})
            rows.append(row)
            print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    RESULTS.write_text(json.dumps({
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()},
        "load_1min": os.getloadavg()[0],
        "rows": rows,
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
