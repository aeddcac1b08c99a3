"""Threads against one thread for the absolute-loss release (the posterior-median remap), interleaved.

Run by hand: ``.venv/bin/python benchmarks/bench_threads.py [--pairs 6] [--sizes 1000000 10000000]``.
Each measurement is one construction of ``OptimalProportionRelease(n, 1, loss="absolute", estimand="theta")``
(Beta(1, 1) prior) in a fresh process (``bench_release.py``'s child, after its warm-up), once with
``DPBAYES_THREADS=1`` and once with the default (as many threads as the CPUs), in the order A B, B A,
A B, ... so that a drift of the machine's load falls on both. Per pair, the ratio of wall-clock
times (threads / one thread; below 1: the threads are faster); over the pairs, the geometric mean of
the ratios and a 95 % percentile bootstrap interval (10,000 resamples of the pairs, seed 0). The
verdict rule, declared here: "faster" or "slower" only where the interval excludes 1, "level"
otherwise. The process's CPU time and peak memory growth are kept beside each time. Both sides give
the same estimates bit for bit (``tests/ubapp/test_median_remap.py``); the printed values show it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH_RELEASE = Path(__file__).with_name("bench_release.py")


def measure(n: int, threads: str | None) -> dict[str, float]:
    """One construction in a fresh process: seconds, CPU seconds, peak MB, the Bayes risk."""
    env = dict(os.environ)
    env.pop("DPBAYES_THREADS", None)
    if threads is not None:
        env["DPBAYES_THREADS"] = threads
    cmd = [sys.executable, str(BENCH_RELEASE), "--child", json.dumps(["proportion-absolute", n, "new", 1])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bootstrap_interval(log_ratios: np.ndarray, resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of the geometric mean ratio, resampling the pairs."""
    rng = np.random.default_rng(seed)
    means = log_ratios[rng.integers(0, log_ratios.size, (resamples, log_ratios.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return math.exp(low), math.exp(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6, help="interleaved pairs per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()
    record: dict[str, object] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": len(os.sched_getaffinity(0)),
        "load_average_at_start": list(os.getloadavg()), "rule": "faster/slower where the 95 % bootstrap interval of "
        "the geometric mean ratio (threads / one thread) excludes 1, level otherwise", "sizes": {},
    }
    print(f"bench_threads: {record['cpus']} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'n':>10} | {'one thread (s)':>15} | {'threads (s)':>12} | {'ratio':>6} [95 % interval] | verdict | peak MB (one, threads)")
    for n in args.sizes:
        rows = []
        for k in range(args.pairs):
            order = ("one", "threads") if k % 2 == 0 else ("threads", "one")
            got = {side: measure(n, "1" if side == "one" else None) for side in order}
            got["load"] = os.getloadavg()[0]  # type: ignore[assignment]
            rows.append(got)
        one = np.array([r["one"]["seconds"] for r in rows])
        thr = np.array([r["threads"]["seconds"] for r in rows])
        log_r = np.log(thr / one)
        ratio = math.exp(log_r.mean())
        low, high = bootstrap_interval(log_r)
        verdict = "faster" if high < 1 else "slower" if low > 1 else "level"
        same = all(r["one"]["value"] == r["threads"]["value"] for r in rows)
        peak = (max(r["one"]["peak_mb"] for r in rows), max(r["threads"]["peak_mb"] for r in rows))
        print(f"{n:>10} | {np.median(one):15.2f} | {np.median(thr):12.2f} | {ratio:6.2f} [{low:.2f}, {high:.2f}] | "
              f"{verdict:>7} | {peak[0]:.0f}, {peak[1]:.0f}{'' if same else ' (values differ!)'}")
        record["sizes"][str(n)] = {  # type: ignore[index]
            "pairs": rows, "ratio": ratio, "interval": [low, high], "verdict": verdict, "same_values": same,
        }
        if args.json:
            Path(args.json).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
