"""Privacy audit: exact, analytic and statistical checks of a mechanism's epsilon.

A mechanism :math:`M` is :math:`\\varepsilon`-DP when, for every pair of neighbouring inputs
:math:`x \\sim x'` and every output event :math:`E`,
:math:`P(M(x) \\in E) \\le e^{\\varepsilon} P(M(x') \\in E)` (Dwork and Roth 2014, Def. 2.4;
UBaPP paper Def. 2). For a finite output space the worst event is a single output, so the
smallest valid epsilon is the *worst-case privacy loss*

.. math:: \\varepsilon^* = \\max_{x \\sim x'} \\max_o \\log \\frac{P(o \\mid x)}{P(o \\mid x')},

and for an output density the same with the density ratio and a supremum over outputs.
This module computes that quantity in three ways:

* :func:`exact_privacy_loss` -- finite output spaces, from the output-distribution matrix
  (:mod:`dpbayes.core.privacy_loss`, re-exported here);
* :func:`laplace_privacy_loss` -- additive Laplace mechanisms given by their noise-free values
  and scales, the supremum of the log density ratio in closed form;
* :func:`density_privacy_loss` -- the same supremum from a mechanism's own log-density
  function, at candidate outputs that contain the kinks of the log ratio;
* :func:`statistical_lower_bound` -- any sampler, a black-box lower confidence bound on
  epsilon in the spirit of StatDP (Ding, Wang, Wang, Zhang and Kifer, "Detecting violations of
  differential privacy", CCS 2018) and DP-Sniper (Bichsel, Steffen, Bogunovic and Vechev,
  "DP-Sniper: black-box discovery of differential privacy violations using classifiers",
  IEEE S&P 2021): output events are chosen on one half of the samples and their probabilities
  bounded on the other half with Clopper-Pearson intervals, so the bound is valid at the
  stated confidence.

``dpbayes.book.audit_book.audit_book_mechanisms`` (the book's side: it knows the chapters)
applies them to every mechanism of the book, and :func:`mutation_audit` to deliberately broken toy
mechanisms.
The private ``_reference_*`` helpers near the end are those toy mechanisms (correct, and with
a ``broken`` switch); they are not mechanisms of the book.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from dpbayes.core.geometric import clamped_geometric_logmatrix
from dpbayes.core.neighbours import NEIGHBOUR_RELATIONS
from dpbayes.core.privacy_loss import _BLOCK_ELEMENTS, _as_log_matrix, _worst_log_ratio, count_summaries, exact_summary_privacy_loss
from dpbayes.core.privacy_loss import ExactAudit as ExactAudit
from dpbayes.core.privacy_loss import exact_privacy_loss as exact_privacy_loss
from dpbayes.core.privacy_loss import neighbour_pairs as neighbour_pairs
from dpbayes.core.validation import check_int, check_positive, check_probability, check_rng

__all__ = [
    "ExactAudit",
    "StatisticalAudit",
    "neighbour_pairs",
    "exact_privacy_loss",
    "exact_delta",
    "laplace_privacy_loss",
    "density_privacy_loss",
    "clopper_pearson",
    "statistical_lower_bound",
    "statistical_search",
    "repeat_sampler",
    "MutationCase",
    "mutation_audit",
    "RelationAudit",
    "COUNT_CLAMPS",
    "count_clamp_relation_audit",
    "CLAIM_ATOL",
    "AuditRow",
    "verdict",
]


@dataclass(frozen=True)
class StatisticalAudit:
    """Result of the black-box auditor :func:`statistical_lower_bound`.

    Attributes
    ----------
    eps_lower : float
        Lower confidence bound on the mechanism's epsilon (0 when no event shows a loss).
    confidence : float
        ``P(eps_lower <= true eps) >= confidence`` over the sampling randomness.
    event : str
        Human-readable description of the output event selected on the first half.
    numerator, denominator : object
        The inputs in the order of the bound: ``P(E | numerator) / P(E | denominator)``.
    count_numerator, count_denominator : int
        Test-half counts of the event under each input.
    n_test : int
        Test-half sample size per input.
    eps_point : float
        Plug-in estimate ``log(p_hat_num / p_hat_den)`` on the test half (``inf`` if the
        denominator count is 0).
    """

    eps_lower: float
    confidence: float
    event: str
    numerator: Any
    denominator: Any
    count_numerator: int
    count_denominator: int
    n_test: int
    eps_point: float


# The exact loss of a finite output law (neighbour_pairs, exact_privacy_loss, ExactAudit) lives in
# dpbayes.core.privacy_loss and is re-exported here.


# --------------------------------------------------------------------------------------------
# Privacy loss of mechanisms with an output density
# --------------------------------------------------------------------------------------------


def density_privacy_loss(
    log_density: Callable[[NDArray[np.float64], NDArray[Any]], ArrayLike],
    inputs: ArrayLike,
    outputs: ArrayLike,
    neighbours: str | ArrayLike = "all",
) -> ExactAudit:
    """Supremum of the log density ratio of a scalar-output mechanism, from its density.

    Evaluates ``log p(y | x) - log p(y | x')`` with the mechanism's own ``log_density`` at the
    supplied candidate outputs and at two far-tail points, over every neighbour pair of
    ``inputs``. This is exact when the log ratio is piecewise linear in ``y`` with its kinks
    among ``outputs`` -- true for additive Laplace noise (kinks at the noise-free values) if
    ``outputs`` contains every noise-free value the inputs can produce. If the ratio is still
    larger at a far-tail point than on ``outputs`` (e.g. data-dependent noise scales, so the
    ratio grows linearly in a tail), the supremum is unbounded and ``inf`` is returned.

    Parameters
    ----------
    log_density : callable ``log_density(y, x)``
        Vectorised log density of output ``y`` given input ``x`` (broadcasting ``y`` of shape
        ``(1, n_out)`` against ``x`` of shape ``(n_in, 1)``).
    inputs : array_like, shape (n_in,)
        Inputs to audit (for local DP over an interval, a grid reaching beyond the truncation
        points).
    outputs : array_like, shape (n_out,)
        Candidate outputs containing the kinks of the log ratio.
    neighbours : {"all", "adjacent"} or (m, 2) array
        Neighbour relation on the indices of ``inputs``; ``"all"`` for local DP.

    Returns
    -------
    ExactAudit
        ``x``, ``x_prime`` and ``output`` are values, not indices (``output = +-inf`` for an
        unbounded tail).
    """
    xs = np.asarray(inputs, dtype=float).reshape(-1)
    ys = np.unique(np.asarray(outputs, dtype=float).reshape(-1))
    if xs.size < 2 or not np.all(np.isfinite(xs)):
        raise ValueError("inputs must hold at least two finite values")
    if ys.size == 0 or not np.all(np.isfinite(ys)):
        raise ValueError("outputs must hold at least one finite value")
    span = max(float(ys[-1] - ys[0]), float(np.ptp(xs)), 1.0)
    far = np.array([ys[0] - 10.0 * span, ys[-1] + 10.0 * span])
    grid = np.concatenate([ys, far])
    logM = np.asarray(log_density(grid[None, :], xs[:, None]), dtype=float)
    if logM.shape != (xs.size, grid.size):
        raise ValueError(f"log_density must broadcast to shape (n_inputs, n_outputs) = {(xs.size, grid.size)}, got {logM.shape}")
    pairs = neighbour_pairs(xs.size, neighbours)
    eps_in, i, j, o = _worst_log_ratio(logM[:, : ys.size], pairs)
    eps_all, i2, j2, o2 = _worst_log_ratio(logM, pairs)
    if eps_all > eps_in + 1e-9:
        # still growing in a tail: a log-linear tail slope makes the supremum infinite
        return ExactAudit(eps=np.inf, x=float(xs[i2]), x_prime=float(xs[j2]),
                          output=float(np.sign(far[o2 - ys.size] - ys.mean())) * np.inf, n_pairs=int(pairs.shape[0]))
    return ExactAudit(eps=eps_in, x=float(xs[i]), x_prime=float(xs[j]), output=float(ys[o]), n_pairs=int(pairs.shape[0]))


def exact_delta(
    P: ArrayLike,
    eps: float,
    neighbours: str | ArrayLike = "adjacent",
    *,
    input_axis: int = 0,
    sum_atol: float | None = 1e-6,
) -> float:
    """Smallest delta for which a finite-output mechanism is (eps, delta)-DP.

    ``max_{x ~ x'} sum_o max(0, P(o | x) - e^eps P(o | x'))``, the hockey-stick divergence
    (Dwork and Roth 2014, Def. 2.4 with delta > 0). Used to say *how far* a mechanism that is
    not eps-DP is from it; 0 means eps-DP.
    """
    eps = check_positive("eps", eps)
    logM = _as_log_matrix(P, input_axis, False, sum_atol)
    M = np.exp(logM)
    pairs = neighbour_pairs(M.shape[0], neighbours)
    block = max(1, _BLOCK_ELEMENTS // M.shape[1])
    worst = 0.0
    for start in range(0, pairs.shape[0], block):
        p = pairs[start : start + block]
        excess = np.clip(M[p[:, 0]] - np.exp(eps) * M[p[:, 1]], 0.0, None).sum(axis=1)
        worst = max(worst, float(excess.max()))
    return worst


# --------------------------------------------------------------------------------------------
# Analytic audit of additive Laplace mechanisms
# --------------------------------------------------------------------------------------------


def laplace_privacy_loss(
    location: ArrayLike,
    scale: ArrayLike,
    neighbours: str | ArrayLike = "adjacent",
    *,
    inputs: ArrayLike | None = None,
) -> ExactAudit:
    """Supremum over outputs of the log density ratio of additive Laplace mechanisms.

    Input ``i`` releases ``location[i] + Laplace(scale[i])`` (independently per coordinate if
    ``location`` is 2-D, shape ``(n_inputs, d)``). For a pair ``(i, j)`` the log density ratio
    in one coordinate, ``log f(y | i) - log f(y | j)``, is piecewise linear in ``y`` with kinks
    only at the two locations; its supremum is therefore attained at a kink or approached in a
    tail, where the slope is ``+-(1/scale[j] - 1/scale[i])`` (infinite supremum if the scales
    differ). We evaluate ``scipy.stats.laplace.logpdf`` at both kinks and read the tails from
    the slopes, so the loss comes from the density, not from the textbook bound
    ``|location[i] - location[j]| / scale``. Coordinates are independent, so the supremum of the
    joint ratio is the sum of the per-coordinate suprema.

    Parameters
    ----------
    location : array_like, shape (n_inputs,) or (n_inputs, d)
        Noise-free value released for each input (e.g. ``clamp(x, l, r)``, a count, a posterior
        mean).
    scale : array_like, broadcastable to ``location``
        Laplace scale ``b > 0`` used for each input (and coordinate).
    neighbours : {"adjacent", "all"} or (m, 2) array
        Neighbour relation on input indices (``"all"`` for local DP, see :func:`neighbour_pairs`).
    inputs : array_like, optional
        Input values, only to report the maximising pair by value instead of index.

    Returns
    -------
    ExactAudit
        ``output`` is the maximising output (first coordinate's kink, or ``+-inf`` for a tail).
    """
    loc = np.asarray(location, dtype=float)
    if loc.ndim == 1:
        loc = loc[:, None]
    if loc.ndim != 2 or loc.shape[0] < 2 or not np.all(np.isfinite(loc)):
        raise ValueError(f"location must be a finite (n_inputs,) or (n_inputs, d) array with n_inputs >= 2, got shape {np.shape(location)}")
    b = np.asarray(check_positive("scale", scale), dtype=float)
    if b.ndim == 1:  # one scale per input, shared by its coordinates
        if b.shape[0] != loc.shape[0]:
            raise ValueError(f"scale must be a scalar, one value per input ({loc.shape[0]}) or of location's shape")
        b = b[:, None]
    try:
        b = np.broadcast_to(b, loc.shape)
    except ValueError as exc:
        raise ValueError(f"scale must be a scalar, one value per input ({loc.shape[0]}) or of location's shape") from exc
    pairs = neighbour_pairs(loc.shape[0], neighbours)
    mi, mj = loc[pairs[:, 0]], loc[pairs[:, 1]]
    bi, bj = b[pairs[:, 0]], b[pairs[:, 1]]

    def log_ratio(y: NDArray[np.float64]) -> NDArray[np.float64]:
        return stats.laplace.logpdf(y, mi, bi) - stats.laplace.logpdf(y, mj, bj)

    at_kinks = np.maximum(log_ratio(mi), log_ratio(mj))  # (m, d)
    tail_slope = np.abs(1.0 / bj - 1.0 / bi)
    per_coord = np.where(tail_slope > 1e-15 * (1.0 / bi + 1.0 / bj), np.inf, at_kinks)
    total = per_coord.sum(axis=1)
    r = int(np.argmax(total))
    if np.isinf(per_coord[r, 0]):
        out: float = float(np.sign(1.0 / bj[r, 0] - 1.0 / bi[r, 0])) * np.inf
    else:
        out = float(mi[r, 0] if log_ratio(mi)[r, 0] >= log_ratio(mj)[r, 0] else mj[r, 0])
    xi, xj = int(pairs[r, 0]), int(pairs[r, 1])
    if inputs is not None:
        vals = np.asarray(inputs)
        xi, xj = vals[xi].item(), vals[xj].item()
    return ExactAudit(eps=max(float(total[r]), 0.0), x=xi, x_prime=xj, output=out, n_pairs=int(pairs.shape[0]))


# --------------------------------------------------------------------------------------------
# Black-box statistical auditor
# --------------------------------------------------------------------------------------------


def clopper_pearson(k: ArrayLike, n: int, confidence: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two one-sided Clopper-Pearson bounds on a binomial proportion.

    Returns ``(lower, upper)`` such that ``P(p >= lower) >= confidence`` and
    ``P(p <= upper) >= confidence`` separately (Clopper and Pearson 1934; beta quantiles).
    """
    n = check_int("n", n, minimum=1)
    confidence = check_probability("confidence", confidence, open_interval=True)
    k = np.asarray(k, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError(f"k must lie in [0, {n}]")
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)
    return lower, upper


def repeat_sampler(draw_one: Callable[[Any, np.random.Generator], Any]) -> Callable[[Any, np.random.Generator, int], NDArray[Any]]:
    """Turn a one-output sampler ``draw_one(x, rng)`` into ``mechanism(x, rng, size)``."""

    def mechanism(x: Any, rng: np.random.Generator, size: int) -> NDArray[Any]:
        return np.asarray([draw_one(x, rng) for _ in range(size)])

    return mechanism


def _log_ratio_lower(k_num: NDArray[np.float64], k_den: NDArray[np.float64], n: int, confidence: float) -> NDArray[np.float64]:
    """log(lower bound of p_num / upper bound of p_den), the error probability split in two.

    The two one-sided bounds each hold with probability 1 - alpha/2, so by the union bound the
    ratio bound holds with probability 1 - alpha = ``confidence``.
    """
    one_sided = 1.0 - (1.0 - confidence) / 2.0
    lo, _ = clopper_pearson(k_num, n, one_sided)
    _, hi = clopper_pearson(k_den, n, one_sided)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi)


