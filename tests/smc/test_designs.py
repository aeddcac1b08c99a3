"""Fixed and two-stage designs: their exact Fisher information and the baselines on the study's replicates (dpbayes.smc.designs)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.smc import samplers as smc, study as smc_study, truncation
from dpbayes.smc import designs as sd


def test_fixed_interval_fisher_is_theorem3_scaled() -> None:
    F = sd.fixed_interval_fisher(1000, 50.0, np.sqrt(10.0), 2.0, 1.0)
    base = truncation.fisher_information(-2.0, 2.0, 1.0)
    assert np.allclose(F, 1000 * base / 10.0, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="halfwidth"):
        sd.fixed_interval_fisher(10, 0.0, 1.0, 0.0, 1.0)


def test_design_fisher_equals_the_sum_over_releases() -> None:
    lo = np.array([0.0, 0.0, -1.0, 0.0])
    hi = np.array([1.0, 1.0, 2.0, 1.0])
    a = sd.design_fisher(lo, hi, 0.3, 1.2, 2.0)
    b = smc.realised_fisher_information(lo, hi, 0.3, 1.2, 2.0)
    assert np.allclose(a, b, rtol=1e-12)


def test_two_stage_fisher_adds_the_stages() -> None:
    F = sd.two_stage_fisher(1000, 100, 50.0, 3.0, (20.0, 80.0), 51.0, 2.5, 1.0, 1.0)
    F1 = truncation.fisher_information_normal(50.0, 3.0, 20.0, 80.0, 1.0)
    F2 = truncation.fisher_information_normal(50.0, 3.0, 48.5, 53.5, 1.0)
    assert np.allclose(F, 100 * F1 + 900 * F2)
    with pytest.raises(ValueError, match="n_pilot"):
        sd.two_stage_fisher(10, 10, 0.0, 1.0, (-5.0, 5.0), 0.0, 1.0, 1.0, 1.0)


def test_two_stage_pilot_finds_the_truth_with_informative_releases() -> None:
    rng = np.random.default_rng(3)
    x = 50.0 + 3.0 * rng.standard_normal(300)
    m, c = sd.two_stage_pilot(x, 10.0, rng.laplace(size=300), (35.0, 65.0), rng, n_particles=200)
    assert m == pytest.approx(50.0, abs=1.0) and c == pytest.approx(3.0, abs=1.0)


def test_fisher_information_is_smaller_for_smaller_eps() -> None:
    # paper Section 3.2: "F is smaller for a smaller eps" -- checked on both diagonal entries
    for a, b in [(-0.06, 0.06), (-1.0, 1.0), (-10.0, 10.0), (-0.5, 1.5)]:
        F = [truncation.fisher_information(a, b, e) for e in (0.5, 1.0, 2.0, 5.0, 10.0)]
        for lo, hi in zip(F, F[1:]):
            assert lo[0, 0] < hi[0, 0] and lo[1, 1] < hi[1, 1]


def test_baseline_replicate_sees_the_study_replicates_data() -> None:
    # common random numbers: the fixed +-10 sigma design of baseline_replicate releases exactly what the
    # simulation study's MCMC saw in the same replicate, so its posterior mean is the exact one of those releases
    from dpbayes.smc import mcmc

    cfg = smc_study.StudyConfig(n=80, n_particles=10, mu_true=50.0, sigma_true=np.sqrt(10.0), nonadaptive_halfwidth=10.0,
                                methods=("MCMC",), mcmc_iter=200, mcmc_burn_in=50, seed=3)
    rep = smc_study.run_replicate(cfg, 5.0, 0.54, 2, 1)
    y, lo, hi = rep.releases["MCMC"]
    q = mcmc.quadrature_posterior(y, lo, hi, 5.0, n_grid=13)
    base = sd.baseline_replicate(80, 50.0, np.sqrt(10.0), 5.0, 0.54, 2, 1, seed=3, n_grid=13)
    assert base.estimates["fixed-k10"] == pytest.approx((q.mean_mu, q.mean_sigma), rel=1e-12)
    assert set(base.estimates) == set(sd.BASELINE_DESIGNS)
    assert np.allclose(base.fisher["fixed-k2"], sd.fixed_interval_fisher(80, 50.0, np.sqrt(10.0), 2.0, 5.0))
    assert base.edge_mass < 1e-4


def test_baseline_study_is_ordered_and_checks_its_grids() -> None:
    out = sd.baseline_study(40, 0.0, 1.0, [5.0, 10.0], [0.5, 0.9], 1, seed=2, n_grid=9)
    assert [(r.eps_index, r.run) for r in out] == [(0, 0), (1, 0)]
    with pytest.raises(ValueError, match="b_grid"):
        sd.baseline_study(40, 0.0, 1.0, [5.0], [0.5, 0.9], 1)
    with pytest.raises(ValueError, match="pilot_fraction"):
        sd.baseline_replicate(40, 0.0, 1.0, 5.0, 0.5, 0, 0, pilot_fraction=1.5)


def test_mirror_intervals_flip_about_the_centre() -> None:
    lower, upper = sd.mirror_intervals(50.0, 2.0, (-0.5, 1.5), np.array([False, True, False]))
    assert lower.tolist() == [49.0, 47.0, 49.0] and upper.tolist() == [53.0, 51.0, 53.0]
    with pytest.raises(ValueError, match="ab"):
        sd.mirror_intervals(0.0, 1.0, (1.0, 1.0), np.array([True]))
    with pytest.raises(ValueError, match="flip"):
        sd.mirror_intervals(0.0, 1.0, (0.0, 1.0), np.array([0, 1]))
    with pytest.raises(ValueError, match="sigma"):
        sd.mirror_intervals(0.0, -1.0, (0.0, 1.0), np.array([True]))


def test_mirror_design_cancels_the_off_diagonal_information() -> None:
    # the two orientations of an off-centre interval have the same diagonal information and opposite
    # off-diagonals (N(0, 1) is symmetric), so half of each gives design_criteria's "mirror" information
    from dpbayes.smc import design_criteria

    a, b, eps, n = -0.3, 1.7, 1.0, 10
    up = sd.design_fisher(*sd.mirror_intervals(0.0, 1.0, (a, b), np.zeros(n, dtype=bool)), 0.0, 1.0, eps)
    down = sd.design_fisher(*sd.mirror_intervals(0.0, 1.0, (a, b), np.ones(n, dtype=bool)), 0.0, 1.0, eps)
    assert np.allclose(np.diag(up), np.diag(down), rtol=1e-10)
    assert up[0, 1] == pytest.approx(-down[0, 1], rel=1e-10) and abs(up[0, 1]) > 0.1 * np.sqrt(up[0, 0] * up[1, 1])
    half = sd.design_fisher(*sd.mirror_intervals(0.0, 1.0, (a, b), np.arange(n) % 2 == 0), 0.0, 1.0, eps)
    assert np.allclose(half / n, design_criteria.design_information(a, b, eps, "mirror"), rtol=1e-10, atol=1e-12)


def test_baseline_replicate_mirror_coins_are_fair_and_do_not_touch_the_study_streams() -> None:
    coins = sd._mirror_coins(4000, 1, 0, 0)
    assert abs(coins.mean() - 0.5) < 0.03  # 4 binomial sd
    assert not np.array_equal(coins, sd._mirror_coins(4000, 1, 0, 1))
    with pytest.raises(ValueError, match="ab"):
        sd.baseline_replicate(40, 0.0, 1.0, 5.0, 0.5, 0, 0, mirror_ab=(1.0, 0.0))
    with pytest.raises(ValueError, match="mirror_ab"):
        sd.baseline_study(40, 0.0, 1.0, [5.0], [0.5], 1, mirror_ab=(0.0, 1.0))
