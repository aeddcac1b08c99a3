"""The decision (dpbayes.choosing.decision): one criterion, one release, with its deciding numbers."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.choosing import candidates as ec
from dpbayes.choosing.decision import CRITERIA, RELEASES, recommend


def test_worst_case_picks_the_certified_minimax_remap() -> None:
    rec = recommend(100, 0.1)
    assert rec.criterion == "worst" and rec.candidate == "geometric-minimax"
    assert rec.bayes_risk is None
    # its worst risk sits on the certified lower bound over all remaps
    assert rec.minimax_lower_bound <= rec.worst_risk <= rec.minimax_lower_bound * (1 + 1e-4)
    # and beats the clamped geometric count / n (the independent check: 0.779 x)
    geo = ec.compare_estimators(100, 0.1, candidates=["geometric"]).worst_risk[0]
    assert rec.worst_risk / geo == pytest.approx(0.779, abs=1e-3)


def test_average_is_compare_estimators_best() -> None:
    for prior in [(1, 1), (30, 70), (0.5, 0.5)]:
        rec = recommend(200, 0.5, prior=prior, criterion="average", tie=0.0)
        cmp = ec.compare_estimators(200, 0.5, prior=prior, candidates=list(RELEASES))
        assert rec.candidate == cmp.best
        assert rec.bayes_risk == pytest.approx(float(np.min(cmp.bayes_risk)), rel=1e-12)
        # with the default tie: the simplest release within 1 % of the best
        tied = recommend(200, 0.5, prior=prior, criterion="average")
        within = [nm for nm in RELEASES if cmp.bayes_risk[cmp.names.index(nm)] <= 1.01 * np.min(cmp.bayes_risk)]
        assert tied.candidate == within[0] and tied.equivalent == tuple(within)


def test_a_tie_goes_to_the_simpler_release() -> None:
    # wage1's size at eps = 1: the minimax remap's worst risk is 0.02 % below the geometric count's
    strict = recommend(526, 1.0, tie=0.0)
    assert strict.candidate == "geometric-minimax" and 1.0 < strict.margin < 1.001
    tied = recommend(526, 1.0)
    assert tied.candidate == "geometric" and tied.equivalent[:2] == ("geometric", "geometric-minimax")
    assert tied.margin < 1.0 and tied.runner_up == "geometric-minimax"
    # n = 100, eps = 0.1: the remap is worth 22 % in the worst case, no tie
    assert recommend(100, 0.1).equivalent == ("geometric-minimax",)


def test_guard_interpolates_between_the_criteria() -> None:
    wide = recommend(100, 0.1, prior=(1, 1), criterion="guarded", guard=10.0)
    assert wide.candidate == recommend(100, 0.1, prior=(1, 1), criterion="average").candidate
    tight = recommend(100, 0.1, prior=(1, 1), criterion="guarded", guard=0.0)
    assert tight.candidate == "geometric-minimax"
    # flat prior, n = 100, eps = 0.1: the Bayes remap's worst risk is 1.28 x the minimax one, so a 10 % guard excludes it
    assert recommend(100, 0.1, prior=(1, 1)).candidate == "geometric-minimax"


def test_call_is_filled_in() -> None:
    rec = recommend(50, 1.0, prior=(2, 3), criterion="average")
    assert rec.call == RELEASES[rec.candidate].format(prior="(2, 3)")
    assert "{" not in rec.call


@pytest.mark.parametrize("kwargs, word", [
    (dict(criterion="average"), "prior"),
    (dict(criterion="guarded"), "prior"),
    (dict(criterion="best", prior=(1, 1)), "criterion"),
    (dict(prior=(1, 1), guard=-0.1), "guard"),
    (dict(tie=1.5), "tie"),
])
def test_bad_input(kwargs: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        recommend(100, 0.1, **kwargs)


def test_criteria_named_once() -> None:
    assert CRITERIA == ("average", "worst", "guarded")


def test_every_recommended_call_runs_and_releases_the_chosen_estimate() -> None:
    pytest.importorskip("opendp")
    from dpbayes.release.statistic import release_count_geometric

    for name, call in RELEASES.items():
        filled = call.format(prior="(2, 3)")  # as recommend fills it
        result = eval(filled, {"release_count_geometric": release_count_geometric, "count": 11, "n": 40, "epsilon": 0.5})
        assert 0 <= result.estimate <= 40, name
    worst = recommend(40, 0.5)
    assert worst.call == RELEASES["geometric-minimax"]
    result = eval(worst.call, {"release_count_geometric": release_count_geometric, "count": 11, "n": 40, "epsilon": 0.5})
    # the release reports the same worst risk the decision was made on (count scale = n^2 x proportion scale)
    assert result.worst_risk == pytest.approx(worst.worst_risk * 40**2, rel=1e-9)


def test_crossings_in_n_eps_are_where_the_ratios_cross_the_tolerance() -> None:
    from dpbayes.choosing.decision import n_eps_crossings, prior_gain

    n, tol = 10, 0.05
    found = n_eps_crossings(n, (1, 1), tolerance=tol, n_eps_range=(0.2, 200.0), scan=10)
    falling = {c.criterion: c for c in found if not c.rising}
    assert set(falling) == {"average", "worst"}
    for which, criterion in enumerate(("average", "worst")):
        k = falling[criterion].n_eps
        assert prior_gain(n, k / n, (1, 1))[which] == pytest.approx(1 + tol, rel=1e-3)
        assert prior_gain(n, 0.97 * k / n, (1, 1))[which] > 1 + tol > prior_gain(n, 1.03 * k / n, (1, 1))[which]
    # the prior stops paying on average (gain < 5 %) well before its worst-case price falls below 5 %
    assert falling["average"].n_eps < falling["worst"].n_eps
    with pytest.raises(ValueError, match="tolerance"):
        n_eps_crossings(n, (1, 1), tolerance=0.0)
    with pytest.raises(ValueError, match="n_eps_range"):
        n_eps_crossings(n, (1, 1), n_eps_range=(5.0, 1.0))


def test_regions_join_the_crossings_and_close_at_the_range_ends() -> None:
    from dpbayes.choosing.decision import n_eps_crossings, n_eps_regions, prior_gain

    n, prior, rng = 10, (1, 1), (0.2, 200.0)
    found = n_eps_crossings(n, prior, n_eps_range=rng, scan=10)
    regions = n_eps_regions(n, prior, n_eps_range=rng, scan=10)
    for which, criterion in enumerate(("average", "worst")):
        ends = sorted(x for span in regions[criterion] for x in span if x not in rng)
        assert ends == sorted(c.n_eps for c in found if c.criterion == criterion)
        for low, high in regions[criterion]:  # above the tolerance inside each region
            assert prior_gain(n, np.sqrt(low * high) / n, prior)[which] > 1.05
    # a range where the flat prior's average gain never reaches 5 %: no region
    assert n_eps_regions(n, prior, n_eps_range=(20.0, 100.0), scan=5)["average"] == []


def test_the_chapter_decision_table_is_what_recommend_decides() -> None:
    """Chapter 5's stored decision table (notebook 05b) against recommend() now, row by row: the same release
    and runner-up, the same margin to the printed digits."""
    import re
    from pathlib import Path

    from dpbayes.book.pagevalues import stored_glue_values

    root = Path(__file__).resolve().parents[2]
    table = stored_glue_values(root / "chapters" / "05-choosing" / "05b-decision-map.ipynb")["decision_table"]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()[2:]]
    assert len(rows) >= 10
    checked = 0
    for n, eps, prior_text, criterion, release, runner_up, margin, _ in rows:
        m = re.fullmatch(r"Beta\(([\d.]+), ([\d.]+)\)", prior_text)
        prior = None if prior_text == "none" else (float(m.group(1)), float(m.group(2)))
        rec = recommend(int(n), float(eps), prior=prior, criterion=criterion)
        assert rec.label == release and ec.CANDIDATES[rec.runner_up].label == runner_up, (n, eps, prior_text, criterion)
        assert rec.margin == pytest.approx(float(margin), rel=1e-3, abs=1e-3)
        checked += 1
    assert checked == len(rows)


def test_prior_free_order_is_every_prior_free_candidate() -> None:
    from dpbayes.choosing.decision import PRIOR_FREE_ORDER

    registered = {nm for nm, c in ec.CANDIDATES.items() if not c.uses_prior and not c.reference}
    assert set(PRIOR_FREE_ORDER) == registered and len(PRIOR_FREE_ORDER) == len(registered)


@pytest.mark.parametrize("n, eps, prior", [(100, 0.1, (1, 1)), (1000, 1.0, (100, 100)), (20, 0.03, (2, 18))])
def test_prior_gain_of_a_comparison_is_its_ratios_and_names_the_simplest_within_the_tie(n, eps, prior) -> None:
    from dpbayes.choosing.decision import PRIOR_FREE_ORDER, prior_gain, prior_gain_of

    cmp = ec.compare_estimators(n, eps, prior=prior, candidates=[*PRIOR_FREE_ORDER, "geometric-bayes", "laplace-bayes"])
    gain = prior_gain_of(cmp)
    free = [cmp.names.index(nm) for nm in PRIOR_FREE_ORDER]
    opt = cmp.names.index("geometric-bayes")
    assert gain.average == pytest.approx(min(cmp.bayes_risk[free]) / cmp.bayes_risk[opt], rel=1e-12)
    assert gain.worst == pytest.approx(cmp.worst_risk[opt] / min(cmp.worst_risk[free]), rel=1e-12)
    assert (gain.average, gain.worst) == pytest.approx(prior_gain(n, eps, prior), rel=1e-9)
    # the name: with no tie the lowest; with the tie the first of PRIOR_FREE_ORDER within it
    strict = prior_gain_of(cmp, tie=0.0).best_prior_free
    assert cmp.bayes_risk[cmp.names.index(strict)] == min(cmp.bayes_risk[free])
    within = [nm for nm in PRIOR_FREE_ORDER if cmp.bayes_risk[cmp.names.index(nm)] <= 1.01 * min(cmp.bayes_risk[free])]
    assert gain.best_prior_free == within[0]
    with pytest.raises(ValueError, match="geometric-minimax"):
        prior_gain_of(ec.compare_estimators(n, eps, prior=prior, candidates=["geometric", "geometric-bayes"]))
