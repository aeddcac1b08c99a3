"""Timings for chapter 04 (run by hand: ``.venv/bin/python benchmarks/bench_counting.py``).

Compares, in one run on one machine:

* the exact metrics (``mean_abs_error`` / ``prob_lower_error``) with the paper's method, Monte
  Carlo with 100,000 runs (which gives the same numbers only to about 3 significant digits), both on
  the same windowed posterior (``monte_carlo_metrics`` estimates on the exact path's window), so the
  ratio compares integration with simulation, not a window with all ``n + 1`` counts;
* the O(n) + O(1)-per-response posterior mean with the dense O(n)-per-response posterior;
* the LP lower bound with the geometric mechanism + posterior median that attains it.
"""

from __future__ import annotations

import time
import timeit

import numpy as np

from dpbayes.counting import model as ct
from dpbayes.counting import geometric as cgeo
from dpbayes.counting import metrics as cmet


def best_of(fn, repeat: int = 3) -> float:
    """Fastest of ``repeat`` single calls (standard-library timeit; the minimum is the least noisy)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> None:
    print("== exact metrics vs Monte Carlo (100,000 runs, the paper's procedure) ==")
    for n, p, eps in [(100, 0.3, 0.1), (100, 0.3, 1.0), (1000, 0.3, 0.1), (1000, 0.3, 1.0),
                      (100_000, 0.3, 1.0), (10_000_000, 0.3, 1.0)]:
        cmet._model_posterior.cache_clear()  # each timing builds its own posterior
        t_exact = best_of(lambda: (cmet._model_posterior.cache_clear(), cmet.mean_abs_error("mean", n, p, eps),
                                   cmet.prob_lower_error("mean", n, p, eps)))
        rng = np.random.default_rng(0)
        t_mc = best_of(lambda: (cmet._model_posterior.cache_clear(),
                                cmet.monte_carlo_metrics(n, p, eps, 100_000, rng, estimators=("mean",))))
        res = cmet.monte_carlo_metrics(n, p, eps, 100_000, np.random.default_rng(1), estimators=("mean",))["mean"]
        print(f"n={n:5d} eps={eps:4g}: exact {t_exact * 1e3:7.1f} ms, MC {t_mc * 1e3:7.1f} ms, "
              f"MC/exact time {t_mc / t_exact:6.3f}; MC s.e. {res['mae_se']:.2g} (error), {res['prob_se']:.2g} (probability)")

    print("== posterior mean: cumulative sums vs dense posterior (10,000 responses) ==")
    for n in (100, 1000, 10_000):
        y = np.linspace(-n, 2 * n, 10_000)
        t_fast = best_of(lambda: ct.bayes_estimate(y, n, 0.3, 0.1))
        t_dense = best_of(lambda: np.exp(ct.posterior_logpmf(y, n, 0.3, 0.1)) @ np.arange(n + 1), repeat=1)
        print(f"n={n:6d}: fast {t_fast * 1e3:7.1f} ms, dense {t_dense * 1e3:8.1f} ms, ratio {t_dense / t_fast:6.1f}")

    print("== optimum: LP (chapter 01, HiGHS) vs geometric + posterior median ==")
    for n, eps in [(30, 0.1), (30, 1.0), (100, 0.1), (100, 1.0)]:
        t0 = time.perf_counter()
        try:
            risk = cgeo.optimal_private_estimator(n, 0.3, eps).risk
            status = f"risk {risk:.10g}"
        except Exception as exc:  # report solver failures instead of stopping the benchmark
            status = f"FAILED: {type(exc).__name__}: {str(exc)[:80]}"
        t_lp = time.perf_counter() - t0
        t_geo = best_of(lambda: cgeo.geometric_mean_abs_error("median", n, 0.3, eps))
        geo = cgeo.geometric_mean_abs_error("median", n, 0.3, eps)
        print(f"n={n:4d} eps={eps:4g}: LP {t_lp:6.2f} s ({status}); geometric {t_geo * 1e3:6.1f} ms "
              f"(risk {geo:.10g}); LP/geometric time {t_lp / t_geo:8.0f}")


if __name__ == "__main__":
    main()
