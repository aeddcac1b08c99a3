"""dpbayes.release.histogram: one categorical column, every category's count under one budget.

The privacy loss is exact (every pair of neighbouring small data sets, both relations); the released law is
checked with a chi-square test at false-alarm rate 1e-4 (OpenDP's noise cannot be seeded).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("opendp")

from dpbayes.core.geometric import clamped_geometric_logmatrix  # noqa: E402
from dpbayes.release import histogram as rh  # noqa: E402

ALPHA = 1e-4


def _loss(m: int, bound: int, epsilon: float, relation: str) -> float:
    """Largest log ratio of the released law (each category's count, clamped geometric at epsilon / unit, independent)
    between neighbouring data sets of at most ``bound`` records in ``m`` categories, one record per person."""
    eps_count = epsilon / rh.histogram_unit(relation)
    law = clamped_geometric_logmatrix(np.arange(bound + 1), 0, bound, eps_count)
    worst = 0.0
    sizes = [bound] if relation == "replace-one" else range(bound + 1)
    for size in sizes:
        for counts in itertools.product(range(size + 1), repeat=m):
            if sum(counts) != size:
                continue
            if relation == "replace-one":  # one record moves from category i to category j
                steps = [tuple(c - (k == i) + (k == j) for k, c in enumerate(counts))
                         for i in range(m) if counts[i] > 0 for j in range(m) if j != i]
            else:  # one record added to category j
                steps = [tuple(c + (k == j) for k, c in enumerate(counts)) for j in range(m)] if size < bound else []
            for other in steps:
                total = sum(float(np.max(np.abs(law[a] - law[b]))) for a, b in zip(counts, other))
                worst = max(worst, total)
    return worst


@pytest.mark.parametrize("m, bound, epsilon", [(3, 3, 1.0), (2, 4, 0.7)])
def test_the_histogram_loses_exactly_its_budget_under_both_relations(m, bound, epsilon):
    """Whatever the number of categories: a moved record changes two counts (replace-one, each at epsilon / 2), an
    added one a single count (add/remove, at epsilon)."""
    for relation in ("replace-one", "add-remove"):
        assert _loss(m, bound, epsilon, relation) == pytest.approx(epsilon, rel=1e-9), relation


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # 5 records
def test_released_counts_follow_the_clamped_geometric_law():
    data = {"colour": np.array(["red", "red", "blue", "green", "red"], dtype=object)}
    counts, n, epsilon = [3, 1, 1], 5, 2.0
    law = np.exp(clamped_geometric_logmatrix(np.arange(n + 1), 0, n, epsilon / 2))
    draws = np.array([[round(a.estimate * n) for a in rh.release_histogram(data, "colour", ["red", "blue", "green"], epsilon).attributes]
                      for _ in range(800)])
    for j, c in enumerate(counts):
        observed = np.bincount(draws[:, j], minlength=n + 1)
        keep = law[c] * len(draws) > 5
        assert stats.chisquare(observed[keep], law[c][keep] * observed[keep].sum() / law[c][keep].sum()).pvalue > ALPHA


def test_each_category_reports_its_proportion_interval_and_estimator():
    rng = np.random.default_rng(3)
    values = rng.choice(["a", "b", "c", "d"], size=2000, p=[0.4, 0.3, 0.2, 0.1])
    out = rh.release_histogram({"x": values}, "x", ["a", "b", "c", "d"], 4.0)
    assert [a.column for a in out.attributes] == ["x=a", "x=b", "x=c", "x=d"]
    assert out.epsilon_spent <= 4.0 and all(a.epsilon == pytest.approx(2.0) for a in out.attributes)
    for a, share in zip(out.attributes, (0.4, 0.3, 0.2, 0.1)):
        assert a.estimand == "proportion" and a.interval[0] <= a.estimate <= a.interval[1]
        assert abs(a.estimate - np.mean(values == a.column[-1])) < 0.01
    counts = rh.release_histogram({"x": values}, "x", ["a", "b", "c", "d"], 4.0, neighbours="add-remove", n=5000)
    assert all(a.estimand == "count" for a in counts.attributes) and counts.n == 5000


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(categories=["a"]), ValueError, "between 2 and"),
    (dict(categories="ab"), TypeError, "list of the column's possible values"),
    (dict(categories=["a", "a"]), ValueError, "must not repeat"),
    (dict(categories=["a", "b"]), ValueError, "outside the categories"),
    (dict(column="nope"), KeyError, "not in data"),
    (dict(epsilon="1"), TypeError, "epsilon must be a real number"),
    (dict(neighbours="add-remove"), ValueError, "needs n"),
])
def test_bad_calls_are_refused_without_echoing_values(kwargs, error, match):
    args = dict(data={"x": np.array(["a", "b", "secret-value"], dtype=object)}, column="x",
                categories=["a", "b", "secret-value"], epsilon=1.0)
    args.update(kwargs)
    with pytest.raises(error, match=match) as info:
        rh.release_histogram(args.pop("data"), args.pop("column"), args.pop("categories"), args.pop("epsilon"), **args)
    if "categories" in kwargs and kwargs["categories"] == ["a", "b"]:
        assert "secret-value" not in str(info.value)
