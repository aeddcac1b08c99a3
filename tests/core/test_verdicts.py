"""Verdicts under a declared rule with Holm's correction (dpbayes.core.verdicts)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbayes.core import verdicts as V

RULE = V.VerdictRule(test="perm", alternative="two-sided", level=0.05, family="the table", equivalence_test="tost")


def _holm_by_definition(p):
    # Holm's step-down rule written out: reject H_(1), ..., H_(j) while p_(i) <= alpha / (m - i + 1); the adjusted
    # p-value of H is the smallest alpha at which it is rejected (searched over the candidate alphas)
    p = np.asarray(p, float)
    m = p.size
    order = np.argsort(p)
    cands = sorted({min(1.0, (m - i) * p[order[i]]) for i in range(m)} | {1.0})
    out = np.ones(m)
    for j in range(m):
        for a in cands:
            k = 0
            while k < m and p[order[k]] * (m - k) <= a:
                k += 1
            if j in order[:k]:
                out[j] = a
                break
    return out


def test_holm_matches_its_definition():
    rng = np.random.default_rng(0)
    for m in (1, 2, 5, 24):
        p = rng.uniform(0, 0.2, m) ** 2
        assert np.allclose(V.holm_adjust(p), _holm_by_definition(p))


def test_holm_known_values_and_nan():
    assert np.allclose(V.holm_adjust([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    out = V.holm_adjust([0.01, np.nan, 0.04])
    assert np.isnan(out[1]) and np.allclose(out[[0, 2]], [0.02, 0.04])
    with pytest.raises(ValueError):
        V.holm_adjust([1.5])


def test_holm_controls_the_familywise_error_under_the_global_null():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=(4000, 24))
    fwer = np.mean([np.any(V.holm_adjust(row) < 0.05) for row in p])
    assert fwer < 0.06


def test_a_family_without_its_declared_rule_is_refused():
    outs = [V.Outcome("perm", 0.001, 1.0)]
    with pytest.raises(TypeError):
        V.judge_family(outs, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        V.judge_family(outs, {"test": "perm", "level": 0.05})  # type: ignore[arg-type]


def test_a_test_chosen_afterwards_cannot_decide():
    # the rule declares the permutation test; a Wilcoxon p-value is refused, however small
    with pytest.raises(ValueError, match="declared rule's test"):
        V.judge_family([V.Outcome("perm", 0.8, 0.3), V.Outcome("wilcoxon", 0.001, 0.3)], RULE)
    with pytest.raises(ValueError, match="equivalence test"):
        V.judge_family([V.Outcome("perm", 0.8, 0.0, "bootstrap", 0.001)], RULE)


def test_verdicts_use_the_holm_adjusted_p_only():
    # 0.02 alone rejects at 5 %; in a family of 24 its Holm value is 0.48: undecided
    alone = V.judge_family([V.Outcome("perm", 0.02, 0.5)], RULE)
    assert alone.verdicts == ("more accurate",)
    fam = V.judge_family([V.Outcome("perm", 0.02, 0.5)] + [V.Outcome("perm", 0.9, 0.1)] * 23, RULE)
    assert fam.verdicts[0] == "undecided" and fam.p_holm[0] == pytest.approx(0.48)
    # every verdict is recomputable from the adjusted p-values and the effects
    rng = np.random.default_rng(2)
    outs = [V.Outcome("perm", float(p), float(e), "tost", float(q))
            for p, e, q in zip(rng.uniform(0, 0.01, 12) ** 2, rng.normal(size=12), rng.uniform(0, 0.01, 12))]
    res = V.judge_family(outs, RULE)
    for o, ph, qh, w in zip(outs, res.p_holm, res.equivalence_p_holm, res.verdicts):
        expect = ("more accurate" if o.effect > 0 else "less accurate") if ph < 0.05 else (
            "indistinguishable" if qh < 0.05 else "undecided")
        assert w == expect


def test_a_one_sided_rule_finds_only_its_direction():
    rule = V.VerdictRule(test="perm", alternative="greater", level=0.05, family="f")
    res = V.judge_family([V.Outcome("perm", 0.001, 1.0), V.Outcome("perm", 0.001, -1.0)], rule)
    assert res.verdicts == ("more accurate", "undecided")


@pytest.mark.parametrize("kw", [dict(test=""), dict(alternative="both"), dict(level=1.0), dict(family=" ")])
def test_a_rule_must_be_complete(kw):
    base = dict(test="perm", alternative="two-sided", level=0.05, family="f")
    with pytest.raises(ValueError):
        V.VerdictRule(**(base | kw))


def test_holm_is_monotone_in_the_raw_p_values():
    for p in itertools.permutations([0.001, 0.01, 0.02, 0.2]):
        adj = V.holm_adjust(p)
        order = np.argsort(p)
        assert np.all(np.diff(adj[order]) >= 0)
