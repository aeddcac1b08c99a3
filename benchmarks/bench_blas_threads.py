"""The minimax solver with BLAS on one thread (as the library runs it) and on OpenBLAS's own count, interleaved.

Run by hand: ``.venv/bin/python benchmarks/bench_blas_threads.py [--pairs 6] [--n 10000] [--eps 0.1] [--json FILE]``.
Each measurement is one call of ``minimax_remap(n, eps, tol=1e-4, max_evals=2000, max_seconds=inf)`` (the settings
of the ``"geometric-minimax"`` candidate, :mod:`dpbayes.choosing.candidates`) in a fresh process: once as the
library runs it ("one": :func:`dpbayes.core.executors.one_blas_thread` around the solver) and once with that
limit replaced by nothing ("ambient": OpenBLAS's default, one thread per core), in the order A B, B A, ... Two
conditions: the machine otherwise idle ("quiet"), and one other process spinning on a core throughout ("busy",
a stand-in for the second pytest-xdist worker of ``make test``). Per pair the ratio of wall-clock times (one /
ambient; below 1: the limit helps); per condition the geometric mean over the pairs and a 95 % percentile
bootstrap interval (10,000 resamples of the pairs, seed 0). The verdict rule, declared here: "faster" or "slower"
only where the interval excludes 1, "level" otherwise. Beside it: whether the two sides' worst risks have the same
bits (with one BLAS thread per process the result does not depend on the machine's core count).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench_threads import bootstrap_interval

CHILD = """
import json, sys, time
import numpy as np
from dpbayes.choosing import minimax

if sys.argv[1] == "ambient":  # the solver without its one_blas_thread decorator (also in its recursive call)
    minimax._solve_proportion_squared = minimax._solve_proportion_squared.__wrapped__
t0 = time.perf_counter()
result = minimax.minimax_remap(int(sys.argv[2]), float(sys.argv[3]), tol=1e-4, max_evals=2000, max_seconds=np.inf)
print(json.dumps({"seconds": time.perf_counter() - t0, "worst_risk": result.worst_risk.hex()}))
"""


def measure(side: str, n: int, eps: float) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CHILD, side, str(n), repr(eps)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def spinning(busy: bool):
    """One process spinning on a core while the block runs (``busy``), or nothing."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6, help="interleaved pairs per condition")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()
    record: dict[str, object] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": len(os.sched_getaffinity(0)),
        "n": args.n, "eps": args.eps, "load_average_at_start": list(os.getloadavg()),
        "rule": "faster/slower where the 95 % bootstrap interval of the geometric mean ratio (one / ambient) excludes 1, level otherwise",
    }
    print(f"bench_blas_threads: minimax_remap({args.n}, {args.eps}), {record['cpus']} CPUs")
    for condition in ("quiet", "busy"):
        rows = []
        with spinning(condition == "busy"):
            for k in range(args.pairs):
                order = ("ambient", "one") if k % 2 == 0 else ("one", "ambient")
                rows.append({side: measure(side, args.n, args.eps) for side in order})
        one = np.array([r["one"]["seconds"] for r in rows])
        ambient = np.array([r["ambient"]["seconds"] for r in rows])
        log_r = np.log(one / ambient)
        low, high = bootstrap_interval(log_r)
        ratio = math.exp(log_r.mean())
        verdict = "faster" if high < 1 else "slower" if low > 1 else "level"
        same = all(r["one"]["worst_risk"] == r["ambient"]["worst_risk"] for r in rows)
        record[condition] = {"pairs": rows, "ratio": ratio, "interval": [low, high], "verdict": verdict, "same_bits": same,
                             "median_seconds": {"one": float(np.median(one)), "ambient": float(np.median(ambient))}}
        print(f"{condition}: one {np.median(one):.2f} s, ambient {np.median(ambient):.2f} s; one / ambient {ratio:.2f} "
              f"[{low:.2f}, {high:.2f}]: {verdict}; worst risks {'the same bits' if same else 'differ'}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
