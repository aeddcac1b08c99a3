"""The absolute-loss remap with and without the allocator warm-up (``dpbayes.core.allocator``), interleaved.

Run by hand: ``.venv/bin/python benchmarks/bench_allocator.py [--pairs 8] [--n 10000000] [--json FILE]``.
Each measurement is the first call of ``beta_posterior_median_remap(n, 1, 1, 1)`` (the remap behind
``OptimalProportionRelease(n, 1, loss="absolute", estimand="theta")``) in a fresh process, after a warm-up
at ``n = 1000``: once as the library runs it ("warm": :func:`dpbayes.core.allocator.warm_allocator` first)
and once with that call replaced by nothing ("cold"), in the order A B, B A, ... so that a drift of the
machine's load falls on both. Per pair the ratio of wall-clock times (warm / cold; below 1: the warm-up
helps); over the pairs the geometric mean and a 95 % percentile bootstrap interval (10,000 resamples of
the pairs, seed 0). The verdict rule, declared here: "faster" or "slower" only where the interval
excludes 1, "level" otherwise. Beside each time: the process's CPU time, the growth of its peak resident
memory over the call (``VmHWM`` after resetting it, Linux) and the Bayes risk (the same on both sides).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench_threads import bootstrap_interval

CHILD = """
import json, sys, time
import scipy.signal  # noqa: F401  (imported lazily by the remap: not the call's cost)
from dpbayes.ubapp import median_remap

if sys.argv[1] == "cold":
    median_remap.warm_allocator = lambda: None
median_remap.beta_posterior_median_remap(1000, 1.0, 1.0, 1.0)


def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))


with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
rss0 = status("VmRSS")
t0, c0 = time.perf_counter(), time.process_time()
_, risk = median_remap.beta_posterior_median_remap(int(sys.argv[2]), 1.0, 1.0, 1.0)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                  "peak_mb": (status("VmHWM") - rss0) / 1e6, "risk": risk}))
"""


def measure(side: str, n: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, side, str(n)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8, help="interleaved pairs")
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()
    record: dict[str, object] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": len(os.sched_getaffinity(0)),
        "libc": " ".join(platform.libc_ver()), "n": args.n, "load_average_at_start": list(os.getloadavg()),
        "rule": "faster/slower where the 95 % bootstrap interval of the geometric mean ratio (warm / cold) "
        "excludes 1, level otherwise",
    }
    rows = []
    for k in range(args.pairs):
        order = ("cold", "warm") if k % 2 == 0 else ("warm", "cold")
        got: dict[str, object] = {side: measure(side, args.n) for side in order}
        got["load"] = os.getloadavg()[0]
        rows.append(got)
    cold = np.array([r["cold"]["seconds"] for r in rows])  # type: ignore[index]
    warm = np.array([r["warm"]["seconds"] for r in rows])  # type: ignore[index]
    log_r = np.log(warm / cold)
    ratio = math.exp(log_r.mean())
    low, high = bootstrap_interval(log_r)
    verdict = "faster" if high < 1 else "slower" if low > 1 else "level"
    same = all(r["cold"]["risk"] == r["warm"]["risk"] for r in rows)  # type: ignore[index]
    peaks = {side: [float(np.min([r[side]["peak_mb"] for r in rows])), float(np.max([r[side]["peak_mb"] for r in rows]))]  # type: ignore[index]
             for side in ("cold", "warm")}
    cpu = {side: float(np.median([r[side]["cpu_seconds"] for r in rows])) for side in ("cold", "warm")}  # type: ignore[index]
    record.update(pairs=rows, ratio=ratio, interval=[low, high], verdict=verdict, same_risk=same, peak_mb=peaks,
                  median_seconds={"cold": float(np.median(cold)), "warm": float(np.median(warm))}, median_cpu_seconds=cpu)
    print(f"bench_allocator: n = {args.n}, {record['cpus']} CPUs, {record['libc']}")
    print(f"cold {np.median(cold):.2f} s (CPU {cpu['cold']:.2f} s, peak {peaks['cold'][0]:.0f}-{peaks['cold'][1]:.0f} MB); "
          f"warm {np.median(warm):.2f} s (CPU {cpu['warm']:.2f} s, peak {peaks['warm'][0]:.0f}-{peaks['warm'][1]:.0f} MB)")
    print(f"warm / cold {ratio:.2f} [{low:.2f}, {high:.2f}]: {verdict}{'' if same else ' (risks differ!)'}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
