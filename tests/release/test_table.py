"""dpbayes.release.table: records in, one budget over several attributes on OpenDP's compositor.

OpenDP's noise cannot be seeded: the test of the released law is a chi-square test with false-alarm
rate 1e-4; everything else (the privacy loss of the composed release, the estimator, the budget) is exact.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("opendp")

from dpbayes.choosing.decision import recommend  # noqa: E402
from dpbayes.core.geometric import clamped_geometric_logmatrix  # noqa: E402
from dpbayes.release import table as rt  # noqa: E402
from dpbayes.release.statistic import GeometricCountRelease, UninformativeIntervalWarning  # noqa: E402

ALPHA = 1e-4


def _records(counts: list[int], n: int) -> dict[str, np.ndarray]:
    return {f"a{j}": np.arange(n) < c for j, c in enumerate(counts)}


# ------------------------------------------------------------------ the exact privacy loss of the composed release


def _table_loss(k: int, bound: int, eps_attr: float | list[float], relation: str, clamp_to_own_size: bool = False) -> float:
    """Largest log ratio of the release's law between neighbouring tables of at most ``bound`` records with ``k``
    binary attributes (one record per person), over every output. The law is the product over the attributes of
    the clamped geometric law (independent noise); with ``clamp_to_own_size`` each count is clamped to the table's
    own size instead of the public bound (the flawed release). ``eps_attr``: one value for every attribute, or one each."""
    eps_of = [float(eps_attr)] * k if np.isscalar(eps_attr) else [float(e) for e in eps_attr]
    refs = [rt.attribute_log_law(bound, e) for e in eps_of]

    def coord(j: int, size: int, c: int) -> np.ndarray:
        if not clamp_to_own_size:
            return refs[j][c]
        own = np.full(bound + 1, -np.inf)
        own[: size + 1] = clamped_geometric_logmatrix(np.array([c]), 0, size, eps_of[j])[0]
        return own

    worst = 0.0
    sizes = [bound] if relation == "replace-one" else range(bound + 1)
    for size in sizes:
        for counts in itertools.product(range(size + 1), repeat=k):
            if relation == "replace-one":
                # one record's k values replaced: every count moves by -1, 0 or +1
                steps = [(size, tuple(c + d for c, d in zip(counts, delta)))
                         for delta in itertools.product((-1, 0, 1), repeat=k)]
            else:
                # one record added, with any k values: the size grows by one, every count by 0 or 1
                steps = [(size + 1, tuple(c + d for c, d in zip(counts, delta)))
                         for delta in itertools.product((0, 1), repeat=k)] if size < bound else []
            for size2, counts2 in steps:
                if not all(0 <= c <= size2 for c in counts2):
                    continue
                # independent coordinates: the largest log ratio over outputs is the sum of the per-coordinate ones
                total = 0.0
                for j, (c, c2) in enumerate(zip(counts, counts2)):
                    a, b = coord(j, size, c), coord(j, size2, c2)
                    with np.errstate(invalid="ignore"):
                        diff = np.abs(np.where(np.isneginf(a) & np.isneginf(b), 0.0, a - b))
                    total += float(np.max(diff))
                worst = max(worst, total)
    return worst


@pytest.mark.parametrize("k, bound, epsilon", [(2, 3, 1.0), (3, 2, 0.6)])
def test_the_composed_release_loses_exactly_its_budget_under_both_relations(k, bound, epsilon):
    """Each attribute at epsilon / k: the whole release's exact privacy loss over every pair of neighbouring
    tables is epsilon under replace-one and under add/remove with the public bound; clamping to the table's own
    size instead is infinite under add/remove."""
    for relation in ("replace-one", "add-remove"):
        assert _table_loss(k, bound, epsilon / k, relation) == pytest.approx(epsilon, rel=1e-9), relation
    assert _table_loss(k, bound, epsilon / k, "add-remove", clamp_to_own_size=True) == np.inf


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # n = 2
def test_uneven_attribute_weights_compose_to_the_budget_under_both_relations():
    """Weights 3 : 1 : 1 on three attributes: each attribute's noise is its share, OpenDP's map of the composed
    query is the budget, and the exact loss over every pair of neighbouring tables of at most 2 records is the budget."""
    table = rt.PrivateTable(_records([1, 2, 0], 2), ["a0", "a1", "a2"], epsilon=1.0, attribute_weights=[3, 1, 1])
    meas, shares = table._measurement(1.0)
    assert shares == pytest.approx([0.6, 0.2, 0.2])
    assert float(meas.map(1)) == pytest.approx(1.0) and float(meas.map(1)) <= 1.0
    out = table.release()
    assert [a.epsilon for a in out.attributes] == pytest.approx([0.6, 0.2, 0.2])
    assert out.epsilon_spent <= 1.0
    for relation in ("replace-one", "add-remove"):
        assert _table_loss(3, 2, list(shares), relation) == pytest.approx(1.0, rel=1e-9), relation
    once = rt.release_table(_records([1, 2, 0], 2), ["a0", "a1", "a2"], 1.0, attribute_weights=[3, 1, 1])
    assert [a.epsilon for a in once.attributes] == pytest.approx([0.6, 0.2, 0.2])  # the shorthand splits the same way


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # n = 10 at 0.2 per attribute
def test_a_person_with_several_records_is_covered_by_the_contribution_bound():
    """Three records per person: each count moves by up to 3, so each attribute's share (0.6) buys noise of
    scale 3 / 0.6, the scale of a one-record count at 0.2."""
    table = rt.PrivateTable(_records([3, 5], 10), ["a0", "a1"], epsilon=1.2, contributions=3)
    assert table._unit == 3
    out = table.release()
    assert [a.epsilon for a in out.attributes] == pytest.approx([0.6, 0.6])
    assert out.epsilon_spent <= 1.2
    direct = GeometricCountRelease(10, 0.2, estimator=out.attributes[0].estimator)
    assert out.attributes[0].worst_risk == pytest.approx(direct.risks()[1] / 100)


# ------------------------------------------------------------------ what is drawn, what is decided


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # n = 4: intervals cover all
def test_released_counts_follow_the_product_of_clamped_geometric_laws():
    """1200 tables of 4 records (counts 1 and 3), epsilon 2 over two attributes: chi-square against the law."""
    n, counts, epsilon = 4, [1, 3], 2.0
    data = _records(counts, n)
    law = np.exp(rt.attribute_log_law(n, epsilon / 2))
    draws = np.array([[round(a.estimate * n) for a in rt.release_table(data, ["a0", "a1"], epsilon).attributes]
                      for _ in range(1200)])
    for j, c in enumerate(counts):
        observed = np.bincount(draws[:, j], minlength=n + 1)
        assert stats.chisquare(observed, law[c] * observed.sum()).pvalue > ALPHA
    # independent noise: the two coordinates' joint table against the product
    joint = np.zeros((n + 1, n + 1))
    np.add.at(joint, (draws[:, 0], draws[:, 1]), 1)
    expected = np.outer(law[counts[0]], law[counts[1]]).ravel() * len(draws)
    keep = expected > 5
    assert stats.chisquare(joint.ravel()[keep], expected[keep] * joint.ravel()[keep].sum() / expected[keep].sum()).pvalue > ALPHA


def test_each_attribute_gets_the_recommended_estimator_with_its_risks_on_the_proportion_scale():
    n = 200
    data = _records([20, 150], n)
    for prior, criterion in [(None, None), ((1, 1), "average"), ((2, 2), "guarded")]:
        out = rt.release_table(data, ["a0", "a1"], 0.2, prior=prior, criterion=criterion)
        rec = recommend(n, 0.1, prior=prior, criterion=criterion)
        mech = GeometricCountRelease(n, 0.1, estimator=rt.ESTIMATOR_OF_CANDIDATE[rec.candidate], prior=prior)
        bayes, worst = mech.risks()
        for a in out.attributes:
            assert a.estimand == "proportion" and a.estimator == rt.ESTIMATOR_OF_CANDIDATE[rec.candidate]
            assert a.reason.startswith(f"{rec.criterion} criterion")
            assert a.worst_risk == pytest.approx(worst / n**2, rel=1e-12)
            assert (a.bayes_risk is None) == (prior is None)
            lo, hi = a.interval
            assert 0 <= lo <= hi <= 1 and round((hi - lo) * n) <= 2 * mech.half_width
    frame = out.to_frame()
    assert list(frame.index) == ["a0", "a1"] and {"estimate", "interval_low", "interval_high", "reason"} <= set(frame.columns)


def test_add_remove_needs_a_public_bound_and_releases_counts():
    data = _records([4, 9], 12)
    with pytest.raises(ValueError, match="needs n, a public bound"):
        rt.PrivateTable(data, ["a0", "a1"], epsilon=1.0, neighbours="add-remove")
    out = rt.release_table(data, ["a0", "a1"], 4.0, neighbours="add-remove", n=50)
    assert all(a.estimand == "count" and 0 <= a.estimate <= 50 and a.estimator in ("none", "minimax") for a in out.attributes)
    with pytest.raises(ValueError, match="prior-free estimators only"):
        rt.release_table(data, ["a0"], 1.0, neighbours="add-remove", n=50, prior=(1, 1))


# ------------------------------------------------------------------ the budget: OpenDP's compositor


def test_the_budget_is_split_over_releases_and_refused_once_spent():
    table = rt.PrivateTable(_records([3], 20), ["a0"], epsilon=1.0, releases=2, weights=[3, 1])
    assert table.release_epsilons == pytest.approx((0.75, 0.25))
    assert table.release().epsilon == pytest.approx(0.75)
    assert table.releases_left == 1
    assert table.release().epsilon == pytest.approx(0.25)
    with pytest.raises(rt.BudgetSpentError, match="spent"):
        table.release()


def test_opendp_itself_refuses_a_query_past_the_budget():
    """The library's own count is bypassed: OpenDP's compositor still refuses (the budget is OpenDP's, not ours)."""
    table = rt.PrivateTable(_records([3], 20), ["a0"], epsilon=1.0, releases=1)
    table.release()
    table._done = 0  # a bug that forgot the first release
    with pytest.raises(rt.BudgetSpentError, match="OpenDP refused"):
        table.release()


# ------------------------------------------------------------------ records in, bad input out


def test_counts_come_from_the_records_and_are_not_kept():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [True, False, True, True], "y": [0, 1, 0, 0], "z": ["a", "b", "a", "a"]})
    table = rt.PrivateTable(frame, ["x", "y"], epsilon=20.0)
    assert not any("count" in name for name in vars(table))
    assert rt.count_records(frame["x"], "x") == (3, 4) and rt.count_records(frame["y"].to_numpy(), "y") == (1, 4)
    out = table.release()
    assert table.n == 4 and len(out.attributes) == 2


