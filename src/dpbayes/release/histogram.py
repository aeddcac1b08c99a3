"""One categorical column released as a histogram: every category's count under one budget.

Each person's records fall in the categories of one column, so the vector of category counts of two neighbouring
data sets differs in L1 distance by at most ``contributions`` when one person's records are added or removed, and
by at most ``2 * contributions`` when they are replaced (a record leaves one category for another). That L1
distance is the privacy unit handed to OpenDP: one measurement, ``dp.m.make_geometric`` on the vector of counts
(two-sided geometric noise, OpenDP's discrete Laplace mechanism on integers) of scale ``unit / epsilon`` on every
count, whose privacy map OpenDP checks. A category's count therefore gets noise of scale ``2 / epsilon`` under
replace-one and ``1 / epsilon`` under add/remove (one person), whatever the number of categories: unlike
:mod:`dpbayes.release.table`, whose columns may all change at once, categories share the budget without
splitting it. Each noisy count is clamped to ``[0, n]`` and released as in :mod:`dpbayes.release.table`
(the estimator :func:`dpbayes.choosing.decision.recommend` chooses, exact risks, prior-free interval); the
category proportions are estimated one by one (they need not sum to one; rescaling them would be
post-processing, with other risks). The categories must be public: given by the caller, never read from the
data. The Dirichlet-posterior releases of chapter 2 take the same noisy counts. Beyond the book's sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpbayes.choosing.decision import CRITERIA, recommend
from dpbayes.core.neighbours import ADD_REMOVE, REPLACE_ONE, check_neighbours
from dpbayes.core.validation import check_choice, check_int, check_privacy_parameter
from dpbayes.release.statistic import (
    MAX_N, GeometricCountRelease, _check_level, _opendp, _warn_uninformative, calibrated_measurement,
)
from dpbayes.release.table import ESTIMATOR_OF_CANDIDATE, MAX_CONTRIBUTIONS, AttributeRelease, TableRelease

__all__ = ["MAX_CATEGORIES", "category_counts", "histogram_unit", "release_histogram"]

#: Largest number of categories of one histogram.
MAX_CATEGORIES = 1000


def category_counts(values: Any, categories: Sequence[Any], column: str) -> tuple[list[int], int]:
    """The count of each category and the number of records (confidential: never echoed).

    Raises
    ------
    ValueError
        When a value is not one of ``categories`` (the values are not repeated in the message).
    """
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"column {column!r} must hold one value per record (a 1-D column with at least one record)")
    counts = [int(np.count_nonzero(arr == c)) for c in categories]
    if sum(counts) != arr.size:
        raise ValueError(f"column {column!r} holds values outside the categories given, or missing values (the records "
                         "are confidential and not repeated here): list every category, or recode the column first by a "
                         "rule that does not look at the data")
    return counts, int(arr.size)


def histogram_unit(neighbours: str, contributions: int = 1) -> int:
    """L1 distance of the category counts of neighbouring data sets: ``2 * contributions`` (replace-one), ``contributions``."""
    return (2 if check_neighbours(neighbours) == REPLACE_ONE else 1) * int(contributions)


def release_histogram(
    data: Any, column: str, categories: Sequence[Any], epsilon: float, *, neighbours: str = REPLACE_ONE,
    n: int | None = None, contributions: int = 1, prior: Any = None, criterion: str | None = None, level: float = 0.9,
) -> TableRelease:
    """Release the histogram of one categorical column under ``epsilon`` (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame or mapping of str to array_like
        The records; ``data[column]`` holds one category per record.
    column : str
    categories : sequence
        Every possible value of the column (public; 2 to :data:`MAX_CATEGORIES`, no repeats).
    epsilon : float
        The histogram's privacy budget, in ``[1e-9, 20]``.
    neighbours, n, contributions, prior, criterion, level
        As :class:`dpbayes.release.table.PrivateTable` and its ``release``.

    Returns
    -------
    TableRelease
        One row per category, named ``"column=category"``; ``epsilon`` of each row is the budget of the
        count's noise for one person's change of that count (the histogram's ``epsilon`` times the count's
        share of the unit: ``epsilon / 2`` under replace-one).

    Notes
    -----
    Privacy guarantee: ``epsilon``-DP for data sets differing in one person's records under the chosen relation;
    OpenDP's map of the vector measurement at the unit is checked; everything after is post-processing.
    ``tests/release/test_histogram.py`` computes the exact privacy loss over every pair of neighbouring small data
    sets under both relations. Uses ``dp.enable_features("contrib")``.
    """
    epsilon = check_privacy_parameter(epsilon, "epsilon")
    neighbours = check_neighbours(neighbours)
    contributions = check_int("contributions", contributions, minimum=1, maximum=MAX_CONTRIBUTIONS)
    level = _check_level(level)
    if criterion is not None:
        criterion = check_choice("criterion", criterion, CRITERIA)
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
        raise TypeError(f"categories must be a list of the column's possible values, got {type(categories).__name__}")
    cats = list(categories)
    if not 2 <= len(cats) <= MAX_CATEGORIES:
        raise ValueError(f"categories must list between 2 and {MAX_CATEGORIES} values, got {len(cats)}")
    if len({repr(c) for c in cats}) != len(cats):
        raise ValueError("categories must not repeat a value")
    if neighbours == ADD_REMOVE:
        if n is None:
            raise ValueError("neighbours='add-remove' needs n, a public bound on the number of records (never len(data))")
        if prior is not None or criterion not in (None, "worst"):
            raise ValueError("neighbours='add-remove' releases prior-free estimators only (criterion='worst', no prior)")
        bound = check_int("n", n, minimum=1, maximum=MAX_N)
    if not hasattr(data, "__getitem__"):
        raise TypeError(f"data must be a pandas DataFrame or a mapping of column names to arrays, got {type(data).__name__}")
    try:
        values = data[column]
    except (KeyError, IndexError):
        raise KeyError(f"column {column!r} not in data") from None
    counts, size = category_counts(values, cats, column)
    if neighbours == REPLACE_ONE:
        if n is not None and check_int("n", n, minimum=1, maximum=MAX_N) != size:
            raise ValueError("n must equal len(data) under neighbours='replace-one' (the number of records is public there)")
        bound = check_int("len(data)", size, minimum=1, maximum=MAX_N)
    unit = histogram_unit(neighbours, contributions)
    eps_count = epsilon / unit  # the noise of one record's change of one count
    rec = recommend(bound, eps_count, prior=prior, criterion=criterion)
    mech = GeometricCountRelease(bound, eps_count, estimator=ESTIMATOR_OF_CANDIDATE[rec.candidate], prior=prior, level=level,
                                 neighbours=neighbours)
    dp = _opendp()
    space = (dp.vector_domain(dp.atom_domain(T=dp.i64), size=len(cats)), dp.l1_distance(T=dp.i64))
    meas = calibrated_measurement(lambda scale: dp.m.make_geometric(*space, scale=scale), unit / epsilon, unit, epsilon,
                                  "the histogram's geometric measurement")
    noisy = meas(counts)
    del counts  # the confidential counts are not kept
    bayes, worst = mech.risks()
    divide = float(bound) if neighbours == REPLACE_ONE else 1.0
    squared = mech.loss == "squared"
    reason = f"{rec.criterion} criterion: {rec.label}"
    rows = []
    k = mech.half_width
    for category, value in zip(cats, noisy):
        z = int(min(max(int(value), 0), bound))
        lo, hi = max(z - k, 0), min(z + k, bound)
        uninformative = lo == 0 and hi == bound
        if uninformative:
            _warn_uninformative(level, bound, eps_count, k, f"value of category {category!r}")
        rows.append(AttributeRelease(
            column=f"{column}={category}", estimand="proportion" if neighbours == REPLACE_ONE else "count",
            estimate=mech.estimate_of(z) / divide, interval=(lo / divide, hi / divide), level=level, uninformative=uninformative,
            estimator=mech.estimator, reason=reason, epsilon=eps_count,
            worst_risk=worst / (divide**2 if squared else divide),
            bayes_risk=None if bayes is None else bayes / (divide**2 if squared else divide),
        ))
    return TableRelease(attributes=tuple(rows), epsilon=epsilon, epsilon_spent=float(meas.map(unit)), neighbours=neighbours,
                        contributions=contributions, n=bound, criterion=rec.criterion)
