"""Paired comparisons of two estimators over shared replicates, and the sign test of a few runs (dpbayes.smc.paired_tests)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.smc import paired_tests


def test_a_clearly_better_estimator_is_more_accurate_and_the_reverse_less():
    rng = np.random.default_rng(0)
    good = 1.0 + 0.1 * rng.standard_normal(30)
    bad = 1.0 + 1.0 * rng.standard_normal(30)
    c = paired_tests.paired_comparison(good, bad, 1.0, n_boot=2000)
    assert c.verdict == "more accurate" and c.ci_low > 1 and c.mse_ratio > 10 and c.permutation_p < 1e-3
    assert c.wilcoxon_p < 1e-3 and c.wins >= 25 and c.n == 30
    r = paired_tests.paired_comparison(bad, good, 1.0, n_boot=2000)
    assert r.verdict == "less accurate" and r.ci_high < 1
    assert r.mse_ratio == pytest.approx(1 / c.mse_ratio)


def test_equal_estimators_are_indistinguishable_with_many_replicates_undecided_with_few():
    rng = np.random.default_rng(1)
    common = rng.standard_normal(2000)
    a = common + 0.05 * rng.standard_normal(2000)
    b = common + 0.05 * rng.standard_normal(2000)
    assert paired_tests.paired_comparison(a, b, 0.0, n_boot=500).verdict == "indistinguishable"


def test_the_verdict_has_its_level_under_the_null():
    # independent equal estimators: "more" or "less accurate" in about 5 % of 200 trials at level 0.95 (a
    # percentile bootstrap of the ratio would say so in about 10-14 % with 8-30 replicates)
    for n in (8, 30):
        verdicts = [paired_tests.paired_comparison(*np.random.default_rng(s).standard_normal((2, n)), 0.0, n_boot=1000,
                                                seed=s).verdict for s in range(200)]
        rejected = sum(v in ("more accurate", "less accurate") for v in verdicts)
        assert rejected <= 18  # binomial(200, 0.05): P(>= 19) < 0.5 %
        assert verdicts.count("undecided") >= 150


def test_the_pairing_matters():
    # two estimators with the same marginal spread, b = a + a small shift: paired, b is clearly worse
    rng = np.random.default_rng(2)
    a = rng.standard_normal(40)
    b = a + 0.3 * np.sign(a)
    c = paired_tests.paired_comparison(a, b, 0.0, n_boot=2000)
    assert c.wins == 40 and c.verdict == "more accurate"


def test_one_wild_replicate_moves_the_mse_not_the_rank_test():
    rng = np.random.default_rng(3)
    a = 0.5 * rng.standard_normal(30)
    b = a + np.sign(a) * 0.2
    a[0] = 40.0  # one wild run of the first estimator
    c = paired_tests.paired_comparison(a, b, 0.0, n_boot=2000)
    assert c.mse_ratio < 1 and c.wins == 29 and c.wilcoxon_p < 1e-4


def test_sign_test_floor_with_five_runs():
    assert paired_tests.sign_test_p(5, 5) == pytest.approx(0.0625)
    assert paired_tests.sign_test_p(0, 5) == pytest.approx(0.0625)
    assert paired_tests.sign_test_p(4, 5) == pytest.approx(0.375)
    assert paired_tests.sign_test_p(10, 10) == pytest.approx(2 / 1024)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="same length"):
        paired_tests.paired_comparison([1.0, 2.0], [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(ValueError, match="equivalence"):
        paired_tests.paired_comparison([1.0, 2.0], [1.0, 2.0], 0.0, equivalence=1.0)
    with pytest.raises(ValueError, match="zero error"):
        paired_tests.paired_comparison([0.0, 0.0], [1.0, 2.0], 0.0)
    with pytest.raises(ValueError, match="wins"):
        paired_tests.sign_test_p(6, 5)