def _events_from_selection(
    sel_a: NDArray[Any], sel_b: NDArray[Any], labels_a: NDArray[np.intp] | None, labels_b: NDArray[np.intp] | None,
    n_labels: int, n_thresholds: int,
) -> list[tuple[str, Any]]:
    """Candidate events built from the selection half only."""
    events: list[tuple[str, Any]] = []
    if labels_a is not None and labels_b is not None:
        # Categorical: the best events are top-k sets of outputs by estimated likelihood ratio
        # (Neyman-Pearson); the ratio is smoothed so unseen outputs do not dominate.
        ca = np.bincount(labels_a, minlength=n_labels)
        cb = np.bincount(labels_b, minlength=n_labels)
        seen = np.flatnonzero(ca + cb > 0)  # outputs never drawn in the selection half stay out
        order = seen[np.argsort(-(np.log(ca[seen] + 0.5) - np.log(cb[seen] + 0.5)), kind="stable")]
        for k in range(1, seen.size):
            events.append(("set", order[:k]))
    if sel_a.ndim == 1 and np.issubdtype(sel_a.dtype, np.number):
        pooled = np.concatenate([sel_a, sel_b])
        qs = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1], method="inverted_cdf"))
        for t in qs:
            events.append(("ge", float(t)))
            events.append(("le", float(t)))
    return events


