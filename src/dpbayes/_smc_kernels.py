"""Compiled kernels of the SMC samplers' hot loops (optional: ``pip install "dpbayes[fast]"``).

The kernels are compiled with numba when it is installed; without it (or with
``DPBAYES_NO_NUMBA=1`` in the environment, or :func:`use_compiled` ``(False)``) every caller uses
its pure NumPy code, which is the reference the tests compare the kernels with. A kernel never
touches the random number generator: the caller draws the same arrays with the same
``numpy.random.Generator`` calls in the same order on both paths, and the kernel repeats the NumPy
path's floating-point operations in the same order (no fast-math, no contraction to fused
multiply-adds), so both paths give the same bits.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["HAVE_NUMBA", "compiled_enabled", "use_compiled", "latent_mh_sweep"]

try:  # pragma: no cover - depends on the environment
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None  # type: ignore[assignment]
    HAVE_NUMBA = False

_enabled = HAVE_NUMBA and os.environ.get("DPBAYES_NO_NUMBA", "") in ("", "0")


def compiled_enabled() -> bool:
    """Whether the samplers use the compiled kernels (numba installed and not switched off)."""
    return _enabled


def use_compiled(flag: bool) -> bool:
    """Switch the compiled kernels on or off; returns the previous setting.

    Parameters
    ----------
    flag : bool
        ``True`` to use the kernels (ignored without numba), ``False`` for the NumPy path.

    Returns
    -------
    bool
        The setting before the call.
    """
    global _enabled
    previous = _enabled
    _enabled = bool(flag) and HAVE_NUMBA
    return previous


def _latent_mh_sweep_py(
    cur: NDArray[np.float64],
    cur_lap: NDArray[np.float64],
    z_rw: NDArray[np.float64],
    logu_rw: NDArray[np.float64],
    z_ind: NDArray[np.float64],
    logu_ind: NDArray[np.float64],
    mu: NDArray[np.float64],
    sd: NDArray[np.float64],
    sigma2: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    yy: NDArray[np.float64],
    sl: NDArray[np.float64],
    rw_scale: float,
) -> int:
    """Both MH moves of :func:`dpbayes.smc.smc_latent`'s sweep on every ``(particle, x_k)``, in place.

    Element by element the same operations as the NumPy path: (i) random walk
    ``prop = x + (rw_scale * sd) * z``, accepted when
    ``log u < ((x - mu)^2 - (prop - mu)^2) / (2 sigma^2) + lap(prop) - lap(x)``; (ii) independence
    proposal ``prop = mu + sd * z``, accepted when ``log u < lap(prop) - lap(x)``, with
    ``lap(v) = -sl * |y - clip(v, lo, hi)|``.

    Parameters
    ----------
    cur, cur_lap : ndarray, shape (N, t)
        Latent values and their cached Laplace log-likelihoods; updated in place.
    z_rw, logu_rw, z_ind, logu_ind : ndarray, shape (N, t)
        Standard normal draws and logs of uniform draws of the two moves.
    mu, sd, sigma2 : ndarray, shape (N,)
        Each particle's ``mu``, ``sigma`` and ``sigma^2``.
    lo, hi, yy, sl : ndarray, shape (t,)
        Intervals, releases and Laplace slopes ``eps / (r - l)`` of the individuals.
    rw_scale : float
        Random-walk scale in units of ``sigma``.

    Returns
    -------
    int
        Number of accepted proposals (both moves).
    """
    n_part, t = cur.shape
    accepted = 0
    for i in range(n_part):
        m = mu[i]
        step = rw_scale * sd[i]
        two_var = 2.0 * sigma2[i]
        s = sd[i]
        for k in range(t):
            x = cur[i, k]
            lap = cur_lap[i, k]
            lo_k = lo[k]
            hi_k = hi[k]
            # (i) random walk
            prop = x + step * z_rw[i, k]
            c = min(max(prop, lo_k), hi_k)
            prop_lap = -sl[k] * abs(yy[k] - c)
            a = x - m
            b = prop - m
            if logu_rw[i, k] < (a * a - b * b) / two_var + prop_lap - lap:
                x = prop
                lap = prop_lap
                accepted += 1
            # (ii) independence proposal from N(mu, sigma^2)
            prop = m + s * z_ind[i, k]
            c = min(max(prop, lo_k), hi_k)
            prop_lap = -sl[k] * abs(yy[k] - c)
            if logu_ind[i, k] < prop_lap - lap:
                x = prop
                lap = prop_lap
                accepted += 1
            cur[i, k] = x
            cur_lap[i, k] = lap
    return accepted


_compiled: dict[str, Any] = {}


def latent_mh_sweep(*args: Any) -> int:
    """Compiled :func:`_latent_mh_sweep_py` (same arguments and result); requires numba."""
    kernel = _compiled.get("latent_mh_sweep")
    if kernel is None:
        if numba is None:  # pragma: no cover - callers check compiled_enabled() first
            raise RuntimeError("the compiled kernels need numba: pip install 'dpbayes[fast]'")
        kernel = numba.njit(cache=True, nogil=True, fastmath=False)(_latent_mh_sweep_py)
        _compiled["latent_mh_sweep"] = kernel
    return int(kernel(*args))
