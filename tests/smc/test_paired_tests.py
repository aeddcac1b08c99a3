"""Paired comparisons of two estimators over shared replicates, and the sign test of a few runs (dpbayes.smc.paired_tests)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.core.verdicts import judge_family
from dpbayes.smc import paired_tests

RULE = paired_tests.paired_rule(0.05, "one comparison")


def verdict(c):
    # a single comparison is a family of one under the declared rule
    return judge_family([c.outcome()], paired_tests.paired_rule(0.05, "one comparison", c.equivalence)).verdicts[0]


def test_a_clearly_better_estimator_is_more_accurate_and_the_reverse_less():
    rng = np.random.default_rng(0)
    good = 1.0 + 0.1 * rng.standard_normal(30)
    bad = 1.0 + 1.0 * rng.standard_normal(30)
    c = paired_tests.paired_comparison(good, bad, 1.0, n_boot=2000)
    assert verdict(c) == "more accurate" and c.ci_low > 1 and c.mse_ratio > 10 and c.permutation_p < 1e-3
    assert c.wilcoxon_p < 1e-3 and c.wins >= 25 and c.n == 30
    r = paired_tests.paired_comparison(bad, good, 1.0, n_boot=2000)
    assert verdict(r) == "less accurate" and r.ci_high < 1
    assert r.mse_ratio == pytest.approx(1 / c.mse_ratio)


def test_equal_estimators_are_indistinguishable_with_many_replicates_undecided_with_few():
    rng = np.random.default_rng(1)
    common = rng.standard_normal(2000)
    a = common + 0.05 * rng.standard_normal(2000)
    b = common + 0.05 * rng.standard_normal(2000)
    c = paired_tests.paired_comparison(a, b, 0.0, n_boot=500)
    assert verdict(c) == "indistinguishable" and c.equivalence_p < 0.01
    few = paired_tests.paired_comparison(*np.random.default_rng(4).standard_normal((2, 10)), 0.0, n_boot=500)
    assert verdict(few) == "undecided"


def test_the_verdict_has_its_level_under_the_null():
    # independent equal estimators: "more" or "less accurate" in about 5 % of 200 trials at level 0.95 (a
    # percentile bootstrap of the ratio would say so in about 10-14 % with 8-30 replicates)
    for n in (8, 30):
        verdicts = [verdict(paired_tests.paired_comparison(*np.random.default_rng(s).standard_normal((2, n)), 0.0,
                                                           n_boot=1000, seed=s)) for s in range(200)]
        rejected = sum(v in ("more accurate", "less accurate") for v in verdicts)
        assert rejected <= 18  # binomial(200, 0.05): P(>= 19) < 0.5 %
        assert verdicts.count("undecided") >= 150


def test_the_pairing_matters():
    # two estimators with the same marginal spread, b = a + a small shift: paired, b is clearly worse
    rng = np.random.default_rng(2)
    a = rng.standard_normal(40)
    b = a + 0.3 * np.sign(a)
    c = paired_tests.paired_comparison(a, b, 0.0, n_boot=2000)
    assert c.wins == 40 and verdict(c) == "more accurate"


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


def test_a_comparison_carries_no_verdict_of_its_own():
    # the verdict needs the family and its declared rule: a comparison alone has p-values, no verdict word
    c = paired_tests.paired_comparison([1.0, 2.0, 3.0], [1.5, 2.5, 2.0], 0.0, n_boot=200)
    assert not hasattr(c, "verdict")
    assert c.outcome().test == paired_tests.PERMUTATION_TEST
    with pytest.raises(ValueError, match="equivalence test"):  # a band other than the declared one is refused
        judge_family([c.outcome()], paired_tests.paired_rule(0.05, "f", equivalence=1.5))


def test_the_equivalence_test_has_its_level_at_the_band_edge():
    # b's squared errors are exactly 1.25 times a's in law (scale family, independent pairs): the ratio sits on
    # the band's edge, so "indistinguishable" may be said in at most about 5 % of trials (a percentile bootstrap
    # interval inside the band says so more often with few heavy-tailed replicates)
    said = 0
    for s in range(200):
        g = np.random.default_rng(s).standard_t(3, size=(2, 20))
        c = paired_tests.paired_comparison(g[0], np.sqrt(1.25) * g[1], 0.0, n_boot=1000, seed=s)
        said += verdict(c) == "indistinguishable"
    assert said <= 18


def _glued_markdown_table(notebook, key):
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[2] / notebook).read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == key:
                data = out["data"]
                text = data.get("application/papermill.record/text/markdown") or data.get("text/markdown")
                lines = [ln for ln in "".join(text).splitlines() if ln.startswith("|")]
                header = [c.strip() for c in lines[0].strip("|").split("|")]
                return [dict(zip(header, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]
    raise AssertionError(f"{notebook} glues no table {key}")


@pytest.mark.parametrize("notebook, key, ratio, p, holm, verdict", [
    ("chapters/03-adaptive-truncation/03e-privacy-criteria-uncertainty.ipynb", "paired_tests", "MSE ratio",
     "perm. p", "Holm p", "verdict"),
    ("chapters/03-adaptive-truncation/03e-privacy-criteria-uncertainty.ipynb", "truthfree_twostage", "MSE / adaptive's",
     "p", "Holm p", "adaptive is"),
    ("chapters/03-adaptive-truncation/03e-privacy-criteria-uncertainty.ipynb", "fair_twostage", "MSE ratio",
     "p", "Holm p", "adaptive is"),
])
def test_the_chapter_verdict_tables_follow_their_declared_rule(notebook, key, ratio, p, holm, verdict):
    # the stored table's verdicts, recomputed from its own p-values with Holm over the table: a verdict taken from
    # an uncorrected p-value (or another test) fails here
    from dpbayes.core.verdicts import holm_adjust

    rows = _glued_markdown_table(notebook, key)
    raw = np.array([float(r[p]) for r in rows])
    shown = np.array([float(r[holm]) for r in rows])
    assert np.allclose(holm_adjust(raw), shown, rtol=2e-3, atol=1e-4)
    for r, ph in zip(rows, holm_adjust(raw)):
        if ph < 0.05:
            assert r[verdict] == ("more accurate" if float(r[ratio]) > 1 else "less accurate"), r
        else:
            assert r[verdict] in ("indistinguishable", "undecided"), r
