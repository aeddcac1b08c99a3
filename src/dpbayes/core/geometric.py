"""The (truncated) two-sided geometric mechanism of a count: exact law, kernel sums and sampler.

The geometric mechanism ("discrete Laplace", Ghosh, Roughgarden & Sundararajan 2009) releases a
count ``c`` as ``z = c + G`` with two-sided geometric noise

.. math:: P(G = k) = \\frac{1 - a}{1 + a} a^{|k|}, \\qquad a = e^{-\\varepsilon},

and its truncated version on ``{0, ..., n}`` reports outputs below 0 as 0 and above ``n`` as ``n``.
The truncated law is

.. math:: G[z, c] = P(z \\mid c) = \\begin{cases} \\frac{1 - a}{1 + a} a^{|z - c|} & 0 < z < n, \\\\
          \\frac{a^{|z - c|}}{1 + a} & z \\in \\{0, n\\}, \\end{cases}

(Ghosh et al. 2009, Def. 2.3; UBaPP paper Algorithm 1 step 2; notes' "Geometric" mechanism of
chapter 2; Naldi & D'Acquisto's geometric release of chapter 4). Truncation is post-processing, so
both are ``eps``-DP for neighbouring counts ``c, c + 1``: every log ratio
``log G[z, c] - log G[z, c + 1]`` is ``+eps``, ``-eps`` or 0.

This module is the one place that writes this law down: the chapters' modules
(:mod:`dpbayes.ubapp.optimal`, :mod:`dpbayes.posterior.release`, :mod:`dpbayes.core.mechanisms`) and the
release module build on it. Everything is in log space, so that nothing underflows for large
``eps |z - c|``. The samplers are for simulation (seeded NumPy draws); a release of real data
draws its noise with OpenDP (:mod:`dpbayes.release.statistic`), whose sampler has this exact law (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.compiled import compiled_enabled, first_order_chain
from dpbayes.core.validation import check_int, check_positive, check_rng

__all__ = [
    "geometric_log_normalisers",
    "two_sided_geometric_logpmf",
    "truncated_geometric_logpmf",
    "truncated_geometric_logmatrix",
    "truncated_geometric_matrix",
    "clamped_geometric_logmatrix",
    "geometric_row_factors",
    "geometric_row_factors_at",
    "geometric_kernel_sums",
    "geometric_kernel_sums_by_chunk",
    "sample_two_sided_geometric",
    "sample_truncated_geometric",
]


def geometric_log_normalisers(eps: float) -> tuple[float, float]:
    """``(log((1 - a)/(1 + a)), log(1/(1 + a)))`` with ``a = exp(-eps)``: the log mass factors of the law.

    The first multiplies ``a^|z - c|`` at an interior output (and in the untruncated law), the
    second at the clamped ends ``z = 0`` and ``z = n`` (Ghosh et al. 2009, Def. 2.3). Computed as
    ``log(-expm1(-eps)) - log1p(exp(-eps))``, accurate for tiny ``eps``.

    Parameters
    ----------
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    log_interior, log_end : float
    """
    eps = check_positive("eps", eps)
    log_interior = float(np.log(-np.expm1(-eps)) - np.log1p(np.exp(-eps)))
    log_end = float(-np.log1p(np.exp(-eps)))
    return log_interior, log_end


def two_sided_geometric_logpmf(z: ArrayLike, count: ArrayLike, eps: float) -> NDArray[np.float64]:
    """``log P(z | c) = log((1 - a)/(1 + a)) - eps |z - c|``: the untruncated geometric mechanism.

    Parameters
    ----------
    z : array_like
        Released values (integers; broadcast against ``count``).
    count : array_like
        True counts.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray
        The log mass, shaped like ``z`` and ``count`` broadcast.
    """
    eps = check_positive("eps", eps)
    z = np.asarray(z, dtype=float)
    c = np.asarray(count, dtype=float)
    log_norm, _ = geometric_log_normalisers(eps)
    return log_norm - eps * np.abs(z - c)


def truncated_geometric_logpmf(count: int, n: int, eps: float) -> NDArray[np.float64]:
    """``log P(z | c)`` for ``z = 0..n``: the law of ``clamp(c + G, 0, n)`` for one count ``c``.

    Interior ``z``: ``log((1 - a)/(1 + a)) - eps |z - c|``; the ends collect the tails,
    ``a^c/(1 + a)`` at ``z = 0`` and ``a^(n - c)/(1 + a)`` at ``z = n`` (Ghosh et al. 2009). Column
    ``c`` of :func:`truncated_geometric_logmatrix`.

    Parameters
    ----------
    count : int
        True count ``c`` in ``[0, n]``.
    n : int
        Largest output (``>= 0``); ``n = 0`` has the single output 0.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    n = check_int("n", n, minimum=0)
    c = check_int("count", count, minimum=0, maximum=n)
    eps = check_positive("eps", eps)
    if n == 0:
        return np.zeros(1)
    log_interior, log_end = geometric_log_normalisers(eps)
    z = np.arange(n + 1, dtype=float)
    out = -eps * np.abs(z - c) + log_interior
    out[0] = -eps * c + log_end
    out[n] = -eps * (n - c) + log_end
    return out