def _event_counts(events: list[tuple[str, Any]], values: NDArray[Any], labels: NDArray[np.intp] | None, n_labels: int) -> NDArray[np.float64]:
    counts = np.empty(len(events))
    sorted_vals = np.sort(values) if values.ndim == 1 and np.issubdtype(values.dtype, np.number) else None
    label_counts = np.bincount(labels, minlength=n_labels) if labels is not None else None
    for i, (kind, arg) in enumerate(events):
        if kind == "set":
            counts[i] = label_counts[arg].sum()  # type: ignore[index]
        elif kind == "ge":
            assert sorted_vals is not None  # "ge"/"le" events exist only for numeric 1-d values (narrows for mypy)
            counts[i] = sorted_vals.size - np.searchsorted(sorted_vals, arg, side="left")
        else:
            assert sorted_vals is not None
            counts[i] = np.searchsorted(sorted_vals, arg, side="right")
    return counts


def _describe(kind: str, arg: Any, categories: NDArray[Any] | None) -> str:
    if kind == "ge":
        return f"output >= {arg:.6g}"
    if kind == "le":
        return f"output <= {arg:.6g}"
    def show(value: Any) -> str:
        v = np.asarray(value)
        if v.ndim == 0:
            return f"{v.item():.6g}" if np.issubdtype(v.dtype, np.floating) else str(v.item())
        return "(" + ", ".join(show(e) for e in v) + ")"

    shown = [show(categories[i]) for i in np.sort(arg)[:5]]  # type: ignore[index]
    more = f" and {len(arg) - 5} more" if len(arg) > 5 else ""
    return f"output in {{{', '.join(shown)}{more}}}"


