"""The decision rules of ``benchmarks/bench_smc.py`` (no sampler runs, no ``particles`` needed).

A verdict "ahead"/"behind" only where the bootstrap interval excludes 1; a level not reached on the
ladder is "not reached", never read off a fitted law; the interval is a percentile bootstrap over
seeds that stays conservative when a resample does not reach a level.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_smc.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_smc_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        ((0.5, 1.5), "level"),
        ((0.5, 1.0), "level"),  # 1 is in the closed interval
        ((1.0, 2.0), "level"),
        ((0.0, float("inf")), "level"),
        ((0.5, 0.99), "ahead"),
        ((1.01, 3.0), "behind"),
        ((1.2, float("inf")), "behind"),
        (None, "not reached"),
    ],
)
def test_verdict_rule(bench, interval, expected):
    assert bench.verdict(interval) == expected


def test_no_verdict_with_an_interval_containing_one(bench):
    rng = np.random.default_rng(0)
    for _ in range(2000):
        lo, hi = np.sort(rng.uniform(0.2, 2.0, size=2))
        word = bench.verdict((lo, hi))
        if lo <= 1.0 <= hi:
            assert word == "level"
        else:
            assert word == ("ahead" if hi < 1.0 else "behind")
    with pytest.raises(ValueError):
        bench.verdict((1.5, 0.5))


def test_level_beyond_the_ladder_is_not_reached(bench):
    ns = [100, 200, 400]
    errors = [1 / np.sqrt(n) for n in ns]  # exactly a N^(-1/2) law: a fit would "reach" 0.02 at N = 2500
    assert bench.crossing(ns, errors, 0.02) == ("not reached", None)
    status, low, high = bench.time_bounds(ns, errors, [1.0, 2.0, 4.0], 0.02)
    assert status == "not reached" and low == 4.0 and high == float("inf")
    # within the ladder, log-log interpolation of an exact power law is exact
    status, n = bench.crossing(ns, errors, 0.06)
    assert status == "reached" and n == pytest.approx((1 / 0.06) ** 2)
    assert bench.crossing(ns, errors, 0.2) == ("below ladder", None)
    # noise: a dip below the level followed by a rung above it does not count
    status, n = bench.crossing(ns, [0.09, 0.12, 0.05], 0.1)
    assert status == "reached" and 200 < n < 400
    assert bench.crossing(ns, [0.2, 0.05, 0.15], 0.1) == ("not reached", None)


def test_time_is_never_extrapolated(bench):
    ns, times = [100, 200, 400], [1.0, 2.0, 4.0]
    assert bench.time_at(ns, times, 283.0) == pytest.approx(2.83)
    for n in (50.0, 401.0, 2500.0):
        with pytest.raises(ValueError, match="no extrapolation"):
            bench.time_at(ns, times, n)


def test_percentile_interval(bench):
    values = np.arange(1.0, 101.0)
    assert bench.percentile_interval(values, confidence=0.9) == (5.0, 95.0)
    lows = np.full(40, 1.0)
    highs = lows.copy()
    highs[:3] = np.inf  # 3 of 40 censored upwards: more than 2.5 %, the upper end is unbounded
    assert bench.percentile_interval(lows, highs) == (1.0, float("inf"))
    highs[:3] = 1.0
    highs[0] = np.inf  # 1 of 40: within the 2.5 % tail
    assert bench.percentile_interval(lows, highs) == (1.0, 1.0)


def test_ratio_bounds(bench):
    assert bench.ratio_bounds(("reached", 2.0, 2.0), ("reached", 4.0, 4.0)) == (0.5, 0.5)
    assert bench.ratio_bounds(("not reached", 3.0, np.inf), ("reached", 4.0, 4.0)) == (0.75, np.inf)
    assert bench.ratio_bounds(("reached", 2.0, 2.0), ("not reached", 5.0, np.inf)) == (0.0, 0.4)
    assert bench.ratio_bounds(("below ladder", 0.0, 1.0), ("reached", 4.0, 4.0)) == (0.0, 0.25)


def _side(rng, ns, a, cost, n_seeds, spread):
    """Synthetic runs: error a N^(-1/2) with seed noise, time cost * N with seed noise."""
    ns_a = np.asarray(ns, dtype=float)
    errs = a / np.sqrt(ns_a)[None, :, None] * rng.standard_normal((n_seeds, ns_a.size, 2))
    times = cost * ns_a[None, :] * np.exp(spread * rng.standard_normal((n_seeds, ns_a.size)))
    return {"ladder": list(ns), "errors": errs, "times": times}


def test_compare_declares_verdicts_only_on_intervals_excluding_one(bench):
    rng = np.random.default_rng(1)
    ns = [100, 200, 400, 800, 1600, 3200]
    for spread, n_seeds in ((0.02, 40), (0.8, 4)):
        ours = _side(rng, ns, 1.0, 0.5e-3, n_seeds, spread)
        peer = _side(rng, ns, 1.0, 1.0e-3, n_seeds, spread)
        peer["errors"] = ours["errors"].copy()  # same accuracy: the ratio is the cost ratio, about 0.5
        res = bench.compare(ours, peer, [0.1, 0.05, 0.02, 0.005], 400, np.random.default_rng(2))
        for level, r in res.items():
            if r["ratio"] is None:
                assert r["interval"] is None and r["verdict"] in ("not reached", "below ladder")
                continue
            lo, hi = r["interval"]
            assert lo <= r["ratio"] <= hi
            if lo <= 1.0 <= hi:
                assert r["verdict"] == "level", level
            else:
                assert r["verdict"] in ("ahead", "behind")
        # 0.005 needs N = 40,000 on this law: past the ladder's top, so no ratio
        assert res["0.005"]["verdict"] == "not reached" and res["0.005"]["ours"]["time"] is None
        assert res["0.005"]["ratio"] is None and res["0.005"]["ratio_bounds_on_ladder"] == [0.0, None]
        if spread < 0.1:
            assert res["0.05"]["verdict"] == "ahead"


def test_peer_version_and_superseded(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench.importlib.metadata, "version", lambda name: {"particles": "0.4"}[name])
    assert bench.peer_version() == "0.4"
    out = tmp_path / "smc.json"
    assert bench.superseded(out) is None
    out.write_text(json.dumps({"machine": {"particles": "0.3alpha"}, "settings": []}))
    sup = bench.superseded(out)
    assert sup["reason"] and sup["results"]["machine"]["particles"] == "0.3alpha"
    out.write_text(json.dumps({"format": bench.FORMAT, "superseded": sup, "settings": []}))
    assert bench.superseded(out) == sup
