"""Construction time and peak memory of the releases, of ``ubapp_exact`` and of the counting metrics.

Run by hand: ``.venv/bin/python benchmarks/bench_release.py`` (about 10 minutes on 2 cores;
``--quick`` stops at n = 10**5). Every case runs in a fresh Python process, so that its peak
memory is its own: the table gives the wall-clock time of the call (best of ``--repeat`` calls in
that process, 1 for the slow ones; the process's CPU time beside it, which a loaded machine inflates less) and the growth of the process's peak resident memory over the
call (``VmHWM`` after minus ``VmRSS`` before, from ``/proc/self/status``). ``new`` is the library
as it is; ``dense`` the reference each test compares with (the ``(n + 1)^2`` matrix of the
release and of ``ubapp_exact``, the sums over all ``n + 1`` counts for the counting metrics), run
where it fits in a few seconds and a few GB. ``MC`` is the paper's Monte Carlo (100,000 runs) of
chapter 4, printed beside the exact pair. The growth exponent is the slope of log(time) against
log(n) over the last three sizes of each column.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

CASES = {
    # name: (description, sizes of "new", sizes of "dense")
    "proportion-squared": ("OptimalProportionRelease, Beta(1, 1), squared loss, eps = 1", [10**k for k in range(2, 8)], [100, 1000, 5000]),
    "proportion-absolute": ("OptimalProportionRelease, Beta(1, 1), absolute loss, eps = 1", [10**k for k in range(2, 8)], [100, 1000]),
    "proportion-absolute-prior": ("the same (absolute loss) with a Beta(2, 3) prior", [10**k for k in range(2, 8)], [100, 1000]),
    "proportion-absolute-eps0.1": ("the same (absolute loss, levels) at eps = 0.1", [10**5, 10**6], []),
    "proportion-absolute-eps0.01": ("the same (absolute loss, levels) at eps = 0.01", [10**5, 10**6], []),
    "proportion-absolute-window": ("the same by the per-z window method (the previous O(n/eps) code, kept as reference)", [10**k for k in range(2, 6)], []),
    "count-laplace": ("release_count_laplace (p = 0.3, eps = 1): construction, one draw, exact MAE", [10**k for k in range(2, 8)], [100, 1000, 10**4, 10**5]),
    "counting-pair": ("exact mean_abs_error + prob_lower_error ('mean', p = 0.3, eps = 1)", [10**k for k in range(2, 8)], [100, 1000, 10**4, 10**5]),
    "counting-mc": ("monte_carlo_metrics, 100,000 runs ('mean', p = 0.3, eps = 1)", [10**k for k in range(2, 8)], []),
    "table-5": ("release_table: five binary columns of n records (p = 0.3) in, epsilon = 1 in all, no prior (the records are built before the clock starts)", [10**k for k in range(2, 8)], []),
    "proportion-prior": ("release_proportion, Beta(2, 3) prior, the data set's proportion, eps = 1: posterior means, exact Bayes and worst risks, one draw (dense: the one-array sums of the previous code)", [10**k for k in range(2, 8)], [10**5, 10**6, 10**7]),
    "proportion-theta": ("release_proportion, Beta(2, 3) prior, estimand theta (chapter 1's), squared loss, eps = 1: posterior means, exact Bayes, privacy and worst risks over theta, one draw", [10**k for k in range(2, 8)], []),
    "count-geometric": ("release_count_geometric (eps = 1, no prior): construction, one draw, exact worst risk", [10**k for k in range(2, 8)], []),
    "ubapp-grid": ("ubapp_exact on the paper's 5000-point grid, squared loss, eps = 1 (n = K)", [100, 1000, 5000, 20000], [100, 1000, 5000]),
}


def _status(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return float(line.split()[1]) * 1024.0
    return float("nan")


def run_case(name: str, n: int, variant: str, repeat: int) -> dict[str, float]:
    """Run one case in this process (called in a child); returns seconds and peak memory growth."""
    import numpy as np

    from dpbayes.counting import model as counting, metrics as counting_metrics
    from dpbayes.ubapp import median_remap, optimal as ubapp
    from dpbayes.release import statistic as release
    from dpbayes.release.table import release_table

    built: dict[int, dict[str, object]] = {}

    def records(size: int) -> dict[str, object]:
        """Five 0/1 columns of ``size`` records (NumPy booleans), built once per size."""
        if size not in built:
            rng = np.random.default_rng(size)
            built[size] = {f"a{j}": rng.random(size) < 0.3 for j in range(5)}
        return built[size]

    def call() -> object:
        nonlocal n
        if name.startswith("proportion-absolute-eps"):
            return release.OptimalProportionRelease(n, float(name.removeprefix("proportion-absolute-eps")), loss="absolute", estimand="theta").bayes_risk
        if name == "proportion-absolute-window":
            return median_remap.beta_posterior_median_remap_window(n, 1.0, 1.0, 1.0)[1]
        if name in ("proportion-squared", "proportion-absolute", "proportion-absolute-prior"):
            loss = "squared" if name.endswith("squared") else "absolute"
            prior = (2.0, 3.0) if name.endswith("prior") else (1.0, 1.0)
            if variant == "new":
                return release.OptimalProportionRelease(n, 1.0, prior=prior, loss=loss, estimand="theta").bayes_risk
            ref = release.OptimalProportionRelease.__new__(release.OptimalProportionRelease)
            ref.n, ref.epsilon, ref.loss, ref.estimand = n, 1.0, loss, "theta"
            ref._init_beta_dense(*prior)
            return ref.bayes_risk
        if name == "table-5":
            return release_table(records(n), list(records(n)), 1.0).attributes[0].worst_risk
        if name == "proportion-prior":
            if variant == "new":
                return release.release_proportion(int(0.3 * n), n, 1.0, prior=(2.0, 3.0)).worst_risk
            from dpbayes.choosing import candidates as ec

            bias, msd = ec.candidate_moments("geometric-bayes", n, 1.0, (2.0, 3.0), "proportion")
            shift = ec._geometric_count_posterior_mean(ec.CountPrior.beta(2.0, 3.0).log_weights(n), 1.0)
            ec.bayes_risk(bias, msd, (2.0, 3.0), "proportion")
            return float(np.max(msd)) + 0.0 * float(shift[0])
        if name == "proportion-theta":
            return release.release_proportion(int(0.3 * n), n, 1.0, prior=(2.0, 3.0), estimand="theta").worst_risk
        if name == "count-geometric":
            return release.release_count_geometric(int(0.3 * n), n, 1.0).worst_risk
        if name == "count-laplace":
            if variant == "new":
                return release.release_count_laplace(int(0.3 * n), n, 1.0, p=0.3).mean_abs_error
            counting_metrics._model_posterior.cache_clear()
            counting._Posterior.build(n, 0.3, 1.0).mean(np.array([0.3 * n]))  # the old release: all n + 1 counts
            return counting_metrics._exact_metric("mean", n, 0.3, 1.0, "abs", window=False)
        if name == "counting-pair":
            counting_metrics._model_posterior.cache_clear()  # each timed call builds its posterior (shared by the pair)
            window = variant == "new"
            return counting_metrics._exact_metric("mean", n, 0.3, 1.0, "abs", window) + counting_metrics._exact_metric("mean", n, 0.3, 1.0, "prob", window)
        if name == "counting-mc":
            return counting_metrics.monte_carlo_metrics(n, 0.3, 1.0, 100_000, np.random.default_rng(0), estimators=("mean",))["mean"]["mae"]
        theta = np.linspace(0.0, 1.0, 5000)
        solve = ubapp.ubapp_exact if variant == "new" else ubapp.ubapp_exact_dense
        return solve(n, 1.0, theta).risk

    # warm-up at a tiny size: imports (scipy.signal, OpenDP) and first-call costs are not the case's
    import scipy.signal  # noqa: F401  (the windowed paths import it lazily, above n = 2000)

    n_case, n = n, 3
    call()
    n = n_case
    if name == "table-5":
        built.clear()
        records(n)  # the input is in memory before the clock and the memory baseline start
    times, cpu = [], []
    try:  # reset the peak to the current RSS (Linux >= 4.0): a peak while the input was built is not the call's
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rss0 = _status("VmRSS")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        value = call()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if times[-1] > 2.0:
            break
    return {"seconds": min(times), "cpu_seconds": min(cpu), "peak_mb": (_status("VmHWM") - rss0) / 1e6, "value": float(value)}  # type: ignore[arg-type]


def child(name: str, n: int, variant: str, repeat: int, timeout: float) -> dict[str, float] | None:
    cmd = [sys.executable, __file__, "--child", json.dumps([name, n, variant, repeat])]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"seconds": float("inf"), "peak_mb": float("nan"), "value": float("nan")}
    except subprocess.CalledProcessError as exc:
        print(f"  {name} n={n} {variant}: failed: {exc.stderr.strip().splitlines()[-1]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def exponent(sizes: list[int], seconds: list[float]) -> str:
    pts = [(math.log(n), math.log(s)) for n, s in zip(sizes, seconds) if math.isfinite(s) and s > 0][-3:]
    if len(pts) < 2:
        return "-"
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return f"{slope:.2f}"


def fmt(res: dict[str, float] | None) -> str:
    if res is None:
        return f"{'failed':>36}"
    if not math.isfinite(res["seconds"]):
        return f"{'timeout':>36}"
    return f"{res['seconds']:9.3f} s {res['peak_mb']:7.0f} MB ({res.get('cpu_seconds', float('nan')):.3f} s CPU)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at n = 10**5")
    parser.add_argument("--repeat", type=int, default=3, help="calls per case (best kept); 1 above 2 s")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case before it is reported as a timeout")
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), help="run only these cases")
    parser.add_argument("--json", help="also write every measurement, with the machine and the date, to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, n, variant, repeat = json.loads(args.child)
        print(json.dumps(run_case(name, n, variant, repeat)))
        return
    import os
    import platform

    import numpy
    import scipy

    started = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    machine = {
        "node": platform.node(), "machine": platform.machine(), "processor": _cpu_model(), "cpus": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()), "python": platform.python_version(),
        "numpy": numpy.__version__, "scipy": scipy.__version__,
        # numba's kernels (dpbayes.core.compiled) or the NumPy/SciPy path (DPBAYES_NO_NUMBA=1 or no numba)
        "compiled_kernels": __import__("dpbayes.core.compiled", fromlist=["compiled_enabled"]).compiled_enabled(),
    }
    record: dict[str, object] = {"started_utc": started, "machine": machine, "args": vars(args), "cases": {}}
    print(f"bench_release: compiled kernels {'on' if machine['compiled_kernels'] else 'off'}; "
          f"{platform.node()} {platform.machine()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f}")
    print("time: best of the calls in a fresh process; memory: growth of the peak RSS over the call")
    mc: dict[int, dict[str, float] | None] = {}
    pair: dict[int, float] = {}
    pair_cpu: dict[int, float] = {}
    for name, (what, sizes, dense_sizes) in CASES.items():
        if args.cases and name not in args.cases:
            continue
        if args.quick:
            sizes = [n for n in sizes if n <= 10**5]
            dense_sizes = [n for n in dense_sizes if n <= 10**5]
        print(f"\n== {name}: {what}")
        print(f"{'n':>10} | {'new':>36} | {'dense reference':>36} | {'dense/new':>9} | value (new; dense)")
        new_s: list[float] = []
        dense_s: list[float] = []
        for n in sizes:
            res = child(name, n, "new", args.repeat, args.timeout)
            ref = child(name, n, "dense", args.repeat, args.timeout) if n in dense_sizes else None
            new_s.append(res["seconds"] if res else float("nan"))
            if n in dense_sizes and ref is not None:
                dense_s.append(ref["seconds"])
            if name == "counting-mc":
                mc[n] = res
            ratio = f"{ref['seconds'] / res['seconds']:9.1f}" if res and ref and math.isfinite(ref["seconds"]) else f"{'-':>9}"
            values = f"{res['value']:.12g}" if res else "-"
            if ref is not None and math.isfinite(ref["value"]):
                values += f"; {ref['value']:.12g}"
            print(f"{n:>10} | {fmt(res)} | {fmt(ref) if n in dense_sizes else f'{chr(45):>36}'} | {ratio} | {values}")
            rows = record["cases"].setdefault(name, {"what": what, "rows": []})  # type: ignore[attr-defined]
            rows["rows"].append({"n": n, "new": res, "dense": ref})
            if args.json:  # written after every row: a long run that is stopped keeps what it measured
                record["finished_utc"] = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
                with open(args.json, "w") as fh:
                    json.dump(record, fh, indent=1, default=str)
        print(f"growth exponent (time ~ n^k, last three sizes): new {exponent(sizes, new_s)}, "
              f"dense {exponent([n for n in sizes if n in dense_sizes], dense_s)}")
        if name == "counting-pair":
            pair = dict(zip(sizes, new_s))
            pair_cpu = {r["n"]: r["new"].get("cpu_seconds", float("nan")) for r in record["cases"][name]["rows"] if r["new"]}  # type: ignore[index]
    if mc:
        print("\n== exact pair (new) beside the paper's Monte Carlo (100,000 runs, ~3 digits)")
        print(f"{'n':>10} | {'exact pair':>11} | {'MC':>11} | MC/exact | CPU: exact pair, MC, MC/exact")
        for n, res in mc.items():
            if res and n in pair:
                cpu = f"{pair_cpu[n]:.3f} s, {res['cpu_seconds']:.3f} s, {res['cpu_seconds'] / pair_cpu[n]:.2f}"
                print(f"{n:>10} | {pair[n]:9.3f} s | {res['seconds']:9.3f} s | {res['seconds'] / pair[n]:8.2f} | {cpu}")


if __name__ == "__main__":
    main()