def _label_outputs(pooled: NDArray[Any]) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """Distinct outputs (rows for vector outputs) and the label of every output."""
    if pooled.ndim == 2 and np.issubdtype(pooled.dtype, np.integer):
        # integer vectors: mixed-radix keys make the 1-D unique much faster than unique(axis=0)
        lo = pooled.min(axis=0)
        dims = tuple(int(d) for d in pooled.max(axis=0) - lo + 1)
        if float(np.prod(np.asarray(dims, dtype=float))) < 2.0**62:
            keys = np.ravel_multi_index(tuple((pooled - lo).T), dims)
            uniq, inverse = np.unique(keys, return_inverse=True)
            return np.column_stack(np.unravel_index(uniq, dims)) + lo, inverse.reshape(-1)
    categories, inverse = np.unique(pooled, axis=0 if pooled.ndim == 2 else None, return_inverse=True)
    return categories, inverse.reshape(-1)


def statistical_lower_bound(
    mechanism: Callable[[Any, np.random.Generator, int], ArrayLike],
    x: Any,
    x_prime: Any,
    rng: np.random.Generator,
    *,
    n_samples: int = 200_000,
    confidence: float = 0.95,
    max_categories: int = 2_000,
    n_thresholds: int = 400,
    statistic: Callable[[NDArray[Any]], NDArray[Any]] | None = None,
) -> StatisticalAudit:
    """Black-box lower confidence bound on epsilon from samples on one neighbouring pair.

    Procedure (after StatDP, Ding et al. 2018, and DP-Sniper, Bichsel et al. 2021):

    1. draw ``n_samples`` outputs under each input and split each sample into a *selection*
       and a *test* half;
    2. on the selection half, build candidate events -- threshold events ``{o >= t}``,
       ``{o <= t}`` for scalar outputs and, when there are at most ``max_categories`` distinct
       outputs, the sets of the ``k`` outputs with the largest estimated likelihood ratio --
       and pick the event and direction whose Clopper-Pearson ratio bound (at a
       Bonferroni-adjusted confidence, against the winner's curse) is largest;
    3. on the test half (independent of the choice), bound the event's probability under the
       numerator input from below and under the denominator input from above (Clopper-Pearson,
       each at ``1 - (1 - confidence)/2``); ``log`` of their ratio is a valid lower bound on
       epsilon with probability at least ``confidence``.

    Parameters
    ----------
    mechanism : callable ``mechanism(x, rng, size) -> array``
        Vectorised sampler returning ``size`` outputs (scalars, shape ``(size,)``, or vectors,
        shape ``(size, d)``); wrap a one-output sampler with :func:`repeat_sampler`.
    x, x_prime : object
        The neighbouring inputs, passed to ``mechanism`` unchanged.
    rng : numpy.random.Generator
        Source of all randomness (the mechanism's draws and nothing else).
    n_samples : int
        Outputs drawn per input (half for selection, half for the test).
    confidence : float
        Confidence level of the returned lower bound, in (0, 1).
    max_categories : int
        Outputs with at most this many distinct values are also treated as categorical.
    n_thresholds : int
        Number of candidate thresholds (quantiles of the pooled selection half).
    statistic : callable, optional
        Fixed post-processing applied to the outputs before events are built (e.g. a scalar
        summary of a continuous vector output). Post-processing cannot increase the privacy
        loss, so the bound stays valid for the mechanism itself.
    """
    return statistical_search(
        mechanism, [(x, x_prime)], rng, n_samples=n_samples, confidence=confidence, max_categories=max_categories,
        n_thresholds=n_thresholds, statistic=statistic,
    )