def truncated_geometric_logmatrix(n: int, eps: float) -> NDArray[np.float64]:
    """``log G[z, c]``: the truncated geometric mechanism on ``{0..n}`` as a matrix (outputs x counts).

    ``G[z, c] = Pr(output z | count c)`` (module docstring; Ghosh et al. 2009, UBaPP paper
    Algorithm 1 step 2). Columns sum to 1. Privacy: ``|log G[z, c] - log G[z, c + 1]|`` is ``eps``
    or 0.

    Parameters
    ----------
    n : int
        Largest count (``>= 0``).
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape (n + 1, n + 1)
    """
    n = check_int("n", n, minimum=0)
    eps = check_positive("eps", eps)
    if n == 0:
        return np.zeros((1, 1))
    z = np.arange(n + 1)
    dist = np.abs(z[:, None] - z[None, :]).astype(float)
    log_interior, log_end = geometric_log_normalisers(eps)
    logG = -eps * dist + log_interior
    logG[0, :] = -eps * dist[0] + log_end
    logG[n, :] = -eps * dist[n] + log_end
    return logG


def clamped_geometric_logmatrix(values: ArrayLike, low: int, high: int, eps: float) -> NDArray[np.float64]:
    """``log P(z | v)`` of ``z = clamp(v + G, low, high)`` for ``z = low..high``, one row per input ``v``.

    The truncated geometric law on any integer window ``{low..high}``, for inputs inside or outside it
    (a released number of records clamped to ``{1..n_bound}`` has the input ``n = 0`` below its window).
    Interior ``z``: ``log((1 - a)/(1 + a)) - eps |z - v|``; the ends collect the tails,
    ``P(G <= low - v)`` and ``P(G >= high - v)``, with ``P(G >= k) = a^k / (1 + a)`` for ``k >= 1`` and
    ``P(G >= k) = 1 - a^(1 - k) / (1 + a)`` for ``k <= 0`` (``a = e^-eps``; Ghosh et al. 2009). For
    ``low = 0``, ``high = n`` and ``v`` in ``{0..n}`` the rows are the columns of
    :func:`truncated_geometric_logmatrix`.

    Parameters
    ----------
    values : array_like of int, shape (m,)
        Inputs ``v`` (any integers).
    low, high : int
        The output window, ``low <= high``.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape (m, high - low + 1)
        Rows sum to 1 (in linear scale).
    """
    low = check_int("low", low)
    high = check_int("high", high, minimum=low)
    eps = check_positive("eps", eps)
    v = np.atleast_1d(np.asarray(values))
    if v.ndim != 1 or v.dtype.kind not in "iu":
        raise ValueError("values must be a 1-D array of integers")
    v = v.astype(float)[:, None]
    if high == low:
        return np.zeros((v.shape[0], 1))
    log_interior, log_end = geometric_log_normalisers(eps)
    z = np.arange(low, high + 1, dtype=float)[None, :]
    out = -eps * np.abs(z - v) + log_interior

    def log_upper_tail(k: NDArray[np.float64]) -> NDArray[np.float64]:
        # log P(G >= k): a^k / (1 + a) for k >= 1, 1 - a^(1 - k) / (1 + a) for k <= 0
        far = -eps * np.maximum(k, 1.0) + log_end
        near = np.log(-np.expm1(-eps * np.maximum(1.0 - k, 1.0) + log_end))
        return np.where(k >= 1, far, near)

    out[:, 0] = log_upper_tail(v[:, 0] - low)  # P(G <= low - v) = P(G >= v - low) by symmetry
    out[:, -1] = log_upper_tail(high - v[:, 0])
    return out


