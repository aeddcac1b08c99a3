"""Exact worst-case privacy loss of a mechanism with a finite output law.

A mechanism :math:`M` is :math:`\\varepsilon`-DP when, for every pair of neighbouring inputs
:math:`x \\sim x'` and every output event :math:`E`,
:math:`P(M(x) \\in E) \\le e^{\\varepsilon} P(M(x') \\in E)` (Dwork and Roth 2014, Def. 2.4;
UBaPP paper Def. 2). For a finite output space the worst event is a single output, so the
smallest valid epsilon is the *worst-case privacy loss*

.. math:: \\varepsilon^* = \\max_{x \\sim x'} \\max_o \\log \\frac{P(o \\mid x)}{P(o \\mid x')},

with the neighbour relation symmetrised (both orders of every pair). Outputs impossible under
``x`` carry no loss (0/0 and 0/positive); an output possible under ``x`` and impossible under
``x'`` gives ``inf``.

This module is the one place that computes this number: the chapters' checks
(``dpbayes.ubapp.optimal.privacy_loss``, ``dpbayes.core.mechanisms.max_privacy_loss``,
``dpbayes.posterior.release.privacy_loss_binary`` / ``privacy_loss_multi``) and the audit
(:mod:`dpbayes.core.audit`) call it. Neighbour relations: ``"adjacent"`` (data sets counted by their
number of ones, or counts ``c, c + 1``: replacing one record changes the count by at most one),
``"all"`` (local DP), explicit index pairs, or :func:`replace_one_pairs` for category count
vectors (one record changes category). Data set summaries ``(n, c)`` (number of records, count of ones)
under the relations of :mod:`dpbayes.core.neighbours`, replace one record or add/remove one:
:func:`count_summaries`, :func:`summary_pairs` and :func:`exact_summary_privacy_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes.core.neighbours import ADD_REMOVE, check_neighbours
from dpbayes.core.validation import check_int, check_positive

__all__ = [
    "ExactAudit",
    "neighbour_pairs",
    "replace_one_pairs",
    "count_summaries",
    "summary_pairs",
    "exact_summary_privacy_loss",
    "exact_privacy_loss",
    "worst_case_privacy_loss",
]

# Rows of the (pairs x outputs) block evaluated at once: bounds memory for large matrices.
_BLOCK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class ExactAudit:
    """Worst-case privacy loss and where it is attained.

    Attributes
    ----------
    eps : float
        ``max log P(o | x) / P(o | x')`` over the audited neighbour pairs and outputs; ``inf``
        when some output has positive probability under ``x`` and probability zero under ``x'``.
    x, x_prime : int or float
        The maximising ordered pair of inputs (numerator, denominator): indices for a matrix,
        input values for a density.
    output : int or float
        The maximising output (column index for a matrix, output value for a density).
    n_pairs : int
        Number of ordered neighbour pairs examined.
    """

    eps: float
    x: float  # an index (int) for a matrix, an input value for a density
    x_prime: float
    output: Any
    n_pairs: int


def neighbour_pairs(n_inputs: int, relation: str | ArrayLike = "adjacent") -> NDArray[np.intp]:
    """Ordered neighbour pairs ``(x, x')`` of input indices ``0 .. n_inputs - 1``.

    Parameters
    ----------
    n_inputs : int
        Number of inputs (rows of the output-distribution matrix).
    relation : {"adjacent", "all"} or array of shape (m, 2)
        ``"adjacent"``: ``i ~ i + 1`` (data sets counted by their number of ones, or a count
        query under add/remove-one); ``"all"``: every two distinct inputs (local DP, where one
        individual's whole input may change); or explicit index pairs. The relation is always
        symmetrised, because DP bounds the ratio in both directions.

    Returns
    -------
    ndarray of shape (m', 2)
        Every ordered pair once, sorted, without self-pairs.
    """
    n_inputs = check_int("n_inputs", n_inputs, minimum=2)
    if isinstance(relation, str):
        if relation == "adjacent":
            i = np.arange(n_inputs - 1)
            pairs = np.column_stack([i, i + 1])
        elif relation == "all":
            i, j = np.triu_indices(n_inputs, k=1)
            pairs = np.column_stack([i, j])
        else:
            raise ValueError(f"relation must be 'adjacent', 'all' or an (m, 2) array of index pairs, got {relation!r}")
    else:
        pairs = np.asarray(relation)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
            raise ValueError(f"relation must be a non-empty (m, 2) array of index pairs, got shape {pairs.shape}")
        if not np.issubdtype(pairs.dtype, np.integer):
            raise TypeError("relation must hold integer input indices")
        if pairs.min() < 0 or pairs.max() >= n_inputs:
            raise ValueError(f"relation indices must lie in [0, {n_inputs - 1}]")
    both = np.concatenate([pairs, pairs[:, ::-1]])
    both = both[both[:, 0] != both[:, 1]]
    if both.shape[0] == 0:
        raise ValueError("relation must contain at least one pair of distinct inputs")
    return np.unique(both, axis=0).astype(np.intp)


def replace_one_pairs(data: ArrayLike) -> NDArray[np.intp]:
    """Neighbour pairs of category count vectors: ``c ~ c - e_i + e_j`` (one record changes category).

    Parameters
    ----------
    data : array_like of int, shape (m, k)
        Count vectors of the data sets (rows); a neighbour outside ``data`` is left out.

    Returns
    -------
    ndarray of shape (m', 2)
        Ordered pairs of row indices (both orders of every neighbouring pair), sorted.
    """
    d = np.asarray(data)
    if d.ndim != 2 or d.shape[0] < 2 or d.dtype.kind not in "iu":
        raise ValueError(f"data must be an (m, k) array of integer count vectors with m >= 2, got shape {d.shape}")
    index = {tuple(int(v) for v in c): r for r, c in enumerate(d)}
    pairs = []
    for r, c in enumerate(d):
        for i in range(d.shape[1]):
            if c[i] == 0:
                continue
            for j in range(d.shape[1]):
                if j == i:
                    continue
                nb = c.copy()
                nb[i] -= 1
                nb[j] += 1
                s = index.get(tuple(int(v) for v in nb))
                if s is not None:
                    pairs.append((r, s))
    return neighbour_pairs(d.shape[0], np.array(pairs, dtype=np.intp).reshape(-1, 2))


def _as_log_matrix(
    P: ArrayLike, input_axis: int, log_probabilities: bool, sum_atol: float | None
) -> NDArray[np.float64]:
    """Validate an output-distribution matrix and return log P with inputs on axis 0."""
    if input_axis not in (0, 1):
        raise ValueError(f"input_axis must be 0 (rows are inputs) or 1 (columns are inputs), got {input_axis!r}")
    M = np.asarray(P, dtype=float)
    if M.ndim != 2 or min(M.shape) == 0:
        raise ValueError(f"P must be a non-empty 2-D matrix, got shape {M.shape}")
    if np.isnan(M).any():
        raise ValueError("P must not contain NaN")
    if input_axis == 1:
        M = M.T
    if log_probabilities:
        if np.any(M > 0) or np.any(M == np.inf):
            raise ValueError("P holds log-probabilities (log_probabilities=True), so it must be <= 0")
        logM = M
    else:
        if np.any(M < 0) or not np.all(np.isfinite(M)):
            raise ValueError(
                "P must hold finite probabilities >= 0 (clip solver round-off explicitly before auditing)"
            )
        with np.errstate(divide="ignore"):
            logM = np.log(M)
    if sum_atol is not None:
        check_positive("sum_atol", sum_atol)
        sums = np.exp(special.logsumexp(logM, axis=1))
        worst = int(np.argmax(np.abs(sums - 1.0)))
        if abs(sums[worst] - 1.0) > sum_atol:
            raise ValueError(
                f"P must hold one probability distribution per input (sum 1 within sum_atol={sum_atol:g}); "
                f"input {worst} sums to {sums[worst]:.12g}"
            )
    return logM


def _pair_losses(logM: NDArray[np.float64], p: NDArray[np.intp]) -> NDArray[np.float64]:
    """``logM[x, o] - logM[x', o]`` for the pairs ``p`` (rows), ``-inf`` where ``o`` is impossible under ``x``."""
    num, den = logM[p[:, 0]], logM[p[:, 1]]
    with np.errstate(invalid="ignore"):
        loss = num - den  # -inf - (-inf) = nan: 0/0, ignored below
    loss[num == -np.inf] = -np.inf  # an impossible output under x carries no loss
    return loss


def _max_log_ratio(logM: NDArray[np.float64], pairs: NDArray[np.intp]) -> float:
    """``max over ordered pairs (x, x') and outputs o of logM[x, o] - logM[x', o]`` (no validation).

    ``logM`` has the inputs on axis 0; ``-inf`` when no output is possible under any ``x``. The one
    computation of the loss behind every public function of this module and of the chapters.
    """
    if pairs.shape[0] == 0:
        return -np.inf
    block = max(1, _BLOCK_ELEMENTS // max(1, logM.shape[1]))
    return max(float(np.max(_pair_losses(logM, pairs[s : s + block]))) for s in range(0, pairs.shape[0], block))


def _worst_log_ratio(logM: NDArray[np.float64], pairs: NDArray[np.intp]) -> tuple[float, int, int, int]:
    """:func:`_max_log_ratio` (at least 0) and its maximiser ``(x, x', o)``.

    Ties within floating-point round-off (relative 1e-12) go to the first pair and output in
    order, so the reported maximiser does not depend on the last bits of the arithmetic.
    """
    n_out = logM.shape[1]
    block = max(1, _BLOCK_ELEMENTS // n_out)
    top = _max_log_ratio(logM, pairs)
    tol = 0.0 if not np.isfinite(top) else 1e-12 * max(1.0, abs(top))
    for start in range(0, pairs.shape[0], block):
        p = pairs[start : start + block]
        hits = np.flatnonzero(_pair_losses(logM, p) >= top - tol)
        if hits.size:
            r, o = divmod(int(hits[0]), n_out)
            # both directions of every pair are audited, so the maximum is >= 0 for distributions
            return max(top, 0.0), int(p[r, 0]), int(p[r, 1]), int(o)
    raise AssertionError("unreachable: the maximum is attained somewhere")


def exact_privacy_loss(
    P: ArrayLike,
    neighbours: str | ArrayLike = "adjacent",
    *,
    input_axis: int = 0,
    log_probabilities: bool = False,
    sum_atol: float | None = 1e-6,
) -> ExactAudit:
    """Exact worst-case privacy loss of a mechanism with a finite output space, and its maximiser.

    Computes ``max_{x ~ x'} max_o [log P(o | x) - log P(o | x')]`` (Dwork and Roth 2014,
    Def. 2.4 restricted to singleton events, which is equivalent for finite outputs).
    Outputs with ``P(o | x) = 0`` never contribute (0/0 and 0/positive are ignored); an output
    with ``P(o | x) > 0 = P(o | x')`` gives an infinite loss.

    Parameters
    ----------
    P : array_like, 2-D
        Output distribution of each input: ``P[x, o]`` (``input_axis=0``) or ``P[o, x]``
        (``input_axis=1``, e.g. the UBaPP matrix whose column ``j`` is the distribution for
        count ``j``).
    neighbours : {"adjacent", "all"} or (m, 2) array
        Neighbour relation on input indices, see :func:`neighbour_pairs`.
    input_axis : {0, 1}
        Which axis indexes the inputs.
    log_probabilities : bool
        ``P`` holds log-probabilities (use when probabilities underflow).
    sum_atol : float or None
        Each input's distribution must sum to 1 within this tolerance; ``None`` skips the check
        (for a window of an infinite-support pmf that contains the maximising outputs).

    Returns
    -------
    ExactAudit
        The loss, the maximising ordered pair and output (column) index.
    """
    logM = _as_log_matrix(P, input_axis, log_probabilities, sum_atol)
    pairs = neighbour_pairs(logM.shape[0], neighbours)
    eps, i, j, o = _worst_log_ratio(logM, pairs)
    return ExactAudit(eps=eps, x=i, x_prime=j, output=o, n_pairs=int(pairs.shape[0]))


def worst_case_privacy_loss(
    P: ArrayLike,
    neighbours: str | ArrayLike = "adjacent",
    *,
    input_axis: int = 0,
    log_probabilities: bool = False,
    sum_atol: float | None = None,
) -> float:
    """The number of :func:`exact_privacy_loss` alone: the smallest ``eps`` of pure DP, in one pass.

    Parameters
    ----------
    P : array_like, 2-D
        Output distribution of each input (``P[x, o]`` or, with ``input_axis=1``, ``P[o, x]``),
        probabilities or (``log_probabilities=True``) log-probabilities.
    neighbours : {"adjacent", "all"} or (m, 2) array
        Neighbour relation on input indices, see :func:`neighbour_pairs` and
        :func:`replace_one_pairs`.
    input_axis : {0, 1}
        Which axis indexes the inputs.
    log_probabilities : bool
        ``P`` holds log-probabilities.
    sum_atol : float or None
        If given, each input's distribution must sum to 1 within this tolerance.

    Returns
    -------
    float
        ``max_{x ~ x'} max_o log P(o | x)/P(o | x')`` (at least 0; ``inf`` when an output is
        possible under one neighbour only).
    """
    logM = _as_log_matrix(P, input_axis, log_probabilities, sum_atol)
    return max(_max_log_ratio(logM, neighbour_pairs(logM.shape[0], neighbours)), 0.0)


def count_summaries(n_bound: int, *, n: int | None = None) -> NDArray[np.intp]:
    """Every data set summary ``(n, c)`` with ``0 <= c <= n <= n_bound``: the inputs of a count release.

    A data set of binary records is summarised by its number of records ``n`` and its count of ones
    ``c``; the releases of a count or a proportion see nothing else. Ordered by ``n``, then ``c``.

    Parameters
    ----------
    n_bound : int
        Public bound on the number of records, ``>= 1``.
    n : int, optional
        Keep only the summaries of this size (``0 <= n <= n_bound``): the domain of a release whose
        ``n`` is public (replace one record).

    Returns
    -------
    ndarray of int, shape (m, 2)
        Rows ``(n, c)``; ``m = (n_bound + 1)(n_bound + 2) / 2`` without ``n``, ``n + 1`` with it.
    """
    n_bound = check_int("n_bound", n_bound, minimum=1)
    sizes = range(n_bound + 1) if n is None else [check_int("n", n, minimum=0, maximum=n_bound)]
    rows = [(k, c) for k in sizes for c in range(k + 1)]
    return np.array(rows, dtype=np.intp).reshape(-1, 2)


def summary_pairs(summaries: ArrayLike, neighbours: str) -> NDArray[np.intp]:
    """Ordered neighbour pairs of row indices of ``summaries`` under a relation of :mod:`dpbayes.core.neighbours`.

    ``"replace-one"``: ``(n, c) ~ (n, c + 1)`` (one record changes value; ``n`` unchanged).
    ``"add-remove"``: ``(n, c) ~ (n + 1, c)`` and ``(n, c) ~ (n + 1, c + 1)`` (one record, a 0 or a 1,
    added). Both orders of every pair are returned (:func:`neighbour_pairs`); a neighbour that is not a
    row of ``summaries`` is left out.

    Parameters
    ----------
    summaries : array_like of int, shape (m, 2)
        Rows ``(n, c)`` with ``0 <= c <= n``, e.g. from :func:`count_summaries`.
    neighbours : {"replace-one", "add-remove"}
        The relation.

    Returns
    -------
    ndarray of shape (m', 2)
        Ordered pairs of row indices, sorted.
    """
    neighbours = check_neighbours(neighbours)
    d = np.asarray(summaries)
    if d.ndim != 2 or d.shape[1] != 2 or d.shape[0] < 2 or d.dtype.kind not in "iu":
        raise ValueError(f"summaries must be an (m, 2) integer array of rows (n, c) with m >= 2, got shape {d.shape}")
    if np.any(d[:, 1] < 0) or np.any(d[:, 1] > d[:, 0]):
        raise ValueError("summaries must hold rows (n, c) with 0 <= c <= n")
    index = {(int(k), int(c)): r for r, (k, c) in enumerate(d)}
    steps = ((1, 0), (1, 1)) if neighbours == ADD_REMOVE else ((0, 1),)
    pairs = [(r, index[(int(k) + dn, int(c) + dc)]) for r, (k, c) in enumerate(d) for dn, dc in steps
             if (int(k) + dn, int(c) + dc) in index]
    if not pairs:
        raise ValueError(f"summaries hold no two neighbours under neighbours={neighbours!r}")
    return neighbour_pairs(d.shape[0], np.array(pairs, dtype=np.intp))


def exact_summary_privacy_loss(
    P: ArrayLike,
    summaries: ArrayLike,
    neighbours: str,
    *,
    log_probabilities: bool = False,
    sum_atol: float | None = 1e-6,
) -> ExactAudit:
    """Exact worst-case privacy loss of a release of a data set summary ``(n, c)`` under a neighbour relation.

    :func:`exact_privacy_loss` with the pairs of :func:`summary_pairs`: the release's output law is given
    for every summary on one finite output space (outputs a release cannot produce at some summary have
    probability 0 there, so a release whose outputs reveal ``n`` gets an infinite loss under add/remove).

    Parameters
    ----------
    P : array_like, shape (m, n_outputs)
        ``P[i, o]``: probability (or, with ``log_probabilities``, log-probability) of output ``o`` given
        the summary ``summaries[i]``.
    summaries : array_like of int, shape (m, 2)
        Rows ``(n, c)`` (:func:`count_summaries`).
    neighbours : {"replace-one", "add-remove"}
        The relation (:mod:`dpbayes.core.neighbours`).
    log_probabilities : bool
        ``P`` holds log-probabilities.
    sum_atol : float or None
        Each row must sum to 1 within this tolerance (``None`` skips the check).

    Returns
    -------
    ExactAudit
        ``x`` and ``x_prime`` are row indices of ``summaries``; ``output`` is a column of ``P``.
    """
    logM = _as_log_matrix(P, 0, log_probabilities, sum_atol)
    d = np.asarray(summaries)
    if d.ndim != 2 or d.shape[0] != logM.shape[0]:
        raise ValueError(f"summaries must have one row per row of P ({logM.shape[0]}), got shape {d.shape}")
    pairs = summary_pairs(d, neighbours)
    eps, i, j, o = _worst_log_ratio(logM, pairs)
    return ExactAudit(eps=eps, x=i, x_prime=j, output=o, n_pairs=int(pairs.shape[0]))
