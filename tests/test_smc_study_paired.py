"""Paired comparisons of two estimators over shared replicates, and the sign test of a few runs."""

import numpy as np
import pytest

from dpbayes import smc_study


def test_a_clearly_better_estimator_is_more_accurate_and_the_reverse_less():
    rng = np.random.default_rng(0)
    good = 1.0 + 0.1 * rng.standard_normal(30)
    bad = 1.0 + 1.0 * rng.standard_normal(30)
    c = smc_study.paired_comparison(good, bad, 1.0, n_boot=2000)
    assert c.verdict == "more accurate" and c.ci_low > 1 and c.mse_ratio > 10 and c.permutation_p < 1e-3
    assert c.wilcoxon_p < 1e-3 and c.wins >= 25 and c.n == 30
    r = smc_study.paired_comparison(bad, good, 1.0, n_boot=2000)
    assert r.verdict == "less accurate" and r.ci_high < 1
    assert r.mse_ratio == pytest.approx(1 / c.mse_ratio)


def test_equal_estimators_are_indistinguishable_with_many_replicates_undecided_with_few():
    rng = np.random.default_rng(1)
    common = rng.standard_normal(2000)
    a = common + 0.05 * rng.standard_normal(2000)
    b = common + 0.05 * rng.standard_normal(2000)
    assert smc_study.paired_comparison(a, b, 0.0, n_boot=500).verdict == "indistinguishable"

def test_the_verdict_has_its_level_under_the_null():
    # independent equal estimators: "more" or "less accurate" in about 5 % of 200 trials at level 0.95 (a
    # percentile bootstrap of the ratio would say so in about 10-14 % with 8-30 replicates)
    for n in (8, 30):
        verdicts = [smc_study.paired_comparison(*np.random.default_rng(s).standard_normal((2, n)), 0.0, n_boot=1000,
                                                seed=s).verdict for s in range(200)]
        rejected = sum(v in ("more accurate", "less accurate") for v in verdicts)
        assert rejected <= 18  # binomial(200, 0.05): P(>= 19) < 0.5 %
        assert verdicts.count("undecided") >= 150


def test_the_pairing_matters():
    # two estimators with the same marginal spread, b = a + a small shift: paired, b is clearly worse
    rng = np.random.default_rng(2)
    a = rng.standard_normal(40)
    b = a + 0.3 * np.sign(a)
    c = smc_study.paired_comparison(a, b, 0.0, n_boot=2000)
    assert c.wins == 40 and c.verdict == "more accurate"


def test_one_wild_replicate_moves_the_mse_not_the_rank_test():
    rng = np.random.default_rng(3)
    a = 0.5 * rng.standard_normal(30)
    b = a + np.sign(a) * 0.2
    a[0] = 40.0  # one wild run of the first estimator
    c = smc_study.paired_comparison(a, b, 0.0, n_boot=2000)
    assert c.mse_ratio < 1 and c.wins == 29 and c.wilcoxon_p < 1e-4


def test_sign_test_floor_with_five_runs():
    assert smc_study.sign_test_p(5, 5) == pytest.approx(0.0625)
    assert smc_study.sign_test_p(0, 5) == pytest.approx(0.0625)
    assert smc_study.sign_test_p(4, 5) == pytest.approx(0.375)
    assert smc_study.sign_test_p(10, 10) == pytest.approx(2 / 1024)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="same length"):
        smc_study.paired_comparison([1.0, 2.0], [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(ValueError, match="equivalence"):
        smc_study.paired_comparison([1.0, 2.0], [1.0, 2.0], 0.0, equivalence=1.0)
    with pytest.raises(ValueError, match="zero error"):
        smc_study.paired_comparison([0.0, 0.0], [1.0, 2.0], 0.0)
    with pytest.raises(ValueError, match="wins"):
        smc_study.sign_test_p(6, 5)


def test_fair_two_stage_shares_the_replicate_and_widens_by_the_pilot_sd():
    r = smc_study.fair_baseline_replicate(80, 10.0, 2.0, 2.0, 0, 0, seed=3, n_grid=11)
    assert set(r.estimates) == set(smc_study.FAIR_DESIGNS) == set(r.cr)
    # the unwidened design and the baseline study's two-stage design see the same pilot and releases
    b = smc_study.baseline_replicate(80, 10.0, 2.0, 2.0, 0.5, 0, 0, seed=3, n_grid=11)
    assert r.estimates["twostage-k2"] == pytest.approx(b.estimates["twostage-k2"], rel=1e-9)
    assert r.estimates["fixed-k2"] == pytest.approx(b.estimates["fixed-k2"], rel=1e-9)
    m, s_m, c = r.pilot
    assert (m, c) == pytest.approx(b.pilot, rel=1e-12) and s_m > 0
    # a wider stage-2 interval at the same centre: z -> 0 gives back the unwidened design
    r0 = smc_study.fair_baseline_replicate(80, 10.0, 2.0, 2.0, 0, 0, seed=3, z=1e-12, n_grid=11)
    assert r0.estimates["twostage-k2-wide"] == pytest.approx(r0.estimates["twostage-k2"], rel=1e-6)
    assert all(np.isfinite(v).all() and min(v) > 0 for v in r.cr.values())


def test_fair_study_orders_and_seeds_replicates():
    out = smc_study.fair_baseline_study(40, 10.0, 2.0, [2.0, 5.0], 2, seed=1, n_grid=9)
    assert [(r.eps_index, r.run) for r in out] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    one = smc_study.fair_baseline_replicate(40, 10.0, 2.0, 5.0, 1, 1, seed=1, n_grid=9)
    assert out[3].estimates == one.estimates
    with pytest.raises(ValueError, match="z"):
        smc_study.fair_baseline_replicate(40, 10.0, 2.0, 5.0, 0, 0, z=0.0)


def test_cloud_check_passes_exact_draws_and_catches_a_narrow_cloud():
    from dpbayes import mcmc, smc

    x = 10.0 + 2.0 * np.random.default_rng(0).standard_normal(40)
    y, lo, hi = smc.fixed_interval_releases(x, (0.0, 20.0), 5.0, np.random.default_rng(1).laplace(size=40))
    q = mcmc.quadrature_posterior(y, lo, hi, 5.0)
    g = mcmc.grid_posterior(y, lo, hi, 5.0, np.linspace(q.mean_mu - 8 * q.sd_mu, q.mean_mu + 8 * q.sd_mu, 201),
                            np.exp(np.linspace(np.log(q.mean_sigma) - 2, np.log(q.mean_sigma) + 2, 201)))
    rng = np.random.default_rng(2)
    cells = rng.choice(g.prob.size, size=2000, p=g.prob.ravel())
    mu, sigma = g.mu_grid[cells // 201], g.sigma_grid[cells % 201]
    good = smc_study.cloud_vs_exact(mu, sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=201)
    assert good.edge_mass < 1e-4 and good.n_eff == 2000
    assert good.w1_mu < 3 * good.w1_ref_mu and good.w1_log_sigma < 3 * good.w1_ref_log_sigma
    assert abs(good.sd_ratio_mu - 1) < 0.1 and abs(good.sd_ratio_log_sigma - 1) < 0.1
    m0 = mu.mean()
    narrow = smc_study.cloud_vs_exact(m0 + 0.5 * (mu - m0), sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=201)
    assert abs(narrow.sd_ratio_mu - 0.5) < 0.06 and narrow.w1_mu > 5 * narrow.w1_ref_mu
