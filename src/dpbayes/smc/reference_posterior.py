"""A reference posterior whose accuracy is measured: quadrature refined until its moments settle (chapter 3).

The samplers of chapter 3 are checked against the exact posterior of the releases they saw, computed by
quadrature (:func:`dpbayes.smc.mcmc.quadrature_posterior`). At small epsilon that posterior is ridge-shaped and
heavy-tailed, and one grid size can be far off. :func:`~dpbayes.smc.reference_posterior.reference_posterior`
refines the grid (``n_grid`` -> ``2 n_grid - 1``, the old points kept) until the posterior moments of two
successive grids agree within a stated tolerance, and reports non-convergence otherwise, so a sampler check
never rests on an unmeasured reference. Beyond the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbayes.core.validation import check_int, check_positive
from dpbayes.smc.mcmc import QuadraturePosterior, quadrature_posterior
from dpbayes.smc.samplers import NormalInvGammaPrior

__all__ = ["MOMENTS", "ReferencePosterior", "moment_changes", "reference_posterior"]

#: The moments whose settling is checked: the mean and sd of ``mu`` (changes in posterior sds of ``mu``) and the
#: mean of ``sigma`` (relative change). The sd of ``sigma`` is not among them: under the paper's inverse-gamma prior
#: it can be infinite, and no grid settles it.
MOMENTS = ("mean_mu", "sd_mu", "mean_sigma")


@dataclass(frozen=True)
class ReferencePosterior:
    """The finest quadrature posterior reached, and how far its moments moved in the last refinement."""

    #: the posterior on the finest grid computed
    posterior: QuadraturePosterior
    #: ``n_grid`` of each grid computed, coarsest first
    n_grids: tuple[int, ...]
    #: largest change of :data:`~dpbayes.smc.reference_posterior.MOMENTS` between the last two grids (see
    #: :func:`~dpbayes.smc.reference_posterior.moment_changes`)
    last_change: float
    #: the tolerance asked for
    tol: float
    #: ``last_change <= tol``
    converged: bool


def moment_changes(coarse: QuadraturePosterior, fine: QuadraturePosterior) -> dict[str, float]:
    """How far the moments moved from ``coarse`` to ``fine``: the mean and sd of ``mu`` in units of ``fine``'s sd of
    ``mu``, the mean of ``sigma`` relative to ``fine``'s."""
    return {
        "mean_mu": abs(fine.mean_mu - coarse.mean_mu) / fine.sd_mu,
        "sd_mu": abs(fine.sd_mu - coarse.sd_mu) / fine.sd_mu,
        "mean_sigma": abs(fine.mean_sigma - coarse.mean_sigma) / fine.mean_sigma,
    }


def reference_posterior(
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    *,
    tol: float = 0.02,
    n_grid: int = 25,
    max_refinements: int = 3,
) -> ReferencePosterior:
    """Quadrature posterior of the releases, the grid refined until the moments settle within ``tol``.

    Starting from ``n_grid`` points per axis, the grid of :func:`dpbayes.smc.mcmc.quadrature_posterior` is refined
    to ``2 n_grid - 1`` (half the spacing, the same span) until the largest change of
    :data:`~dpbayes.smc.reference_posterior.MOMENTS` between two successive grids
    (:func:`~dpbayes.smc.reference_posterior.moment_changes`) is at most ``tol``, or ``max_refinements``
    refinements were made; ``converged`` says which. The likelihood is the paper's eq. (6) marginal in closed
    form, as in :func:`dpbayes.smc.mcmc.quadrature_posterior`.

    Parameters
    ----------
    y, lower, upper : array_like, shape (n,)
        Releases and the interval of each (scalars broadcast).
    eps : float
        Privacy parameter of the releases.
    prior : NormalInvGammaPrior
        Prior of ``(mu, sigma^2)`` (paper Section 4.1 by default).
    tol : float
        Largest change allowed between the last two grids, ``> 0`` (0.02: two hundredths of a posterior sd
        of ``mu``, 2 % of the posterior mean of ``sigma``).
    n_grid : int
        Points per axis of the first grid, ``>= 5``.
    max_refinements : int
        Refinements allowed, ``>= 1``.

    Returns
    -------
    ReferencePosterior
    """
    tol = float(check_positive("tol", tol))
    n_grid = check_int("n_grid", n_grid, minimum=5)
    max_refinements = check_int("max_refinements", max_refinements, minimum=1, maximum=6)
    grids = [n_grid]
    coarse = quadrature_posterior(y, lower, upper, eps, prior, n_grid=n_grid)
    change = np.inf
    for _ in range(max_refinements):
        grids.append(2 * grids[-1] - 1)
        fine = quadrature_posterior(y, lower, upper, eps, prior, n_grid=grids[-1])
        change = max(moment_changes(coarse, fine).values())
        coarse = fine
        if change <= tol:
            break
    return ReferencePosterior(posterior=coarse, n_grids=tuple(grids), last_change=float(change), tol=tol,
                              converged=bool(change <= tol))