@pytest.mark.parametrize("values, error, match", [
    ([0, 1, 2], ValueError, "other values or missing values"),
    ([0.0, float("nan")], ValueError, "missing values"),
    (["F", "M"], TypeError, "compare it with one category"),
    ([[0, 1]], ValueError, "1-D column"),
    ([], ValueError, "no records"),
])
def test_a_bad_column_is_refused_without_echoing_its_values(values, error, match):
    with pytest.raises(error, match=match) as info:
        rt.PrivateTable({"c": values}, ["c"], epsilon=1.0)
    assert "[0, 1, 2]" not in str(info.value) and "'F'" not in str(info.value)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(epsilon=0.0), ValueError, "epsilon must lie in"),
    (dict(epsilon="1"), TypeError, "epsilon must be a real number"),
    (dict(epsilon=1.0, columns="a0"), TypeError, "columns must be a list"),
    (dict(epsilon=1.0, columns=["a0", "a0"]), ValueError, "must not repeat"),
    (dict(epsilon=1.0, columns=["nope"]), KeyError, "not in data"),
    (dict(epsilon=1.0, contributions=0), ValueError, "contributions"),
    (dict(epsilon=1.0, releases=2, weights=[1.0]), ValueError, "weights must be a sequence of 2"),
    (dict(epsilon=1.0, attribute_weights=[1.0, 2.0]), ValueError, "attribute_weights must be a sequence of 1"),
    (dict(epsilon=1.0, attribute_weights=[0.0]), ValueError, r"attribute_weights\[0\] must be a positive"),
    (dict(epsilon=1.0, n=7), ValueError, "n must equal len"),
    (dict(epsilon=1.0, neighbours="unbounded"), ValueError, "neighbours must be one of"),
])
def test_bad_parameters_are_named_before_the_data_are_read(kwargs, error, match):
    data = _records([3], 5)
    columns = kwargs.pop("columns", ["a0"])
    with pytest.raises(error, match=match):
        rt.PrivateTable(data, columns, **kwargs)


def test_an_uninformative_interval_warns():
    with pytest.warns(UninformativeIntervalWarning, match="covers every value"):
        out = rt.release_table(_records([3, 4], 10), ["a0", "a1"], 0.05)
    assert all(a.uninformative and a.interval == (0.0, 1.0) for a in out.attributes)
