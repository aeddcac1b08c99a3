"""Loss matrices for finite Bayes estimation problems.

A loss matrix ``L`` has one row per parameter value and one column per possible estimate:
``L[j, k] = loss(theta_j, estimate_k)``, as in the matrix ``L`` of the UBaPP paper
(Lakshminarayanan & Rojas, eq. (11)), generalised to an estimate grid that may differ from the
parameter grid.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.validation import check_choice, check_grid

__all__ = ["LOSSES", "squared_loss_matrix", "absolute_loss_matrix", "loss_matrix"]

LOSSES = ("squared", "absolute")


def _grids(theta_grid: ArrayLike, estimate_grid: ArrayLike | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    theta = check_grid("theta_grid", theta_grid)
    est = theta if estimate_grid is None else check_grid("estimate_grid", estimate_grid)
    return theta, est


def squared_loss_matrix(theta_grid: ArrayLike, estimate_grid: ArrayLike | None = None) -> NDArray[np.float64]:
    """``L[j, k] = (theta_j - estimate_k)**2`` (the paper's Section 5.1 loss).

    Parameters
    ----------
    theta_grid : array_like, shape (n_theta,)
        Strictly increasing parameter values.
    estimate_grid : array_like, shape (n_est,), optional
        Strictly increasing estimate values; defaults to ``theta_grid`` (square ``L``).
    """
    theta, est = _grids(theta_grid, estimate_grid)
    return (theta[:, None] - est[None, :]) ** 2


def absolute_loss_matrix(theta_grid: ArrayLike, estimate_grid: ArrayLike | None = None) -> NDArray[np.float64]:
    """``L[j, k] = |theta_j - estimate_k|`` (absolute-error loss)."""
    theta, est = _grids(theta_grid, estimate_grid)
    return np.abs(theta[:, None] - est[None, :])


def loss_matrix(name: str, theta_grid: ArrayLike, estimate_grid: ArrayLike | None = None) -> NDArray[np.float64]:
    """Loss matrix by name: ``"squared"`` or ``"absolute"``."""
    check_choice("loss", name, LOSSES)
    if name == "squared":
        return squared_loss_matrix(theta_grid, estimate_grid)
    return absolute_loss_matrix(theta_grid, estimate_grid)