@dataclass
class _PairSample:
    """Outputs of one candidate pair, their labels and the candidate events of its selection half."""

    x: Any
    x_prime: Any
    out_a: NDArray[Any]
    out_b: NDArray[Any]
    lab_a: NDArray[np.intp] | None
    lab_b: NDArray[np.intp] | None
    n_labels: int
    categories: NDArray[Any]
    events: list[list[tuple[str, Any]]]  # [favouring x, favouring x_prime]


def _draw_pair(
    mechanism: Callable[[Any, np.random.Generator, int], ArrayLike], x: Any, x_prime: Any, rng: np.random.Generator,
    n_samples: int, half: int, max_categories: int, n_thresholds: int, statistic: Callable[[NDArray[Any]], NDArray[Any]] | None,
) -> _PairSample:
    out_a = np.asarray(mechanism(x, rng, n_samples))
    out_b = np.asarray(mechanism(x_prime, rng, n_samples))
    if statistic is not None:
        out_a, out_b = np.asarray(statistic(out_a)), np.asarray(statistic(out_b))
    if out_a.shape[:1] != (n_samples,) or out_b.shape != out_a.shape or out_a.ndim > 2:
        raise ValueError(f"mechanism must return an array of shape (size,) or (size, d); got {out_a.shape} and {out_b.shape}")
    # Category labels only *name* output values (built on the pooled sample); whether outputs are
    # treated as categorical, and which categories an event may contain, depend on the
    # selection half alone, so the test half stays independent of the chosen event.
    categories, inverse = _label_outputs(np.concatenate([out_a, out_b]))
    seen = np.unique(np.concatenate([inverse[:half], inverse[n_samples : n_samples + half]]))
    lab_a = lab_b = None
    n_labels = 0
    if 2 <= seen.size <= max_categories:
        lab_a, lab_b = inverse[:n_samples], inverse[n_samples:]
        n_labels = int(categories.shape[0])
    elif out_a.ndim != 1:
        raise ValueError("vector outputs need at most max_categories distinct values; pass a scalar statistic instead")
    sel = slice(0, half)
    la = None if lab_a is None else lab_a[sel]
    lb = None if lab_b is None else lab_b[sel]
    events = [
        _events_from_selection(out_a[sel], out_b[sel], la, lb, n_labels, n_thresholds),
        # events "favouring x_prime": the same construction with the roles swapped
        _events_from_selection(out_b[sel], out_a[sel], lb, la, n_labels, n_thresholds),
    ]
    return _PairSample(x, x_prime, out_a, out_b, lab_a, lab_b, n_labels, categories, events)


