"""The fair two-stage baseline: the study's replicate, the pilot's uncertainty (dpbayes.smc.fair_baseline)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.smc import designs as smc_designs
from dpbayes.smc import fair_baseline as smc_fair_baseline


def test_fair_two_stage_shares_the_replicate_and_widens_by_the_pilot_sd():
    r = smc_fair_baseline.fair_baseline_replicate(80, 10.0, 2.0, 2.0, 0, 0, seed=3, n_grid=11)
    assert set(r.estimates) == set(smc_fair_baseline.FAIR_DESIGNS) == set(r.cr)
    # the unwidened design and the baseline study's two-stage design see the same pilot and releases
    b = smc_designs.baseline_replicate(80, 10.0, 2.0, 2.0, 0.5, 0, 0, seed=3, n_grid=11)
    assert r.estimates["twostage-k2"] == pytest.approx(b.estimates["twostage-k2"], rel=1e-9)
    assert r.estimates["fixed-k2"] == pytest.approx(b.estimates["fixed-k2"], rel=1e-9)
    m, s_m, c = r.pilot
    assert (m, c) == pytest.approx(b.pilot, rel=1e-12) and s_m > 0
    # a wider stage-2 interval at the same centre: z -> 0 gives back the unwidened design
    r0 = smc_fair_baseline.fair_baseline_replicate(80, 10.0, 2.0, 2.0, 0, 0, seed=3, z=1e-12, n_grid=11)
    assert r0.estimates["twostage-k2-wide"] == pytest.approx(r0.estimates["twostage-k2"], rel=1e-6)
    assert all(np.isfinite(v).all() and min(v) > 0 for v in r.cr.values())


def test_fair_study_orders_and_seeds_replicates():
    out = smc_fair_baseline.fair_baseline_study(40, 10.0, 2.0, [2.0, 5.0], 2, seed=1, n_grid=9)
    assert [(r.eps_index, r.run) for r in out] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    one = smc_fair_baseline.fair_baseline_replicate(40, 10.0, 2.0, 5.0, 1, 1, seed=1, n_grid=9)
    assert out[3].estimates == one.estimates
    with pytest.raises(ValueError, match="z"):
        smc_fair_baseline.fair_baseline_replicate(40, 10.0, 2.0, 5.0, 0, 0, z=0.0)
