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

Only releases :mod:`dpbayes.release.statistic` can make are candidates (:data:`RELEASES`); the
Laplace-noise candidates of the registry are dominated by their geometric counterparts at every
setting the book tabulates (chapter 5) and LBaPP is not a release of this library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpbayes.choosing.candidates import CANDIDATES, Comparison, _as_prior, compare_estimators, minimax_certificate
from dpbayes.core.validation import check_choice, check_in_range

__all__ = ["CRITERIA", "DEFAULT_GUARD", "RELEASES", "Recommendation", "recommend"]

#: The criteria of :func:`recommend`.
CRITERIA = ("average", "worst", "guarded")
#: Default ``guard`` of the ``"guarded"`` criterion: the worst risk may exceed the smallest by 10 %.
DEFAULT_GUARD = 0.1
#: The releasable candidates and the call of :mod:`dpbayes.release.statistic` that makes each
#: (``{prior}`` is filled with the user's ``(a, b)``).
RELEASES: dict[str, str] = {
    "geometric": 'release_count_geometric(count, n, eps)',
    "geometric-minimax": 'release_count_geometric(count, n, eps, estimator="minimax")',
    "geometric-bayes": 'release_count_geometric(count, n, eps, estimator="mean", prior={prior})',
    "geometric-median": 'release_count_geometric(count, n, eps, estimator="median", prior={prior})',
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
        The best other candidate by the same criterion.
    margin : float
        The runner-up's criterion value over the chosen one's: ``>= 1`` when the runner-up is eligible;
        below 1 under ``"guarded"`` when no other release is within the guard and the runner-up is the
        best excluded one (better on average, worse than the guard allows in the worst case).
    minimax_lower_bound : float
        Certified lower bound on the worst risk of *any* remap of the geometric count (the Bayes risk of
        the least-favourable prior found); the chosen release's ``worst_risk`` over it says how far
        from worst-case optimal it is.
    guard : float or None
        The guard of the ``"guarded"`` criterion.
    comparison : Comparison
        The exact risks of every candidate considered.
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
    comparison: Comparison


def recommend(
    n: int,
    eps: float,
    *,
    prior: Any = None,
    criterion: str | None = None,
    guard: float = DEFAULT_GUARD,
    estimand: str = "proportion",
    loss: str = "squared",
) -> Recommendation:
    """The release of a count of ``n`` records under eps-DP that is best by the named criterion.

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= 10**7``.
    eps : float
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
    if prior is None and criterion != "worst":
        raise ValueError(f"criterion={criterion!r} averages over a prior: give prior=(a, b), or use criterion='worst'")
    analyst = _as_prior((1.0, 1.0) if prior is None else prior)
    names = [nm for nm in RELEASES if prior is not None or not CANDIDATES[nm].uses_prior]
    cmp = compare_estimators(n, eps, prior=analyst, estimand=estimand, candidates=names, loss=loss)
    idx = {nm: i for i, nm in enumerate(cmp.names)}
    if criterion == "average":
        pool, key = list(cmp.names), (lambda nm: cmp.bayes_risk[idx[nm]])
    elif criterion == "worst":
        pool, key = list(cmp.names), (lambda nm: (cmp.worst_risk[idx[nm]], cmp.bayes_risk[idx[nm]]))
    else:
        pool, key = list(cmp.guarded(guard)), (lambda nm: cmp.bayes_risk[idx[nm]])
    ranked = sorted(pool, key=key)
    chosen = ranked[0]
    # the runner-up is the next eligible release (guarded: the next within the guard, if any)
    runner = ranked[1] if len(ranked) > 1 else (sorted((nm for nm in cmp.names if nm != chosen), key=key) or [chosen])[0]
    value = (lambda nm: cmp.worst_risk[idx[nm]]) if criterion == "worst" else (lambda nm: cmp.bayes_risk[idx[nm]])
    margin = float(value(runner) / value(chosen)) if value(chosen) > 0 else float("nan")
    cert = minimax_certificate(cmp.n, cmp.eps, cmp.estimand, loss) if "geometric-minimax" in idx else None
    prior_text = f"({analyst.a:g}, {analyst.b:g})" if analyst.kind == "beta" else f"CountPrior.binomial({analyst.p:g})"
    return Recommendation(
        criterion=criterion, candidate=chosen, label=CANDIDATES[chosen].label,
        call=RELEASES[chosen].format(prior=prior_text),
        bayes_risk=None if prior is None else float(cmp.bayes_risk[idx[chosen]]),
        worst_risk=float(cmp.worst_risk[idx[chosen]]), runner_up=runner, margin=margin,
        minimax_lower_bound=float("nan") if cert is None else float(cert.lower_bound),
        guard=guard if criterion == "guarded" else None, comparison=cmp,
    )
