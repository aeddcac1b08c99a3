"""One decision: which release of a count, for a criterion the user names.

Every verdict of the book on "which estimator?" and the defaults of :mod:`dpbayes.release.statistic`
come from :func:`recommend`. The estimand is the data set's proportion ``c / n`` (or ``theta``), the
neighbours are data sets of ``n`` records with one record replaced (``n`` public), and the risks are
the exact ones of :func:`dpbayes.choosing.candidates.compare_estimators`. Three criteria:

* ``"average"``: the smallest risk averaged over the user's prior (the Bayes criterion; its optimum
  is the Bayes remap of the geometric count, Ghosh, Roughgarden & Sundararajan 2009);
* ``"worst"``: the smallest worst risk over data sets, no prior (the minimax criterion; its optimum
  is the minimax remap of the geometric count, Gupte & Sundararajan 2010, certified by the Bayes risk
  of a least-favourable prior, :mod:`dpbayes.choosing.minimax`);
* ``"guarded"``: the smallest average risk among the releases whose worst risk is at most
  ``(1 + guard)`` times the smallest worst risk (a prior that is trusted, but not at any price).

Releases whose criterion value is within ``tie`` (default :data:`TIE_TOLERANCE`, 1 %) of the best are
equivalent, and the simplest of them is chosen, in the order of :data:`RELEASES` (the noisy count itself,
its minimax remap, the posterior mean, the posterior median): a difference of 0.02 % in risk is no reason to
publish a remap. Only releases :mod:`dpbayes.release.statistic` can make are candidates (:data:`RELEASES`); the
Laplace-noise candidates of the registry are dominated by their geometric counterparts at every
setting the book tabulates (chapter 5) and LBaPP is not a release of this library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from dpbayes.choosing import minimax_bound
from dpbayes.choosing.candidates import CANDIDATES, Comparison, _as_prior, compare_estimators, minimax_certificate
from dpbayes.core.validation import check_choice, check_in_range, check_int

__all__ = ["CRITERIA", "DEFAULT_GUARD", "TIE_TOLERANCE", "RELEASES", "Recommendation", "recommend", "PRIOR_FREE_ORDER", "PriorGain", "prior_gain_of", "prior_gain", "Crossing", "n_eps_crossings", "n_eps_regions"]

#: The criteria of :func:`recommend`.
CRITERIA = ("average", "worst", "guarded")
#: Default ``guard`` of the ``"guarded"`` criterion: the worst risk may exceed the smallest by 10 %.
DEFAULT_GUARD = 0.1
#: Default ``tie`` of :func:`recommend`: releases within 1 % of the best by the criterion are equivalent.
TIE_TOLERANCE = 0.01
#: From this many records on, the worst criterion without a prior is decided by the bound of
#: :mod:`dpbayes.choosing.minimax_bound` when it can (``O(1 / eps)`` instead of the full comparison's ``O(n)``
#: time and memory and the minimax remap's optimisation; the bound exists from ``n >= 2 D`` on, about
#: ``1500 / eps`` records). Below it the full comparison reports the runner-up's exact margin, which the
#: bound does not give.
BOUND_MIN_N = 100_000
#: The releasable candidates, simplest first (ties go to the earlier), and the call of
#: :mod:`dpbayes.release.statistic` that makes each (``{prior}`` is filled with the user's ``(a, b)``).
RELEASES: dict[str, str] = {
    "geometric": 'release_count_geometric(count, n, epsilon)',
    "geometric-minimax": 'release_count_geometric(count, n, epsilon, estimator="minimax")',
    "geometric-bayes": 'release_count_geometric(count, n, epsilon, estimator="mean", prior={prior})',
    "geometric-median": 'release_count_geometric(count, n, epsilon, estimator="median", prior={prior})',
}


@dataclass(frozen=True)
class Recommendation:
    """The release :func:`recommend` chooses, with the numbers that decide it.

    Attributes
    ----------
    criterion : {"average", "worst", "guarded"}
    candidate, label : str
        The chosen candidate's registry name and what a reader calls it.
    call : str
        The :mod:`dpbayes.release.statistic` call that releases it.
    bayes_risk : float or None
        Its risk averaged over the prior (``None`` without a prior).
    worst_risk : float
        Its worst risk over data sets.
    runner_up : str
        The best other candidate by the same criterion (the simplest of those within ``tie`` of it).
    margin : float
        The runner-up's criterion value over the chosen one's. Below 1 in two cases: the runner-up is a
        less simple release better by less than ``tie`` (an equivalent one), or under ``"guarded"`` it is
        the best excluded one (better on average, worse than the guard allows in the worst case).
    equivalent : tuple of str
        The releases within ``tie`` of the best by the criterion (the chosen one is the first of them).
    tie : float
        The relative tolerance of equivalence.
    minimax_lower_bound : float
        Certified lower bound on the worst risk of *any* remap of the geometric count (the Bayes risk of
        the least-favourable prior found); the chosen release's ``worst_risk`` over it says how far
        from worst-case optimal it is.
    guard : float or None
        The guard of the ``"guarded"`` criterion.
    comparison : Comparison or None
        The exact risks of every candidate considered; ``None`` when the bound of
        :mod:`dpbayes.choosing.minimax_bound` decided (worst criterion, no prior, ``n`` large against ``1 / epsilon``): then
        ``runner_up`` is the minimax remap, ``margin`` is ``nan`` (not computed) and ``minimax_lower_bound`` is
        that bound, within ``tie`` of the chosen release's ``worst_risk``.
    """

    criterion: str
    candidate: str
    label: str
    call: str
    bayes_risk: float | None
    worst_risk: float
    runner_up: str
    margin: float
    minimax_lower_bound: float
    guard: float | None
    comparison: Comparison | None
    equivalent: tuple[str, ...] = ()
    tie: float = TIE_TOLERANCE


def recommend(
    n: int,
    epsilon: float,
    *,
    prior: Any = None,
    criterion: str | None = None,
    guard: float = DEFAULT_GUARD,
    estimand: str = "proportion",
    loss: str = "squared",
    tie: float = TIE_TOLERANCE,
) -> Recommendation:
    """The release of a count of ``n`` records under epsilon-DP that is best by the named criterion.

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= 10**7``.
    epsilon : float
        Privacy parameter in ``[1e-9, 20]`` (neighbours: one record replaced).
    prior : (a, b) or CountPrior, optional
        The prior the user would defend (Beta on the proportion, or a known ``p``); ``None``: no prior,
        and only ``criterion="worst"`` applies.
    criterion : {"average", "worst", "guarded"}, optional
        Default ``"worst"`` without a prior and ``"guarded"`` with one.
    guard : float
        Allowed relative excess of the worst risk over the smallest, ``0 <= guard <= 10`` (``"guarded"``).
    estimand : {"proportion", "theta"}
        The data set's proportion (default) or the population parameter.
    loss : {"squared", "absolute"}
        Absolute error for the proportion only.
    tie : float
        Releases within this relative tolerance of the best by the criterion are equivalent and the
        simplest is chosen, ``0 <= tie <= 1``.

    Returns
    -------
    Recommendation

    Raises
    ------
    ValueError
        For a criterion that needs a prior when none is given, or any parameter out of range (checked
        before any computation).
    """
    if criterion is None:
        criterion = "worst" if prior is None else "guarded"
    criterion = check_choice("criterion", criterion, CRITERIA)
    guard = float(check_in_range("guard", guard, 0.0, 10.0))
    tie = float(check_in_range("tie", tie, 0.0, 1.0))
    if prior is None and criterion != "worst":
        raise ValueError(f"criterion={criterion!r} averages over a prior: give prior=(a, b), or use criterion='worst'")
    analyst = _as_prior((1.0, 1.0) if prior is None else prior)
    if prior is None and criterion == "worst":
        decided = _decided_by_bound(n, epsilon, estimand, loss, tie)
        if decided is not None:
            return decided
    names = [nm for nm in RELEASES if prior is not None or not CANDIDATES[nm].uses_prior]
    cmp = compare_estimators(n, epsilon, prior=analyst, estimand=estimand, candidates=names, loss=loss)
    idx = {nm: i for i, nm in enumerate(cmp.names)}
    if criterion == "average":
        pool, key = list(cmp.names), (lambda nm: cmp.bayes_risk[idx[nm]])
    elif criterion == "worst":
        pool, key = list(cmp.names), (lambda nm: (cmp.worst_risk[idx[nm]], cmp.bayes_risk[idx[nm]]))
    else:
        pool, key = list(cmp.guarded(guard)), (lambda nm: cmp.bayes_risk[idx[nm]])
    value = (lambda nm: cmp.worst_risk[idx[nm]]) if criterion == "worst" else (lambda nm: cmp.bayes_risk[idx[nm]])
    ranked = sorted(pool, key=key)
    best = value(ranked[0])
    # equivalent within the tie: the simplest (earliest in RELEASES) is chosen
    equivalent = tuple(nm for nm in RELEASES if nm in pool and value(nm) <= best * (1.0 + tie))
    chosen = equivalent[0]
    # the runner-up is the best other eligible release (guarded: the best excluded one if none is eligible),
    # the simplest of those within the tie of it
    others = [nm for nm in ranked if nm != chosen] or sorted((nm for nm in cmp.names if nm != chosen), key=key) or [chosen]
    runner = next(nm for nm in RELEASES if nm in others and value(nm) <= value(others[0]) * (1.0 + tie))
    margin = float(value(runner) / value(chosen)) if value(chosen) > 0 else float("nan")
    cert = minimax_certificate(cmp.n, cmp.eps, cmp.estimand, loss) if "geometric-minimax" in idx else None
    prior_text = f"({analyst.a:g}, {analyst.b:g})" if analyst.kind == "beta" else f"CountPrior.binomial({analyst.p:g})"
    return Recommendation(
        criterion=criterion, candidate=chosen, label=CANDIDATES[chosen].label,
        call=RELEASES[chosen].format(prior=prior_text),
        bayes_risk=None if prior is None else float(cmp.bayes_risk[idx[chosen]]),
        worst_risk=float(cmp.worst_risk[idx[chosen]]), runner_up=runner, margin=margin,
        minimax_lower_bound=float("nan") if cert is None else float(cert.lower_bound),
        guard=guard if criterion == "guarded" else None, comparison=cmp, equivalent=equivalent, tie=tie,
    )


def _decided_by_bound(n: int, epsilon: float, estimand: str, loss: str, tie: float) -> Recommendation | None:
    """The plain count when its worst risk is within ``tie`` of a lower bound over every remap (large ``n``)."""
    if check_choice("estimand", estimand, ("proportion", "theta")) != "proportion" or loss != "squared":
        return None
    n = check_int("n", n, minimum=1, maximum=10**7)
    if n < BOUND_MIN_N:
        return None
    worst = minimax_bound.clamped_geometric_worst_risk(n, epsilon)
    lower = minimax_bound.count_minimax_lower_bound(n, epsilon)
    if worst is None or lower is None or worst > lower * (1.0 + tie):
        return None
    return Recommendation(
        criterion="worst", candidate="geometric", label=CANDIDATES["geometric"].label, call=RELEASES["geometric"],
        bayes_risk=None, worst_risk=worst / n**2, runner_up="geometric-minimax", margin=float("nan"),
        minimax_lower_bound=lower / n**2, guard=None, comparison=None, equivalent=("geometric", "geometric-minimax"), tie=tie,
    )


#: The prior-free candidates of the registry, simplest first: :func:`prior_gain_of` names the best prior-free
#: release as the first of them within the tie of the lowest average risk (integer noise first).
PRIOR_FREE_ORDER = ("geometric", "geometric-minimax", "laplace-clamped", "laplace-rounded", "laplace")


@dataclass(frozen=True)
class PriorGain:
    """What a prior's remap gains on average over the best prior-free release, and what it may cost.

    Attributes
    ----------
    average : float
        Lowest prior-free Bayes risk over the Bayes remap's (the optimum's): ``>= 1``, the gain on average.
    worst : float
        The Bayes remap's worst risk over counts over the lowest prior-free worst risk (the minimax
        remap's): ``>= 1`` up to the certificate's tolerance, the price in the worst case.
    best_prior_free : str
        The best prior-free release by average risk, named as the simplest (first in
        :data:`PRIOR_FREE_ORDER`) within ``tie`` of the lowest: a difference no reader would act on does not
        decide the name.
    """

    average: float
    worst: float
    best_prior_free: str


def prior_gain_of(cmp: Comparison, *, optimum: str = "geometric-bayes", tie: float = TIE_TOLERANCE) -> PriorGain:
    """:class:`PriorGain` of a comparison that holds the optimum and every candidate of :data:`PRIOR_FREE_ORDER`.

    Parameters
    ----------
    cmp : Comparison
        From :func:`dpbayes.choosing.candidates.compare_estimators` (other candidates may be present).
    optimum : str
        The prior's remap.
    tie : float
        Relative tolerance of the naming rule, ``0 <= tie <= 1``.
    """
    tie = float(check_in_range("tie", tie, 0.0, 1.0))
    missing = [nm for nm in (*PRIOR_FREE_ORDER, optimum) if nm not in cmp.names]
    if missing:
        raise ValueError(f"cmp must hold the candidates {', '.join(missing)} (compare_estimators(..., candidates=...))")
    opt = cmp.names.index(optimum)
    bayes = {nm: float(cmp.bayes_risk[cmp.names.index(nm)]) for nm in PRIOR_FREE_ORDER}
    lowest = min(bayes.values())
    best = next(nm for nm in PRIOR_FREE_ORDER if bayes[nm] <= lowest * (1.0 + tie))
    worst_free = min(float(cmp.worst_risk[cmp.names.index(nm)]) for nm in PRIOR_FREE_ORDER)
    return PriorGain(average=lowest / float(cmp.bayes_risk[opt]), worst=float(cmp.worst_risk[opt]) / worst_free,
                     best_prior_free=best)


def prior_gain(n: int, epsilon: float, prior: Any) -> tuple[float, float]:
    """What the prior's remap gains on average, and what it may cost in the worst case.

    Parameters
    ----------
    n : int
        Number of records.
    epsilon : float
        Privacy parameter.
    prior : (a, b) or CountPrior
        The prior of the remap (and the average).

    Returns
    -------
    average, worst : float
        As in :class:`PriorGain`.

    Notes
    -----
    Squared error about the data set's proportion; the prior-free candidates are every registered one
    that uses no prior (:data:`PRIOR_FREE_ORDER`: Laplace raw, clamped, rounded; geometric; geometric +
    minimax remap).
    """
    cmp = compare_estimators(n, epsilon, prior=prior, estimand="proportion", candidates=[*PRIOR_FREE_ORDER, "geometric-bayes"])
    gain = prior_gain_of(cmp)
    return gain.average, gain.worst


@dataclass(frozen=True)
class Crossing:
    """A value of ``n eps`` where a ratio of :func:`prior_gain` crosses ``1 + tolerance``.

    ``rising``: the ratio exceeds ``1 + tolerance`` above ``n_eps`` (below it otherwise).
    """

    criterion: str
    n: int
    n_eps: float
    rising: bool


def _scan(n: int, prior: Any, tolerance: float, n_eps_range: tuple[float, float], scan: int
          ) -> tuple[list[Crossing], dict[str, bool], tuple[float, float]]:
    n = check_int("n", n, minimum=2, maximum=10**6)
    tolerance = float(check_in_range("tolerance", tolerance, 0.0, 1.0, low_open=True, high_open=True))
    scan = check_int("scan", scan, minimum=5, maximum=200)
    lo, hi = (float(v) for v in n_eps_range)
    hi = min(hi, 20.0 * n)
    if not 0.0 < lo < hi:
        raise ValueError(f"n_eps_range must satisfy 0 < low < high (high capped at 20 n), got {n_eps_range!r}")
    level = np.log1p(tolerance)

    def g(log_k: float, which: int) -> float:
        return float(np.log(prior_gain(n, float(np.exp(log_k)) / n, prior)[which]) - level)

    grid = np.linspace(np.log(lo), np.log(hi), scan)
    values = np.array([[np.log(r) - level for r in prior_gain(n, float(np.exp(k)) / n, prior)] for k in grid])
    out = []
    above_at_low = {}
    for which, criterion in enumerate(("average", "worst")):
        v = values[:, which]
        above_at_low[criterion] = bool(v[0] > 0)
        for i in np.nonzero(np.sign(v[:-1]) * np.sign(v[1:]) < 0)[0]:
            root = optimize.brentq(g, grid[i], grid[i + 1], args=(which,), xtol=1e-4)
            out.append(Crossing(criterion, n, float(np.exp(root)), bool(v[i + 1] > v[i])))
    return sorted(out, key=lambda c: (c.criterion, c.n_eps)), above_at_low, (lo, hi)


def n_eps_crossings(n: int, prior: Any, *, tolerance: float = 0.05, n_eps_range: tuple[float, float] = (0.1, 1e4),
                    scan: int = 25) -> list[Crossing]:
    """Where, in ``n eps``, the prior's gain on average and its worst-case price cross ``1 + tolerance``.

    Every ratio of :func:`prior_gain` is evaluated on ``scan`` log-spaced values of ``n eps`` in
    ``n_eps_range`` (``eps <= 20``); each sign change of ``log(ratio / (1 + tolerance))`` is then located
    by Brent's method on ``log(n eps)`` to a relative ``1e-4``. A crossing between two scan points that the
    scan misses (two crossings within one step, about 47 % in ``n eps`` at the defaults) is not found.

    Parameters
    ----------
    n : int
        Number of records, ``2 <= n <= 10**6``.
    prior : (a, b) or CountPrior
    tolerance : float
        Relative tolerance, ``0 < tolerance < 1``.
    n_eps_range : (float, float)
        Range of ``n eps`` searched.
    scan : int
        Number of scan points, ``5 <= scan <= 200``.

    Returns
    -------
    list of Crossing
        Criterion ``"average"`` (best prior-free over optimum) and ``"worst"`` (remap's worst over the
        best prior-free worst), grouped by criterion, each in increasing ``n eps``.
    """
    return _scan(n, prior, tolerance, n_eps_range, scan)[0]


def n_eps_regions(n: int, prior: Any, *, tolerance: float = 0.05, n_eps_range: tuple[float, float] = (0.1, 1e4),
                  scan: int = 25) -> dict[str, list[tuple[float, float]]]:
    """The intervals of ``n eps`` where each ratio of :func:`prior_gain` exceeds ``1 + tolerance``.

    The crossings of :func:`n_eps_crossings` joined into intervals, closed by the ends of the searched
    range (``n_eps_range``, its top capped at ``20 n``) where the ratio is above there.

    Returns
    -------
    dict
        ``"average"``: where the prior's remap gains more than ``tolerance`` on average over the best
        prior-free release; ``"worst"``: where its worst risk exceeds the best prior-free worst risk (the
        minimax remap's) by more than ``tolerance``. Each a list of ``(low, high)``, possibly empty.
    """
    crossings, above_at_low, (lo, hi) = _scan(n, prior, tolerance, n_eps_range, scan)
    regions: dict[str, list[tuple[float, float]]] = {}
    for criterion in ("average", "worst"):
        start = lo if above_at_low[criterion] else None
        spans = []
        for c in (c for c in crossings if c.criterion == criterion):
            if c.rising:
                start = c.n_eps
            elif start is not None:
                spans.append((start, c.n_eps))
                start = None
        if start is not None:
            spans.append((start, hi))
        regions[criterion] = spans
    return regions