def statistical_search(
    mechanism: Callable[[Any, np.random.Generator, int], ArrayLike],
    pairs: list[tuple[Any, Any]],
    rng: np.random.Generator,
    *,
    n_samples: int = 200_000,
    confidence: float = 0.95,
    max_categories: int = 2_000,
    n_thresholds: int = 400,
    statistic: Callable[[NDArray[Any]], NDArray[Any]] | None = None,
) -> StatisticalAudit:
    """Black-box lower confidence bound on epsilon, searching over candidate neighbouring pairs.

    As :func:`statistical_lower_bound`, but the *selection* half of every pair's samples chooses
    the pair, the direction and the event together (StatDP's search over inputs); only that one
    event is then evaluated on its pair's *test* half, so the bound needs no correction for the
    number of pairs searched. ``n_samples`` outputs are drawn per input of every pair.
    """
    rng = check_rng("rng", rng)
    n_samples = check_int("n_samples", n_samples, minimum=20)
    confidence = check_probability("confidence", confidence, open_interval=True)
    max_categories = check_int("max_categories", max_categories, minimum=2)
    n_thresholds = check_int("n_thresholds", n_thresholds, minimum=1)
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one (x, x_prime) pair")
    half = n_samples // 2
    n_test = n_samples - half
    samples = [_draw_pair(mechanism, a, b, rng, n_samples, half, max_categories, n_thresholds, statistic) for a, b in pairs]
    n_events = sum(len(e) for ps in samples for e in ps.events)
    if n_events == 0:
        x, x_prime = pairs[0]
        return StatisticalAudit(0.0, confidence, "no event (constant output)", x, x_prime, 0, 0, n_test, 0.0)

    # Winner's curse: the maximum over many candidate events of a bound at the final confidence
    # favours rare events with lucky counts. Scoring the selection half at a Bonferroni-adjusted
    # confidence prefers events with large counts, which then hold up on the test half.
    selection_confidence = 1.0 - (1.0 - confidence) / n_events
    sel, tst = slice(0, half), slice(half, n_samples)
    best_val, best = -np.inf, None
    for ps in samples:
        la = None if ps.lab_a is None else ps.lab_a[sel]
        lb = None if ps.lab_b is None else ps.lab_b[sel]
        for direction, evs in enumerate(ps.events):
            if not evs:
                continue
            ka = _event_counts(evs, ps.out_a[sel], la, ps.n_labels)
            kb = _event_counts(evs, ps.out_b[sel], lb, ps.n_labels)
            num, den = (ka, kb) if direction == 0 else (kb, ka)
            score = _log_ratio_lower(num, den, half, selection_confidence)
            i = int(np.argmax(score))
            if best is None or score[i] > best_val:
                best_val, best = float(score[i]), (ps, direction, evs[i])
    assert best is not None
    ps, direction, (kind, arg) = best
    la = None if ps.lab_a is None else ps.lab_a[tst]
    lb = None if ps.lab_b is None else ps.lab_b[tst]
    ka_t = _event_counts([(kind, arg)], ps.out_a[tst], la, ps.n_labels)[0]
    kb_t = _event_counts([(kind, arg)], ps.out_b[tst], lb, ps.n_labels)[0]
    num_k, den_k = (ka_t, kb_t) if direction == 0 else (kb_t, ka_t)
    lower = float(_log_ratio_lower(np.array([num_k]), np.array([den_k]), n_test, confidence)[0])
    with np.errstate(divide="ignore"):
        point = float(np.log(num_k) - np.log(den_k)) if num_k > 0 else -np.inf
    numerator, denominator = (ps.x, ps.x_prime) if direction == 0 else (ps.x_prime, ps.x)
    return StatisticalAudit(
        eps_lower=max(lower, 0.0),
        confidence=confidence,
        event=_describe(kind, arg, ps.categories if ps.n_labels else None),
        numerator=numerator,
        denominator=denominator,
        count_numerator=int(num_k),
        count_denominator=int(den_k),
        n_test=n_test,
        eps_point=point,
    )


# --------------------------------------------------------------------------------------------
# Reference and deliberately broken toy mechanisms (mutation tests and the audit page only)
# --------------------------------------------------------------------------------------------
# Each pair below is a textbook mechanism written once correctly and once with a classic
# calibration bug. The audit must pass the first and catch the second. They are *not* the
# book's mechanisms (those live in the chapters' modules).


def _reference_laplace_count(count: float, eps: float, rng: np.random.Generator, size: int, *, scale_factor: float = 1.0) -> NDArray[np.float64]:
    """Count + Laplace(scale_factor / eps): eps-DP for sensitivity 1 iff scale_factor >= 1."""
    return float(count) + rng.laplace(0.0, scale_factor / eps, size)


def _reference_truncate_laplace(
    x: float, low: float, high: float, eps: float, rng: np.random.Generator, size: int, *, clamp: bool = True
) -> NDArray[np.float64]:
    """clamp(x, low, high) + (high - low) Laplace(1/eps) (adaptive-truncation paper, eq. (2));
    eps-DP for any two inputs. ``clamp=False`` is the mutant: unbounded sensitivity."""
    value = float(np.clip(x, low, high)) if clamp else float(x)
    return value + (high - low) * rng.laplace(0.0, 1.0 / eps, size)


def _reference_histogram_laplace(
    hist: ArrayLike, eps: float, rng: np.random.Generator, size: int, *, sensitivity: float = 2.0
) -> NDArray[np.float64]:
    """Histogram + Laplace(sensitivity / eps) per cell. Replacing one record moves one unit from
    one cell to another, so the l1-sensitivity is 2; ``sensitivity=1`` is the mutant."""
    h = np.asarray(hist, dtype=float)
    return h[None, :] + rng.laplace(0.0, sensitivity / eps, (size, h.size))