def truncated_geometric_matrix(n: int, eps: float) -> NDArray[np.float64]:
    """``G[z, c]`` in linear scale: ``exp`` of :func:`truncated_geometric_logmatrix`.

    Parameters
    ----------
    n : int
        Largest count (``>= 0``).
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape (n + 1, n + 1)
        Column-stochastic matrix, ``G[z, c] = P(output z | count c)``.
    """
    return np.exp(truncated_geometric_logmatrix(n, eps))


def geometric_row_factors(n: int, eps: float) -> NDArray[np.float64]:
    """``f[z]`` with ``G[z, c] = f[z] a^|z - c|``: ``(1 - a)/(1 + a)`` inside, ``1/(1 + a)`` at 0 and n.

    Parameters
    ----------
    n : int
        Largest count (``>= 0``); for ``n = 0`` the single factor is 1.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    n = check_int("n", n, minimum=0)
    eps = check_positive("eps", eps)
    interior, end = _row_factor_values(n, eps)
    f = np.full(n + 1, interior)
    f[0] = f[n] = end
    return f


def geometric_row_factors_at(z: NDArray[np.integer], n: int, eps: float) -> NDArray[np.float64]:
    """``geometric_row_factors(n, eps)[z]`` without the array of all ``n + 1`` factors (the same values).

    Parameters
    ----------
    z : ndarray of int
        Noisy counts in ``0..n`` (not checked: for callers that hold many of them).
    n : int
        Largest count, ``>= 0``.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape of ``z``
    """
    interior, end = _row_factor_values(n, eps)
    f = np.full(np.shape(z), interior)
    f[(z == 0) | (z == n)] = end
    return f


def _row_factor_values(n: int, eps: float) -> tuple[float, float]:
    """The row factors inside and at the two ends (0 and n) of the truncated geometric mechanism."""
    if n == 0:
        return 1.0, 1.0  # a single output: every noisy count is clamped to it
    log_interior, log_end = geometric_log_normalisers(eps)
    return float(np.exp(log_interior)), float(np.exp(log_end))


def geometric_kernel_sums(w: ArrayLike, eps: float, moments: int = 0, axis: int = 0) -> tuple[NDArray[np.float64], ...]:
    """``S_r[z] = sum_c G[z, c] w[c] (c - z)^r`` for ``r = 0..moments`` without forming ``G``.

    ``G`` is the truncated geometric mechanism on ``{0..n}`` (:func:`truncated_geometric_logmatrix`,
    ``n = len(w) - 1`` along ``axis``). The kernel ``a^|z - c|`` (``a = exp(-eps)``) splits into a
    left part (``c <= z``) and a right part (``c >= z``), each a first-order recursion in ``z``:
    ``L_0(z) = a L_0(z - 1) + w_z``, ``L_1(z) = a (L_1(z - 1) + L_0(z - 1))``,
    ``L_2(z) = a (L_2(z - 1) + 2 L_1(z - 1) + L_0(z - 1))`` with ``L_r(z) = sum_{c <= z} a^(z - c)
    w_c (z - c)^r``, and the mirror image from the right. Every term is >= 0 for ``w >= 0`` (no
    cancellation; the centred moments keep ``(c - z)^2`` small where the mass is), so the relative
    rounding error is a few ulps times ``min(n, 1/eps)``-term sums. ``O(n)`` time and memory
    (``scipy.signal.lfilter``), against ``O(n^2)`` for the dense product with ``G``.

    Parameters
    ----------
    w : array_like
        Non-negative weights on ``{0..n}`` (any further axes are independent columns).
    eps : float
        Privacy parameter of the kernel, ``> 0``.
    moments : {0, 1, 2}
        Highest centred moment ``r`` returned.
    axis : int
        Axis of ``w`` that runs over ``c``.

    Returns
    -------
    tuple of ndarray
        ``(S_0, ..., S_moments)``, each shaped like ``w``.
    """
    from scipy.signal import lfilter

    eps = check_positive("eps", eps)
    moments = check_int("moments", moments, minimum=0, maximum=2)
    w = np.moveaxis(np.asarray(w, dtype=float), axis, -1)
    n = w.shape[-1] - 1
    if n < 0:
        raise ValueError("w must not be empty")
    a = float(np.exp(-eps))
    den = [1.0, -a]

    def one_sided(v: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        out = [lfilter([1.0], den, v, axis=-1)]
        if moments >= 1:
            out.append(lfilter([0.0, a], den, out[0], axis=-1))
        if moments >= 2:
            out.append(lfilter([0.0, a], den, 2.0 * out[1] + out[0], axis=-1))
        return out

    left = one_sided(w)
    right = [r[..., ::-1] for r in one_sided(w[..., ::-1])]
    f = geometric_row_factors(n, eps)
    sums = [f * (left[0] + right[0] - w)]
    if moments >= 1:
        sums.append(f * (right[1] - left[1]))
    if moments >= 2:
        sums.append(f * (left[2] + right[2]))
    return tuple(np.moveaxis(s, -1, axis) for s in sums)


KERNEL_CHUNK = 1 << 18
"""Chunk length of :func:`geometric_kernel_sums_by_chunk` (2 MB per array: a few such arrays fit in the CPU's cache)."""


def geometric_kernel_sums_by_chunk(
    weights: Callable[[int, int], NDArray[np.float64]], n: int, eps: float, moments: int = 0, chunk: int = KERNEL_CHUNK
) -> Iterator[tuple[int, int, tuple[NDArray[np.float64], ...]]]:
    """:func:`geometric_kernel_sums` of a 1-D ``w``, chunk by chunk, in ``O(chunk)`` memory.

    The same first-order recursions, run through ``w[lo:hi]`` one chunk at a time: the left sums carry
    their filter state forward; the right sums need everything to the right of a chunk, so a first
    backward pass keeps only the state entering each chunk (``moments + 1`` numbers per chunk), and the
    second pass restarts the right recursion of each chunk from it. The arithmetic is that of the
    one-array function, operation for operation (``scipy.signal.lfilter`` continued with ``zi``), so
    the sums are the same bits (tested); the right recursion runs twice, 1.5 x the work.

    Parameters
    ----------
    weights : callable
        ``weights(lo, hi)`` returns ``w[lo:hi]`` (non-negative, float64): computed on demand, so that
        ``w`` itself need not exist as one array. Called twice per chunk, with the same bounds.
    n : int
        ``len(w) - 1``, ``>= 0``.
    eps : float
        Privacy parameter of the kernel, ``> 0``.
    moments : {0, 1, 2}
        Highest centred moment ``r`` returned.
    chunk : int
        Chunk length, ``>= 1``.

    Yields
    ------
    lo, hi, sums
        Bounds of the chunk (increasing) and ``(S_0[lo:hi], ..., S_moments[lo:hi])``.
    """
    from scipy.signal import lfilter

    n = check_int("n", n, minimum=0)
    eps = check_positive("eps", eps)
    moments = check_int("moments", moments, minimum=0, maximum=2)
    chunk = check_int("chunk", chunk, minimum=1)
    a = float(np.exp(-eps))
    den = [1.0, -a]
    bounds = [(lo, min(lo + chunk, n + 1)) for lo in range(0, n + 1, chunk)]

    compiled = compiled_enabled()

    def one_sided(v: NDArray[np.float64], state: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        # the filters of geometric_kernel_sums.one_sided, continuing from (and updating) ``state``
        if compiled:  # the same chain in one compiled loop, the same bits (dpbayes.core.compiled)
            return list(first_order_chain(v, a, state))
        out0, z = lfilter([1.0], den, v, zi=state[0:1])
        state[0] = z[0]
        out = [out0]
        if moments >= 1:
            out1, z = lfilter([0.0, a], den, out0, zi=state[1:2])
            state[1] = z[0]
            out.append(out1)
        if moments >= 2:
            out2, z = lfilter([0.0, a], den, 2.0 * out[1] + out0, zi=state[2:3])
            state[2] = z[0]
            out.append(out2)
        return out

    entering = [np.zeros(moments + 1) for _ in bounds]
    state = np.zeros(moments + 1)
    for k in range(len(bounds) - 1, 0, -1):  # backward: only the states are kept
        lo, hi = bounds[k]
        one_sided(np.asarray(weights(lo, hi), dtype=float)[::-1], state)
        entering[k - 1] = state.copy()
    log_interior, log_end = geometric_log_normalisers(eps)
    interior, end = float(np.exp(log_interior)), float(np.exp(log_end))
    left_state = np.zeros(moments + 1)
    inside = np.full(min(chunk, n + 1), interior)
    for k, (lo, hi) in enumerate(bounds):
        w = np.asarray(weights(lo, hi), dtype=float)
        left = one_sided(w, left_state)
        right = [r[::-1] for r in one_sided(w[::-1], entering[k])]
        f = inside[: hi - lo]
        if lo == 0 or hi == n + 1:  # the clamped ends (geometric_row_factors)
            f = f.copy()
            if lo == 0:
                f[0] = end
            if hi == n + 1:
                f[-1] = end
            if n == 0:
                f[0] = 1.0
        sums = [f * (left[0] + right[0] - w)]
        if moments >= 1:
            sums.append(f * (right[1] - left[1]))
        if moments >= 2:
            sums.append(f * (left[2] + right[2]))
        yield lo, hi, tuple(sums)


def sample_two_sided_geometric(eps: float, rng: np.random.Generator, size: int | tuple[int, ...]) -> NDArray[np.int64]:
    """Draw two-sided geometric noise ``G`` with ``P(G = k) = (1 - a)/(1 + a) a^|k|``, ``a = exp(-eps)``.

    ``G`` is the difference of two i.i.d. geometric numbers of trials with success probability
    ``1 - a`` (computed as ``-expm1(-eps)``, without cancellation for small ``eps``), which has
    exactly this law. For simulation only (seeded NumPy sampler); to protect real data use
    :mod:`dpbayes.release.statistic`, which draws the noise with OpenDP.

    Parameters
    ----------
    eps : float
        Privacy parameter, ``> 0``.
    rng : numpy.random.Generator
        Source of randomness.
    size : int or tuple of int
        Shape of the draw.

    Returns
    -------
    ndarray of int
    """
    eps = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    q = -np.expm1(-eps)
    return np.asarray(rng.geometric(q, size=size) - rng.geometric(q, size=size), dtype=np.int64)


def sample_truncated_geometric(
    count: ArrayLike, n: int, eps: float, rng: np.random.Generator, size: int | tuple[int, ...] | None = None
) -> NDArray[np.int64]:
    """Draw ``clamp(c + G, 0, n)``: the truncated geometric mechanism (law :func:`truncated_geometric_logpmf`).

    Parameters
    ----------
    count : array_like of int
        True counts in ``[0, n]``.
    n : int
        Largest output, ``>= 0``.
    eps : float
        Privacy parameter, ``> 0``.
    rng : numpy.random.Generator
        Source of randomness.
    size : int or tuple of int, optional
        Shape of the draw (broadcast with ``count``); default ``count``'s shape.

    Returns
    -------
    ndarray of int
    """
    n = check_int("n", n, minimum=0)
    c = np.asarray(count)
    if c.dtype.kind not in "iu" or np.any(c < 0) or np.any(c > n):
        raise ValueError(f"count must hold integers in [0, {n}]")
    shape = c.shape if size is None else size
    return np.clip(c + sample_two_sided_geometric(eps, rng, shape), 0, n).astype(np.int64)
