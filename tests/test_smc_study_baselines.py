"""Tests of the baseline and calibration helpers in dpbayes.smc_study: error summaries, credible intervals, baseline designs' information."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes import smc, smc_study, truncation
from dpbayes import smc_study as sb


def test_error_summary_known_values() -> None:
    out = sb.error_summary([1.0, 2.0, 6.0], 2.0)
    assert out["rmse"] == pytest.approx(np.sqrt((1 + 0 + 16) / 3))
    assert out["mae"] == pytest.approx(5 / 3)
    assert out["medae"] == pytest.approx(1.0)


def test_error_summary_one_outlier_moves_rmse_not_median() -> None:
    base = sb.error_summary([51.0, 52.0, 50.0, 51.5], 51.0)
    wild = sb.error_summary([51.0, 52.0, 50.0, 535.0], 51.0)
    assert wild["rmse"] > 100 * base["rmse"]
    assert wild["medae"] == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], [np.nan], [[1.0, 2.0]]])
def test_error_summary_rejects_bad_estimates(bad) -> None:
    with pytest.raises(ValueError, match="estimates"):
        sb.error_summary(bad, 0.0)


def test_weighted_quantile_matches_numpy_for_equal_weights() -> None:
    v = np.random.default_rng(0).standard_normal(101)
    p = [0.05, 0.5, 0.95]
    assert np.allclose(sb.weighted_quantile(v, p), np.quantile(v, p, method="inverted_cdf"))
    assert np.allclose(sb.weighted_quantile(v, p, np.ones(101)), np.quantile(v, p, method="inverted_cdf"))


def test_weighted_quantile_follows_the_weights() -> None:
    v = np.array([0.0, 1.0, 2.0])
    assert sb.weighted_quantile(v, [0.5], [0.0, 0.0, 1.0])[0] == 2.0
    assert sb.weighted_quantile(v, [0.5], [0.6, 0.2, 0.2])[0] == 0.0
    with pytest.raises(ValueError, match="weights"):
        sb.weighted_quantile(v, [0.5], [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="probs"):
        sb.weighted_quantile(v, [1.5])


def test_credible_interval_of_a_normal_sample() -> None:
    v = np.random.default_rng(1).standard_normal(200_000)
    lo, hi = sb.credible_interval(v, level=0.9)
    assert lo == pytest.approx(-1.6449, abs=0.02) and hi == pytest.approx(1.6449, abs=0.02)
    with pytest.raises(ValueError, match="level"):
        sb.credible_interval(v, level=1.0)


def test_coverage() -> None:
    assert sb.coverage([[0, 1], [2, 3], [0.5, 4]], 0.75) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="lower <= upper"):
        sb.coverage([[1, 0]], 0.5)
    with pytest.raises(ValueError, match="intervals"):
        sb.coverage([1, 2], 0.5)


def test_credible_intervals_of_a_known_posterior_cover_at_their_level() -> None:
    # conjugate normal mean, known sd: posterior draws from N(xbar, 1/n); the 90 % interval of each
    # of many replicates covers the truth in about 90 % of them (binomial sd 0.0095 at 1000 reps)
    rng = np.random.default_rng(2)
    n, reps = 25, 1000
    ivs = []
    for _ in range(reps):
        xbar = 3.0 + rng.standard_normal() / np.sqrt(n)
        ivs.append(sb.credible_interval(xbar + rng.standard_normal(4000) / np.sqrt(n), level=0.9))
    assert sb.coverage(ivs, 3.0) == pytest.approx(0.9, abs=0.035)


def test_fixed_interval_fisher_is_theorem3_scaled() -> None:
    F = sb.fixed_interval_fisher(1000, 50.0, np.sqrt(10.0), 2.0, 1.0)
    base = truncation.fisher_information(-2.0, 2.0, 1.0)
    assert np.allclose(F, 1000 * base / 10.0, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="halfwidth"):
        sb.fixed_interval_fisher(10, 0.0, 1.0, 0.0, 1.0)


def test_design_fisher_equals_the_sum_over_releases() -> None:
    lo = np.array([0.0, 0.0, -1.0, 0.0])
    hi = np.array([1.0, 1.0, 2.0, 1.0])
    a = sb.design_fisher(lo, hi, 0.3, 1.2, 2.0)
    b = smc.realised_fisher_information(lo, hi, 0.3, 1.2, 2.0)
    assert np.allclose(a, b, rtol=1e-12)


def test_two_stage_fisher_adds_the_stages() -> None:
    F = sb.two_stage_fisher(1000, 100, 50.0, 3.0, (20.0, 80.0), 51.0, 2.5, 1.0, 1.0)
    F1 = truncation.fisher_information_normal(50.0, 3.0, 20.0, 80.0, 1.0)
    F2 = truncation.fisher_information_normal(50.0, 3.0, 48.5, 53.5, 1.0)
    assert np.allclose(F, 100 * F1 + 900 * F2)
    with pytest.raises(ValueError, match="n_pilot"):
        sb.two_stage_fisher(10, 10, 0.0, 1.0, (-5.0, 5.0), 0.0, 1.0, 1.0, 1.0)


def test_two_stage_pilot_finds_the_truth_with_informative_releases() -> None:
    rng = np.random.default_rng(3)
    x = 50.0 + 3.0 * rng.standard_normal(300)
    m, c = sb.two_stage_pilot(x, 10.0, rng.laplace(size=300), (35.0, 65.0), rng, n_particles=200)
    assert m == pytest.approx(50.0, abs=1.0) and c == pytest.approx(3.0, abs=1.0)


def test_fisher_information_is_smaller_for_smaller_eps() -> None:
    # paper Section 3.2: "F is smaller for a smaller eps" -- checked on both diagonal entries
    for a, b in [(-0.06, 0.06), (-1.0, 1.0), (-10.0, 10.0), (-0.5, 1.5)]:
        F = [truncation.fisher_information(a, b, e) for e in (0.5, 1.0, 2.0, 5.0, 10.0)]
        for lo, hi in zip(F, F[1:]):
            assert lo[0, 0] < hi[0, 0] and lo[1, 1] < hi[1, 1]


def test_replicate_records_credible_intervals_around_its_estimates() -> None:
    config = smc_study.StudyConfig(n=30, n_particles=50, mu_true=5.0, sigma_true=1.0, nonadaptive_halfwidth=5.0,
                                   mcmc_iter=300, mcmc_burn_in=100)
    rep = smc_study.run_replicate(config, 5.0, 0.5, 0, 0)
    assert set(rep.intervals) == set(rep.estimates)
    for name, ((mlo, mhi), (slo, shi)) in rep.intervals.items():
        mu_hat, sigma_hat = rep.estimates[name]
        assert mlo <= mhi and slo <= shi
        assert mlo - 1e-9 <= mu_hat <= mhi + 1e-9, name  # a 90 % interval holds the posterior mean here


# --- the simulated baselines (exact posterior by quadrature) ---------------------------------------------


def test_baseline_replicate_sees_the_study_replicates_data() -> None:
    # common random numbers: the fixed +-10 sigma design of baseline_replicate releases exactly what the
    # simulation study's MCMC saw in the same replicate, so its posterior mean is the exact one of those releases
    from dpbayes import mcmc

    cfg = smc_study.StudyConfig(n=80, n_particles=10, mu_true=50.0, sigma_true=np.sqrt(10.0), nonadaptive_halfwidth=10.0,
                                methods=("MCMC",), mcmc_iter=200, mcmc_burn_in=50, seed=3)
    rep = smc_study.run_replicate(cfg, 5.0, 0.54, 2, 1)
    y, lo, hi = rep.releases["MCMC"]
    q = mcmc.quadrature_posterior(y, lo, hi, 5.0, n_grid=13)
    base = smc_study.baseline_replicate(80, 50.0, np.sqrt(10.0), 5.0, 0.54, 2, 1, seed=3, n_grid=13)
    assert base.estimates["fixed-k10"] == pytest.approx((q.mean_mu, q.mean_sigma), rel=1e-12)
    assert set(base.estimates) == set(smc_study.BASELINE_DESIGNS)
    assert np.allclose(base.fisher["fixed-k2"], smc_study.fixed_interval_fisher(80, 50.0, np.sqrt(10.0), 2.0, 5.0))
    assert base.edge_mass < 1e-4


def test_baseline_study_is_ordered_and_checks_its_grids() -> None:
    out = smc_study.baseline_study(40, 0.0, 1.0, [5.0, 10.0], [0.5, 0.9], 1, seed=2, n_grid=9)
    assert [(r.eps_index, r.run) for r in out] == [(0, 0), (1, 0)]
    with pytest.raises(ValueError, match="b_grid"):
        smc_study.baseline_study(40, 0.0, 1.0, [5.0], [0.5, 0.9], 1)
    with pytest.raises(ValueError, match="pilot_fraction"):
        smc_study.baseline_replicate(40, 0.0, 1.0, 5.0, 0.5, 0, 0, pilot_fraction=1.5)


def test_pooled_coverage() -> None:
    # 100 of 120 intervals cover: P[Binomial(120, 0.9) <= 100] from the pmf summed directly
    from math import comb
    p_direct = sum(comb(120, k) * 0.9**k * 0.1 ** (120 - k) for k in range(101))
    res = sb.pooled_coverage(100, 120)
    assert res.coverage == pytest.approx(100 / 120)
    assert res.p_value == pytest.approx(p_direct, rel=1e-10)
    assert not res.undercovers  # p ~ 0.016 >= 0.01
    assert sb.pooled_coverage(100, 120, alpha=0.05).undercovers
    assert sb.pooled_coverage(93, 120).undercovers
    assert sb.pooled_coverage(120, 120).p_value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="hits"):
        sb.pooled_coverage(121, 120)
    with pytest.raises(ValueError, match="total"):
        sb.pooled_coverage(0, 0)
    with pytest.raises(ValueError, match="level"):
        sb.pooled_coverage(5, 10, level=1.5)