def _reference_exponential_matrix(utility: ArrayLike, eps: float, sensitivity: float, *, factor: float = 2.0) -> NDArray[np.float64]:
    """Exponential mechanism P(o | x) proportional to exp(eps u(x, o) / (factor * sensitivity))
    (McSherry and Talwar 2007; Dwork and Roth 2014, Thm 3.10). eps-DP with ``factor=2``;
    ``factor=1`` is the mutant (it can reach 2 eps because the normaliser moves too)."""
    w = eps * np.asarray(utility, dtype=float) / (factor * sensitivity)
    return np.exp(w - special.logsumexp(w, axis=1, keepdims=True))


@dataclass(frozen=True)
class MutationCase:
    """One row of :func:`mutation_audit`: a toy mechanism, its claim and what the audit found."""

    name: str
    broken: bool
    claimed_eps: float
    audited_eps: float
    audit_kind: str
    statistical_lower: float
    caught: bool


def mutation_audit(eps: float, rng: np.random.Generator, *, n_samples: int = 100_000, n: int = 10, confidence: float = 0.95) -> list[MutationCase]:
    """Audit each reference mechanism and its mutant; ``caught`` means the exact/analytic loss
    exceeds the claim by more than 1e-9 or the statistical lower bound exceeds the claim.

    Parameters
    ----------
    eps : float
        Claimed epsilon of every toy mechanism.
    rng : numpy.random.Generator
        Randomness of the statistical auditor.
    n_samples : int
        Samples per input for the statistical auditor.
    n : int
        Domain size of the count-based mechanisms (counts 0..n).
    """
    eps = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    n = check_int("n", n, minimum=2)
    cases: list[MutationCase] = []

    def add(name: str, broken: bool, exact: ExactAudit, kind: str, stat: StatisticalAudit) -> None:
        caught = exact.eps > eps + 1e-9 or stat.eps_lower > eps
        cases.append(MutationCase(name, broken, eps, exact.eps, kind, stat.eps_lower, caught))

    counts = np.arange(n + 1)
    for broken in (False, True):
        f = 0.5 if broken else 1.0
        add(
            "Laplace on a count" + (", scale halved" if broken else ""), broken,
            laplace_privacy_loss(counts, f / eps), "analytic",
            statistical_lower_bound(lambda c, g, s: _reference_laplace_count(c, eps, g, s, scale_factor=f), 0, 1, rng,
                                    n_samples=n_samples, confidence=confidence),
        )
    low, high = 0.0, 1.0
    xs = np.linspace(-2.0, 3.0, 11)  # reaches beyond both truncation points
    for broken in (False, True):
        loc = xs if broken else np.clip(xs, low, high)
        add(
            "truncate-then-Laplace" + (", clamping removed" if broken else ""), broken,
            laplace_privacy_loss(loc, (high - low) / eps, "all", inputs=xs), "analytic",
            statistical_lower_bound(lambda x, g, s: _reference_truncate_laplace(x, low, high, eps, g, s, clamp=not broken),
                                    float(xs[0]), float(xs[-1]), rng, n_samples=n_samples, confidence=confidence),
        )
    hist, hist_nb = np.array([3.0, 2.0, 5.0]), np.array([2.0, 3.0, 5.0])  # one record moved 0 -> 1
    for broken in (False, True):
        sens = 1.0 if broken else 2.0
        add(
            "Laplace histogram" + (", sensitivity 1 instead of 2" if broken else ""), broken,
            laplace_privacy_loss(np.stack([hist, hist_nb]), sens / eps, "all"), "analytic",
            statistical_lower_bound(lambda h, g, s: _reference_histogram_laplace(h, eps, g, s, sensitivity=sens),
                                    hist, hist_nb, rng, n_samples=n_samples, confidence=confidence,
                                    statistic=lambda o: o[:, 1] - o[:, 0]),
        )
    utility = -np.abs(counts[:, None] - counts[None, :]).astype(float)  # sensitivity 1 in x
    for broken in (False, True):
        P = _reference_exponential_matrix(utility, eps, 1.0, factor=1.0 if broken else 2.0)
        add(
            "exponential mechanism" + (" without the factor 2" if broken else ""), broken,
            exact_privacy_loss(P), "exact",
            statistical_lower_bound(lambda x, g, s: g.choice(n + 1, size=s, p=P[x]), 0, 1, rng,
                                    n_samples=n_samples, confidence=confidence),
        )
    return cases


# --------------------------------------------------------------------------------------------
# The book's mechanisms: one audit row each (used by the audit page and its tests)
# --------------------------------------------------------------------------------------------

CLAIM_ATOL = 1e-9  # an exact audit may exceed a claim by floating-point round-off only


@dataclass(frozen=True)
class RelationAudit:
    """One row of :func:`count_clamp_relation_audit`: a clamped count release under one neighbour relation.

    ``audited_eps`` is the exact worst-case loss over every data set summary ``(n, c)`` with ``n <= n_bound``;
    ``x`` and ``x_prime`` the summaries of the worst pair, ``output`` the worst output.
    """

    mechanism: str
    neighbours: str
    calibrated_eps: float
    audited_eps: float
    x: tuple[int, int]
    x_prime: tuple[int, int]
    output: int


