"""A table of binary attributes released under one privacy budget: records in, OpenDP's composition.

:mod:`dpbayes.release.statistic` releases one count that the caller has computed. Here the caller hands
over the *records* (a pandas DataFrame, or any mapping from column names to 1-D arrays of ``0/1`` or
``True/False``) and names the columns to release; the counts are computed inside and never returned.

Privacy unit and neighbours. One person contributes at most ``contributions`` records (default 1). Two
data sets are neighbours when they differ in one person's records, replaced (``"replace-one"``: the number
of records ``n`` is public, and is taken as ``len(data)``) or added or removed (``"add-remove"``: ``n``
is confidential and the caller gives ``n``, a public *bound* on it; :mod:`dpbayes.core.neighbours`). Under
either relation each of the ``k`` counts moves by at most ``contributions``: the vectors of counts of
neighbours are within ``contributions`` in L-infinity distance, the privacy unit handed to OpenDP.

The release. The vector of counts is the input of OpenDP's compositor
(``dp.c.make_adaptive_composition``, input metric ``linf_distance``) with that unit and the total
``epsilon``, split evenly over ``releases`` queries or by the caller's ``weights``; OpenDP's compositor
refuses a query past its share, and any query once the budget is spent. Each query is OpenDP's composition
(``dp.c.make_composition``) of one measurement per attribute: the attribute's count (a transformation
that reads one coordinate, 1-Lipschitz from L-infinity to the absolute distance) followed by
``dp.m.make_geometric`` (two-sided geometric noise, which OpenDP's documentation also calls the discrete
Laplace mechanism on integers; "geometric" in this book) of scale ``contributions / epsilon_j``. The
query's budget is split over the attributes evenly or by the caller's ``attribute_weights``, and OpenDP's
privacy map of every measurement and of their composition is checked against its share. Every noisy count
is then clamped to ``[0, n]`` and post-processed by the estimator :func:`dpbayes.choosing.decision.recommend`
chooses for the caller's criterion at the attribute's share, with its exact risks and a prior-free interval
(:class:`dpbayes.release.statistic.GeometricCountRelease`). Clamping, the estimate and the interval are
post-processing.

Estimand: the data set's proportion ``count / n`` under ``"replace-one"``; the count under
``"add-remove"`` (its denominator is confidential there). Beyond the book's sources.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbayes.choosing.decision import CRITERIA, recommend
from dpbayes.core._extras import require
from dpbayes.core.geometric import clamped_geometric_logmatrix
from dpbayes.core.neighbours import ADD_REMOVE, REPLACE_ONE, check_neighbours
from dpbayes.core.validation import check_choice, check_int, check_privacy_parameter
from dpbayes.release.statistic import (
    MAX_N, GeometricCountRelease, PrivacyMapError, _check_level, _opendp, _warn_uninformative, calibrated_measurement,
)

__all__ = [
    "MAX_ATTRIBUTES", "MAX_CONTRIBUTIONS", "ESTIMATOR_OF_CANDIDATE", "BudgetSpentError", "AttributeRelease",
    "TableRelease", "PrivateTable", "release_table", "count_records", "attribute_log_law",
]

#: Largest number of attributes of one table (the vector measurement's size).
MAX_ATTRIBUTES = 1000
#: Largest number of records one person may contribute.
MAX_CONTRIBUTIONS = 10_000
#: The :class:`~dpbayes.release.statistic.GeometricCountRelease` estimator of each candidate
#: :func:`~dpbayes.choosing.decision.recommend` may choose.
ESTIMATOR_OF_CANDIDATE = {"geometric": "none", "geometric-minimax": "minimax", "geometric-bayes": "mean", "geometric-median": "median"}


class BudgetSpentError(RuntimeError):
    """OpenDP's compositor refused a release: the table's privacy budget is spent."""


def count_records(values: Any, column: str) -> tuple[int, int]:
    """The count of ones and the number of records of one column (confidential: never echoed).

    Parameters
    ----------
    values : array_like, 1-D
        ``True/False`` or ``0/1`` per record (a NumPy array, a pandas Series, a list).
    column : str
        The column's name, for messages.

    Returns
    -------
    count, n : int
    """
    arr = np.asarray(values)
    hint = f"column {column!r} must hold one 0/1 or True/False value per record"
    if arr.ndim != 1:
        raise ValueError(f"{hint} (a 1-D column), got {arr.ndim} dimensions")
    if arr.size == 0:
        raise ValueError(f"{hint}; it has no records")
    if arr.dtype == bool:
        return int(np.count_nonzero(arr)), int(arr.size)
    if arr.dtype.kind in "iuf":
        ok = (arr == 0) | (arr == 1)  # NaN fails both
        if not bool(np.all(ok)):
            raise ValueError(f"{hint}; other values or missing values were found (the records are confidential and "
                             "not repeated here): recode or drop them first, by a rule that does not look at the data")
        return int(np.count_nonzero(arr == 1)), int(arr.size)
    raise TypeError(f"{hint}, got values of type {arr.dtype} (a pandas column with missing values: drop or recode them "
                    "first; a column of categories: compare it with one category first, e.g. data[column] == category)")


def attribute_log_law(bound: int, epsilon: float) -> NDArray[np.float64]:
    """``log P(z | count)`` of one attribute's released count: geometric noise of scale ``1/epsilon``, clamped to ``[0, bound]``.

    Rows: counts ``0..bound``; columns: ``z = 0..bound``. What :meth:`PrivateTable.release` draws for each
    attribute (OpenDP's vector geometric measurement adds independent noise to every count); the law of the
    whole release is the product over the attributes. Dense: for the privacy audit of small tables.
    """
    bound = check_int("bound", bound, minimum=1, maximum=5000)
    return clamped_geometric_logmatrix(np.arange(bound + 1), 0, bound, float(epsilon))


@dataclass(frozen=True)
class AttributeRelease:
    """One attribute of a :class:`TableRelease`.

    Attributes
    ----------
    column : str
    estimand : {"proportion", "count"}
        The data set's proportion (replace-one) or count (add/remove).
    estimate : float
        The chosen estimator applied to the noisy count, on the estimand's scale.
    interval : tuple of float
        The prior-free interval around the noisy count, on the estimand's scale: covers the truth with
        probability at least ``level`` at every count.
    level : float
    uninformative : bool
        The interval covers every possible value (the release warns,
        :class:`~dpbayes.release.statistic.UninformativeIntervalWarning`).
    estimator : {"none", "minimax", "mean", "median"}
        As :class:`~dpbayes.release.statistic.GeometricCountRelease` names it.
    reason : str
        Why :func:`~dpbayes.choosing.decision.recommend` chose it: the criterion and the runner-up.
    epsilon : float
        This attribute's share of the release's budget (the shares of one release sum to at most its
        budget); the count's noise has scale ``contributions / epsilon``.
    worst_risk : float
        Exact largest risk over the possible counts, on the estimand's scale (squared error, or absolute
        error for the posterior median).
    bayes_risk : float or None
        Exact risk averaged over the prior (``None`` without a prior).
    """

    column: str
    estimand: str
    estimate: float
    interval: tuple[float, float]
    level: float
    uninformative: bool
    estimator: str
    reason: str
    epsilon: float
    worst_risk: float
    bayes_risk: float | None


@dataclass(frozen=True)
class TableRelease:
    """One release of every attribute of a :class:`PrivateTable`.

    Attributes
    ----------
    attributes : tuple of AttributeRelease
    epsilon : float
        This release's budget (all attributes together).
    epsilon_spent : float
        OpenDP's privacy map of the release's composed measurement at the privacy unit (``<= epsilon``).
    neighbours : str
    contributions : int
    n : int
        The public number of records (replace-one) or the public bound (add/remove).
    criterion : str
    """

    attributes: tuple[AttributeRelease, ...]
    epsilon: float
    epsilon_spent: float
    neighbours: str
    contributions: int
    n: int
    criterion: str

    def to_dict(self) -> dict[str, list[Any]]:
        """Column name -> values, one entry per attribute (what :meth:`to_frame` tabulates)."""
        fields = ("column", "estimand", "estimate", "interval", "level", "estimator", "epsilon", "worst_risk",
                  "bayes_risk", "uninformative", "reason")
        return {f: [getattr(a, f) for a in self.attributes] for f in fields}

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per attribute (needs pandas: the ``data`` extra).

        Indexed by ``column``; its columns are the other keys of :meth:`to_dict`, with the same names, the interval
        split into ``interval_low`` and ``interval_high``.
        """
        pd = require("pandas", "TableRelease.to_frame (a table of releases)")
        frame = pd.DataFrame(self.to_dict()).set_index("column")
        lo_hi = frame.pop("interval")
        frame.insert(2, "interval_low", [lo for lo, _ in lo_hi])
        frame.insert(3, "interval_high", [hi for _, hi in lo_hi])
        return frame


