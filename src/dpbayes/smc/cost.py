"""Exact operation counts of the latent-``x`` SMC and of its cost reductions (chapter 3, paper §3.1).

The paper's SMC with latent ``x`` (:func:`dpbayes.smc.samplers.smc_latent`) rejuvenates at step ``t`` every
earlier latent value ``x_1, ..., x_t`` of every particle, so a run of ``n`` releases with ``N``
particles costs ``O(N n^2)``. The paper says the cost "may be reduced" by (a) updating only a random
subset of fixed size ``k`` of the ``x``'s at each step (``smc_latent(..., rejuvenate=k)``), and (b) a
Gibbs move for ``theta`` when ``p(theta | x_{1:t})`` is tractable. Here (b) is not a reduction on top
of the book's sampler: ``smc_latent`` already draws ``(mu, sigma^2)`` by the conjugate
normal-inverse-gamma Gibbs moves, as the paper's Algorithm 4 does. The counts below are exact, not
timed: :func:`latent_move_count` gives the number of latent MH proposals
``2 N sum_{t=1}^{n-1} min(t, k)`` (a random-walk and an independence proposal per swept value),
:func:`gibbs_draw_count` the ``2 N (n - 1)`` Gibbs draws, :func:`move_fraction` the ratio of the
subset variant's latent moves to the full sweep's, and :func:`exact_smc_likelihood_count` the Laplace
likelihood terms evaluated by :func:`dpbayes.smc.samplers.smc_exact`, which integrates ``x`` out and pays
``O(N t)`` terms only at its resample-move events.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpbayes.core.validation import check_int

__all__ = ["latent_move_count", "gibbs_draw_count", "move_fraction", "exact_smc_likelihood_count"]


def _check_n_N(n: int, n_particles: int) -> tuple[int, int]:
    return check_int("n", n, minimum=1), check_int("n_particles", n_particles, minimum=1)


def latent_move_count(n: int, n_particles: int, rejuvenate: int | None = None) -> int:
    """Number of latent-``x`` MH proposals made by :func:`dpbayes.smc.samplers.smc_latent`.

    Parameters
    ----------
    n : int
        Number of releases, ``>= 1``.
    n_particles : int
        Number of particles ``N``, ``>= 1``.
    rejuvenate : int, optional
        Subset size ``k >= 1`` (paper §3.1 (a)); ``None``: every earlier value at every step.

    Returns
    -------
    int
        ``2 N sum_{t=1}^{n-1} min(t, k)`` (``k = infinity`` for ``None``): steps ``t = 1, ..., n-1``
        rejuvenate ``min(t, k)`` earlier values with two proposals each; ``N n (n - 1)`` in full.
    """
    n, N = _check_n_N(n, n_particles)
    t = np.arange(1, n, dtype=np.int64)
    if rejuvenate is not None:
        k = check_int("rejuvenate", rejuvenate, minimum=1)
        t = np.minimum(t, k)
    return int(2 * N * int(t.sum()))


def gibbs_draw_count(n: int, n_particles: int) -> int:
    """Number of Gibbs draws of ``mu`` and ``sigma^2`` in :func:`dpbayes.smc.samplers.smc_latent`: ``2 N (n - 1)``.

    The same with or without a subset: the Gibbs draws always use every ``x_{1:t}`` (each costs
    ``O(t)`` additions, cheaper than the MH moves' Laplace terms).
    """
    n, N = _check_n_N(n, n_particles)
    return 2 * N * (n - 1)


def move_fraction(n: int, rejuvenate: int | None) -> float:
    """Exact fraction of the full sweep's latent MH moves made with subset size ``rejuvenate``.

    ``sum_t min(t, k) / sum_t t`` over ``t = 1, ..., n-1`` (independent of ``N``); 1 for ``None``
    or ``k >= n - 1``. For ``n = 1`` (no rejuvenation at all) the fraction is 1.
    """
    n = check_int("n", n, minimum=1)
    full = latent_move_count(n, 1)
    if full == 0:
        return 1.0
    return latent_move_count(n, 1, rejuvenate) / full


def exact_smc_likelihood_count(n: int, n_particles: int, event_steps: ArrayLike, n_mh: int = 5) -> int:
    """Laplace likelihood terms evaluated by :func:`dpbayes.smc.samplers.smc_exact`.

    Parameters
    ----------
    n : int
        Number of releases, ``>= 1``.
    n_particles : int
        Number of particles ``N``, ``>= 1``.
    event_steps : array_like of int
        Steps ``t`` (0-based, in ``[0, n)``) at which a resample-move event happened: those with
        ``ess[t] < ess_threshold * N`` in the result's ``ess`` trace.
    n_mh : int
        MH moves per event, ``>= 1``.

    Returns
    -------
    int
        ``N n`` incremental weights plus ``N n_mh (t + 1)`` terms per event at step ``t``.
    """
    n, N = _check_n_N(n, n_particles)
    n_mh = check_int("n_mh", n_mh, minimum=1)
    steps = np.asarray(event_steps)
    if steps.size and (steps.ndim != 1 or not np.issubdtype(steps.dtype, np.integer) or steps.min() < 0 or steps.max() >= n):
        raise ValueError(f"event_steps must be integer steps in [0, {n}), got {event_steps!r}")
    return int(N * n + N * n_mh * int((steps.astype(np.int64) + 1).sum()))