#: The clamps of :func:`count_clamp_relation_audit`: to a public bound on the size, and to the data's own size.
COUNT_CLAMPS = ("clamp to the public bound", "clamp to the data's own size")


def count_clamp_relation_audit(eps: float, n_bound: int) -> list[RelationAudit]:
    """Exact privacy loss of the clamped geometric count under both neighbour relations, for two clamps.

    The count ``c`` of a data set of ``n <= n_bound`` binary records plus two-sided geometric noise, clamped
    either to ``{0..n_bound}`` (a public bound: the release of ``release_count_geometric(..., neighbours=
    "add-remove")``) or to ``{0..n}`` (the data set's own size, what ``n = len(data)`` gives). Both are eps-DP
    with one record replaced (``n`` fixed); with one record added or removed the second is not: an output
    above ``n`` is impossible at ``(n, n)`` and possible at ``(n + 1, n)``. Laws from
    :func:`dpbayes.core.geometric.clamped_geometric_logmatrix`, losses from
    :func:`dpbayes.core.privacy_loss.exact_summary_privacy_loss` (relations of :mod:`dpbayes.core.neighbours`).

    Parameters
    ----------
    eps : float
        Privacy parameter of the noise, ``> 0``.
    n_bound : int
        Largest data set size audited (and the public bound of the first clamp), ``1 <= n_bound <= 400``.

    Returns
    -------
    list of RelationAudit
        Four rows: each clamp of :data:`COUNT_CLAMPS` under ``"replace-one"`` and ``"add-remove"``.
    """
    eps = check_positive("eps", eps)
    n_bound = check_int("n_bound", n_bound, minimum=1, maximum=400)
    summaries = count_summaries(n_bound)
    public = clamped_geometric_logmatrix(summaries[:, 1], 0, n_bound, eps)
    own = np.full_like(public, -np.inf)
    for size in range(n_bound + 1):
        rows = summaries[:, 0] == size
        own[rows, : size + 1] = clamped_geometric_logmatrix(summaries[rows, 1], 0, size, eps)
    out = []
    for name, law in zip(COUNT_CLAMPS, (public, own)):
        for relation in NEIGHBOUR_RELATIONS:
            a = exact_summary_privacy_loss(law, summaries, relation, log_probabilities=True)
            i, j = int(a.x), int(a.x_prime)  # row indices of summaries
            out.append(RelationAudit(name, relation, eps, a.eps, (int(summaries[i, 0]), int(summaries[i, 1])),
                                     (int(summaries[j, 0]), int(summaries[j, 1])), int(a.output)))
    return out


@dataclass(frozen=True)
class AuditRow:
    """One mechanism of the book, its privacy claim and what the audits measured.

    Attributes
    ----------
    calibrated_eps : float
        The eps the mechanism is named / calibrated for (its ``eps`` argument).
    claimed_eps : float
        The eps it provably satisfies (``inf`` = no claim; may differ from ``calibrated_eps``
        when a chapter proves a different guarantee than the parameter suggests).
    claimed_by : str
        Who proves ``claimed_eps`` and how ("the paper, §4: the LP's constraints", "Ch. 2's proof
        of notes Alg. 1"); empty when there is no claim.
    audited_eps : float
        Exact (finite outputs) or analytic (densities) worst-case loss; ``nan`` if unavailable.
    statistical_lower : float
        Black-box lower confidence bound on eps (``nan`` when not run).
    """

    mechanism: str
    used_in: str
    calibrated_eps: float
    claimed_eps: float
    audit_kind: str
    audited_eps: float
    worst_case: str
    statistical_lower: float
    statistical_event: str
    verdict: str
    note: str = ""
    claimed_by: str = ""

    @property
    def claims_dp(self) -> bool:
        return bool(np.isfinite(self.claimed_eps))


def verdict(calibrated_eps: float, claimed_eps: float, audited_eps: float, statistical_lower: float) -> str:
    """Verdict of one audit row.

    * ``"VIOLATED"``: a finite claim is exceeded by the exact/analytic loss (by more than
      ``CLAIM_ATOL`` = 1e-9) or by the statistical lower bound -- the test suite fails on it;
    * ``"not eps-DP as calibrated"``: no claim is violated, but the loss exceeds the eps the
      mechanism is calibrated for (a flagged finding, reported with the measured loss);
    * ``"holds"``: the loss is within the calibrated eps (and the claim);
    * ``"within eps here (no general claim)"``: within the calibrated eps at the audited
      settings, for a mechanism the book does not claim to be DP;
    * ``"not yet available"``: no exact or analytic loss (``audited_eps`` is ``nan``).
    """
    if np.isnan(audited_eps):
        return "not yet available"

    def exceeds(bound: float) -> bool:
        return bool(audited_eps > bound + CLAIM_ATOL or (not np.isnan(statistical_lower) and statistical_lower > bound))

    if np.isfinite(claimed_eps) and exceeds(claimed_eps):
        return "VIOLATED"
    if exceeds(calibrated_eps):
        return "not eps-DP as calibrated"
    return "holds" if np.isfinite(claimed_eps) else "within eps here (no general claim)"
