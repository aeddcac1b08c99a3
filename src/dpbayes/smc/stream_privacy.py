"""The released transcript of an online run and the neighbouring-stream check (chapter 3).

Paper Proposition 1 and Remark 1, beyond the paper's proof: everything a run of
:func:`dpbayes.smc.samplers.smc_latent` or :func:`dpbayes.smc.samplers.smc_exact` makes public, step by step
(:func:`~dpbayes.smc.stream_privacy.released_transcript`), so that two runs on streams that differ in one record can be compared bit
for bit (:func:`~dpbayes.smc.stream_privacy.neighbour_stream_check`). Re-exported by :mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.smc import samplers as smc, truncation
from dpbayes.smc.summaries import _finite_1d
from dpbayes.core.validation import check_int, check_positive

__all__ = ["TRANSCRIPT_FIELDS", "released_transcript", "first_transcript_difference", "NeighbourCheck", "neighbour_stream_check"]


#: Per-step released quantities of an :class:`dpbayes.smc.samplers.SMCResult`, in the order of :func:`~dpbayes.smc.stream_privacy.released_transcript`.
TRANSCRIPT_FIELDS = ("y", "lower", "upper", "mean_mu", "mean_sigma", "ess")


def released_transcript(result: smc.SMCResult) -> NDArray[np.float64]:
    """Everything an online run releases after each step, one row per step.

    Row ``t`` (0-based) holds the release ``y_t``, the interval ``[l_t, r_t]`` it was asked through,
    the posterior means of ``mu`` and ``sigma`` and the effective sample size after step ``t``
    (:data:`~dpbayes.smc.stream_privacy.TRANSCRIPT_FIELDS`), then the particle cloud (``mu``, ``sigma``, weights) if it was
    stored at that step, else NaN. Proposition 1 of the paper treats all of these (``Theta_t``,
    ``s_t``, ``Y_t``) as released.

    Returns
    -------
    ndarray
        Shape ``(n, 6 + 3 N)``, ``N`` the number of particles.
    """
    if not isinstance(result, smc.SMCResult):
        raise TypeError(f"result must be a dpbayes.smc.samplers.SMCResult, got {type(result).__name__}")
    n = result.y.size
    per_step = np.column_stack([np.asarray(getattr(result, f), dtype=float) for f in TRANSCRIPT_FIELDS])
    N = result.final_mu.size
    clouds = np.full((n, 3 * N), np.nan)
    for k, step in enumerate(result.stored_steps):
        clouds[int(step) - 1] = np.concatenate([result.stored_mu[k], result.stored_sigma[k], result.stored_weights[k]])
    return np.hstack([per_step, clouds])


def first_transcript_difference(a: smc.SMCResult, b: smc.SMCResult) -> int:
    """First step (0-based) at which two runs' released transcripts differ in any bit; ``n`` if none.

    NaN entries (steps without a stored cloud) compare equal to NaN. The two runs must have the same
    length and particle number.
    """
    ta, tb = released_transcript(a), released_transcript(b)
    if ta.shape != tb.shape:
        raise ValueError(f"the two runs differ in length or particle number: {ta.shape} against {tb.shape}")
    same = (ta == tb) | (np.isnan(ta) & np.isnan(tb))
    rows = np.flatnonzero(~same.all(axis=1))
    return int(rows[0]) if rows.size else int(ta.shape[0])


@dataclass(frozen=True)
class NeighbourCheck:
    """Two runs on streams that differ in one record ``k``, same seed (see :func:`~dpbayes.smc.stream_privacy.neighbour_stream_check`)."""

    #: index of the replaced record
    k: int
    #: first step at which the released transcripts differ (``k`` when only release ``k`` onwards moves)
    first_difference: int
    #: whether the interval asked of record ``k`` is the same in both runs (it depends on earlier outputs only)
    same_interval_at_k: bool
    #: largest ``|log p(y | x_k) - log p(y | x_k')|`` over a grid of ``y``, for record ``k``'s interval
    max_privacy_loss: float


def neighbour_stream_check(
    sampler: Callable[..., smc.SMCResult],
    x: ArrayLike,
    k: int,
    x_k_new: float,
    eps: float,
    seed: int,
    *,
    n_y: int = 2001,
    **sampler_kwargs: Any,
) -> NeighbourCheck:
    """Replace record ``k`` of an ordered stream and compare the two runs' transcripts (same seed).

    The neighbour relation of the paper's Proposition 1: two streams of the same length and order that
    differ in one record (replacement; adding or removing a record shifts every later index and is not
    covered). Both runs use ``numpy.random.default_rng(seed)``; since neither the mechanism nor the sampler
    draws a data-dependent number of random numbers, everything released before step ``k`` and the
    interval asked of record ``k`` must be bit-identical, and release ``k`` has privacy loss at most
    ``eps`` (exact Laplace densities on a grid of ``n_y`` values around the interval).

    Parameters
    ----------
    sampler : callable
        :func:`dpbayes.smc.samplers.smc_latent` or :func:`dpbayes.smc.samplers.smc_exact`, called as
        ``sampler(x, eps, rng, **sampler_kwargs)``.
    x : array_like, shape (n,)
        The stream; ``k`` in ``[0, n)``.
    x_k_new : float
        The replacement value of record ``k``.
    """
    xs = _finite_1d("x", x)
    k = check_int("k", k, minimum=0, maximum=xs.size - 1)
    if not np.isfinite(x_k_new):
        raise ValueError(f"x_k_new must be a finite number, got {x_k_new!r}")
    eps = float(check_positive("eps", eps))
    seed = check_int("seed", seed, minimum=0)
    n_y = check_int("n_y", n_y, minimum=3)
    x2 = xs.copy()
    x2[k] = float(x_k_new)
    a = sampler(xs, eps, np.random.default_rng(seed), **sampler_kwargs)
    b = sampler(x2, eps, np.random.default_rng(seed), **sampler_kwargs)
    lo, hi = float(a.lower[k]), float(a.upper[k])
    same_interval = bool(lo == b.lower[k] and hi == b.upper[k])
    width = hi - lo
    y = np.linspace(lo - 20.0 * width / eps, hi + 20.0 * width / eps, n_y)
    loss = truncation.log_density_privatised_given_x(y, xs[k], lo, hi, eps) - truncation.log_density_privatised_given_x(y, x2[k], lo, hi, eps)
    return NeighbourCheck(k=k, first_difference=first_transcript_difference(a, b), same_interval_at_k=same_interval,
                          max_privacy_loss=float(np.max(np.abs(loss))))