def _check_weights(name: str, weights: Any, size: int, per: str) -> list[float]:
    """``weights`` as floats (``[1] * size`` when ``None``): ``size`` positive finite numbers, one per ``per``."""
    if weights is None:
        return [1.0] * size
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or len(weights) != size:
        raise ValueError(f"{name} must be a sequence of {size} positive numbers (one per {per}), got {weights!r}")
    out = []
    for i, w in enumerate(weights):
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real) or not float(w) > 0 or not np.isfinite(float(w)):
            raise ValueError(f"{name}[{i}] must be a positive finite number, got {w!r}")
        out.append(float(w))
    return out


def _split(epsilon: float, weights: Sequence[float]) -> tuple[float, ...]:
    """``epsilon`` in proportion to ``weights``, rounded down where needed so that the shares sum to at most ``epsilon``."""
    total = float(sum(weights))
    shares = [epsilon * w / total for w in weights]
    while sum(shares) > epsilon:
        shares = [float(np.nextafter(x, 0.0)) for x in shares]
    return tuple(shares)


class PrivateTable:
    """Binary attributes of a table, released under one privacy budget with OpenDP's compositor.

    Parameters
    ----------
    data : pandas.DataFrame or mapping of str to array_like
        The records: ``data[column]`` is a 1-D array of ``0/1`` or ``True/False``, one value per record,
        the same length for every column.
    columns : sequence of str
        The attributes to release (at least one, at most :data:`MAX_ATTRIBUTES`, no repeats).
    epsilon : float
        Total privacy budget of every release of this table together, in ``[1e-9, 20]``.
    releases : int
        Number of releases the budget is split over (evenly unless ``weights``), ``>= 1``.
    weights : sequence of float, optional
        Relative budget of each release (default: even).
    attribute_weights : sequence of float, optional
        Relative budget of each attribute within every release, in the order of ``columns`` (default:
        even). Decided before the data are seen: weights chosen by looking at the counts leak them.
    neighbours : {"replace-one", "add-remove"}
        The neighbour relation (module docstring).
    n : int, optional
        ``"add-remove"``: required, a public bound on the number of records (never ``len(data)``).
        ``"replace-one"``: the public number of records; if given it must equal ``len(data)``.
    contributions : int
        Largest number of records of one person, ``1 <= contributions <= MAX_CONTRIBUTIONS``.

    Notes
    -----
    Privacy guarantee: ``epsilon``-DP for the whole sequence of releases, for data sets differing in one
    person's records under the chosen relation: OpenDP's adaptive compositor holds the vector of counts, with
    input distance ``contributions`` in L-infinity and the budget split up front, and refuses queries past it;
    each query is OpenDP's composition of one geometric measurement per attribute, every privacy map
    checked; everything after is post-processing. ``tests/release/test_table.py`` computes the exact
    privacy loss of a release over every pair of neighbouring small tables under both relations, with even
    and uneven attribute weights. Uses ``dp.enable_features("contrib", "honest-but-curious")``: the second
    flag is OpenDP's for a transformation written outside it, here the one that reads a coordinate of the
    vector (its stability map is the identity, as the test's exact loss confirms).
    """

    def __init__(
        self, data: Any, columns: Sequence[str], *, epsilon: float, releases: int = 1, weights: Sequence[float] | None = None,
        attribute_weights: Sequence[float] | None = None, neighbours: str = REPLACE_ONE, n: int | None = None,
        contributions: int = 1,
    ) -> None:
        # every public parameter is checked before the data are read
        self.epsilon = check_privacy_parameter(epsilon, "epsilon")
        self.releases = check_int("releases", releases, minimum=1, maximum=10_000)
        split = _check_weights("weights", weights, self.releases, "release")
        self.neighbours = check_neighbours(neighbours)
        self.contributions = check_int("contributions", contributions, minimum=1, maximum=MAX_CONTRIBUTIONS)
        if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence):
            raise TypeError(f"columns must be a list of column names, got {type(columns).__name__}")
        self.columns = tuple(str(c) for c in columns)
        if not 1 <= len(self.columns) <= MAX_ATTRIBUTES:
            raise ValueError(f"columns must name between 1 and {MAX_ATTRIBUTES} attributes, got {len(self.columns)}")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("columns must not repeat a name (a repeated attribute would be released twice)")
        self.attribute_weights = tuple(_check_weights("attribute_weights", attribute_weights, len(self.columns), "column"))
        if self.neighbours == ADD_REMOVE:
            if n is None:
                raise ValueError("neighbours='add-remove' needs n, a public bound on the number of records "
                                 "(never len(data): the data set's size is confidential under this relation)")
            bound = check_int("n", n, minimum=1, maximum=MAX_N)
        if not isinstance(data, Mapping) and not hasattr(data, "columns"):
            raise TypeError(f"data must be a pandas DataFrame or a mapping of column names to arrays, got {type(data).__name__}")
        available = list(data.columns) if hasattr(data, "columns") else list(data.keys())
        missing = [c for c in self.columns if c not in available]
        if missing:
            raise KeyError(f"columns not in data: {', '.join(map(repr, missing))}")
        counts, sizes = zip(*(count_records(data[c], c) for c in self.columns))
        if len(set(sizes)) != 1:
            raise ValueError("every column must have one value per record (the columns differ in length)")
        if self.neighbours == REPLACE_ONE:
            size = sizes[0]
            if n is not None and check_int("n", n, minimum=1, maximum=MAX_N) != size:
                raise ValueError("n must equal len(data) under neighbours='replace-one' (the number of records is public there)")
            bound = check_int("len(data)", size, minimum=1, maximum=MAX_N)
        self.n = bound
        k = len(self.columns)
        self._unit = self.contributions  # L-infinity distance of the count vectors of neighbours
        dp = _opendp()
        dp.enable_features("honest-but-curious")  # for the coordinate-reading transformation (class notes)
        # 64-bit integers: a count plus noise of scale up to contributions / 1e-9 cannot overflow
        self._space = (dp.vector_domain(dp.atom_domain(T=dp.i64), size=k), dp.linf_distance(T=dp.i64))
        self.release_epsilons = _split(self.epsilon, split)
        compositor = dp.c.make_adaptive_composition(
            *self._space, dp.max_divergence(), d_in=self._unit, d_mids=list(self.release_epsilons))
        if float(compositor.map(self._unit)) > self.epsilon:
            raise PrivacyMapError(f"OpenDP's privacy map of the composition exceeds epsilon = {self.epsilon!r}")
        # the counts go into OpenDP's compositor (a queryable that refuses queries past the budget), not kept here
        self._queryable = compositor([int(c) for c in counts])
        self._done = 0

    @property
    def releases_left(self) -> int:
        """How many releases the budget still allows."""
        return self.releases - self._done

    def _attribute_measurement(self, j: int, epsilon: float) -> Any:
        """Attribute ``j``'s count with geometric noise, OpenDP's privacy map at the unit ``<= epsilon``."""
        dp = _opendp()
        read = dp.t.make_user_transformation(
            *self._space, dp.atom_domain(T=dp.i64), dp.absolute_distance(T=dp.i64),
            function=lambda counts: counts[j], stability_map=lambda d_in: d_in)
        return calibrated_measurement(lambda scale: read >> dp.m.then_geometric(scale=scale), self._unit / epsilon,
                                      self._unit, epsilon, f"attribute {j}'s geometric measurement")

    def _measurement(self, epsilon: float) -> tuple[Any, tuple[float, ...]]:
        """The query: OpenDP's composition of every attribute's measurement, and each attribute's share."""
        dp = _opendp()
        shares = _split(epsilon, self.attribute_weights)
        for _ in range(8):  # OpenDP sums the shares' maps rounding up: shrink the shares by ulps until it fits
            meas = dp.c.make_composition([self._attribute_measurement(j, e) for j, e in enumerate(shares)])
            if float(meas.map(self._unit)) <= epsilon:
                return meas, shares
            shares = tuple(float(x * (1.0 - 4.0 * np.finfo(float).eps)) for x in shares)
        raise PrivacyMapError(f"OpenDP's privacy map of the composed attributes exceeds epsilon = {epsilon!r}")

    def release(self, *, prior: Any = None, criterion: str | None = None, level: float = 0.9) -> TableRelease:
        """Release every attribute once, spending the next share of the budget.

        Parameters
        ----------
        prior : (a, b), optional
            A Beta prior on each attribute's proportion, for the ``"average"`` and ``"guarded"`` criteria
            (replace-one only: a prior on a count assumes a known number of records).
        criterion : {"average", "worst", "guarded"}, optional
            As :func:`~dpbayes.choosing.decision.recommend`: default ``"worst"`` without a prior, ``"guarded"`` with one.
        level : float
            Coverage of each prior-free interval, in ``(0, 1)``.

        Raises
        ------
        BudgetSpentError
            When OpenDP's compositor refuses the query (the budget is spent).
        """
        level = _check_level(level)
        if criterion is not None:
            criterion = check_choice("criterion", criterion, CRITERIA)
        if self.neighbours == ADD_REMOVE and (prior is not None or criterion not in (None, "worst")):
            raise ValueError("neighbours='add-remove' releases prior-free estimators only (criterion='worst', no prior): "
                             "a prior on a count assumes a known number of records")
        if self._done >= self.releases:
            raise BudgetSpentError(f"the privacy budget epsilon = {self.epsilon:g} is spent: {self.releases} release(s) made")
        eps_q = self.release_epsilons[self._done]
        meas, shares = self._measurement(eps_q)
        # the decision and the estimator depend on public quantities only (n, each attribute's share)
        mechs: dict[float, tuple[Any, GeometricCountRelease]] = {}
        for share in shares:
            if share not in mechs:
                eps_count = share / self._unit  # the noise of one record's change
                rec = recommend(self.n, eps_count, prior=prior, criterion=criterion)
                mechs[share] = (rec, GeometricCountRelease(
                    self.n, eps_count, estimator=ESTIMATOR_OF_CANDIDATE[rec.candidate], prior=prior, level=level,
                    neighbours=self.neighbours))
        try:
            noisy = self._queryable(meas)
        except Exception as exc:  # OpenDP's compositor: "insufficient budget" / "out of queries"
            raise BudgetSpentError(f"OpenDP refused the release: {exc}") from None
        self._done += 1
        scale = float(self.n) if self.neighbours == REPLACE_ONE else 1.0
        estimand = "proportion" if self.neighbours == REPLACE_ONE else "count"
        rows = []
        for column, value, share in zip(self.columns, noisy, shares):
            rec, mech = mechs[share]
            bayes, worst = mech.risks()
            squared = mech.loss == "squared"
            reason = f"{rec.criterion} criterion: {rec.label}"
            if rec.comparison is None:  # decided by the bound (large n)
                reason += f"; no remap has a worst risk lower by more than {rec.tie:.0%} (certified bound)"
            elif rec.runner_up != rec.candidate and np.isfinite(rec.margin):
                reason += f"; runner-up {rec.runner_up} at {rec.margin:.3g} x"
                if rec.margin < 1.0:  # better, but by less than the tie: not worth a less simple release
                    reason += f" (within {rec.tie:.0%}: the simpler release is chosen)"
            k = mech.half_width
            z = int(min(max(int(value), 0), self.n))
            lo, hi = max(z - k, 0), min(z + k, self.n)
            uninformative = lo == 0 and hi == self.n
            if uninformative:
                _warn_uninformative(level, self.n, mech.epsilon, k, f"value of column {column!r}")
            rows.append(AttributeRelease(
                column=column, estimand=estimand, estimate=mech.estimate_of(z) / scale, interval=(lo / scale, hi / scale),
                level=level, uninformative=uninformative, estimator=mech.estimator, reason=reason, epsilon=share,
                worst_risk=worst / (scale**2 if squared else scale),
                bayes_risk=None if bayes is None else bayes / (scale**2 if squared else scale),
            ))
        return TableRelease(attributes=tuple(rows), epsilon=eps_q, epsilon_spent=float(meas.map(self._unit)),
                            neighbours=self.neighbours, contributions=self.contributions, n=self.n,
                            criterion=next(iter(mechs.values()))[0].criterion)


def release_table(
    data: Any, columns: Sequence[str], epsilon: float, *, neighbours: str = REPLACE_ONE, n: int | None = None,
    contributions: int = 1, attribute_weights: Sequence[float] | None = None, prior: Any = None,
    criterion: str | None = None, level: float = 0.9,
) -> TableRelease:
    """Release the named binary columns of ``data`` once under a total ``epsilon`` (split evenly, or by ``attribute_weights``).

    Shorthand for ``PrivateTable(data, columns, epsilon=epsilon, neighbours=neighbours, n=n,
    contributions=contributions, attribute_weights=attribute_weights).release(prior=prior, criterion=criterion,
    level=level)``; see :class:`PrivateTable` for the privacy unit, the neighbour relation and the guarantee.
    """
    table = PrivateTable(data, columns, epsilon=epsilon, neighbours=neighbours, n=n, contributions=contributions,
                         attribute_weights=attribute_weights)
    return table.release(prior=prior, criterion=criterion, level=level)
