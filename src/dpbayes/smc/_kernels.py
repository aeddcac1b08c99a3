"""Compiled kernels of chapter 3's hot loops (optional: ``pip install "dpbayes[fast]"``).

Two kernels: the latent-``x`` SMC's MH sweep (:func:`latent_mh_sweep`) and the exact log-likelihood
of a truncated, privatised normal release (:func:`loglik`, the core of
:func:`dpbayes.smc.truncation.loglik_privatised_normal`, evaluated millions of times by the exact SMC,
the MCMC and the quadrature posterior).

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

__all__ = ["HAVE_NUMBA", "compiled_enabled", "use_compiled", "latent_mh_sweep", "loglik"]

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
    """Both MH moves of :func:`dpbayes.smc.samplers.smc_latent`'s sweep on every ``(particle, x_k)``, in place.

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


# --------------------------------------------------------------------------------------------
# the exact log-likelihood of one release, element by element
# --------------------------------------------------------------------------------------------
# The same formulas as dpbayes.smc.truncation._loglik (and its _log_ndtr, _log1mexp and
# _log_tilted_normal_mass), written for one element: the branches are taken per element instead of
# through masks. erfcx and erf are SciPy's own C functions (scipy.special.cython_special), so the
# special functions give the same bits; exp, log, log1p and expm1 come from the C library instead of
# NumPy's vectorised loops, which may differ in the last bit (the tests bound the difference).
_LOG2 = float(np.log(2.0))
_SQRT2 = float(np.sqrt(2.0))


def _build_loglik() -> Any:
    import ctypes

    from numba.extending import get_cython_function_address

    # the double (not complex) specialisations of SciPy's fused erf and erfcx
    proto = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)
    erfcx = proto(get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erfcx"))
    erf = proto(get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erf"))
    # not cached on disk: the compiled code holds the addresses of SciPy's C functions in this process
    jit = numba.njit(nogil=True, fastmath=False, error_model="numpy")

    @jit
    def log_ndtr(x: float) -> float:
        e = erfcx(abs(x) / _SQRT2)
        half_sq = 0.5 * x * x
        if x < 0:
            return np.log(0.5 * e) - half_sq
        return np.log1p(-0.5 * e * np.exp(-half_sq))

    @jit
    def log1mexp(x: float) -> float:
        if x > 0.0:
            x = 0.0
        if x > -_LOG2:
            return np.log(-np.expm1(x))
        return np.log1p(-np.exp(x))

    @jit
    def tilted(lo: float, hi: float, d: float, z: float) -> float:
        w_lo = lo - z
        w_hi = hi - z
        if w_hi <= 0 or w_lo >= 0:
            log_e_lo = np.log(erfcx(abs(w_lo) / _SQRT2))
            log_e_hi = np.log(erfcx(abs(w_hi) / _SQRT2))
            spread = 0.5 * (hi - lo) * (hi + lo - 2.0 * z)
            if w_hi <= 0:
                return log_e_hi - _LOG2 - 0.5 * hi * hi - z * (d - hi) + log1mexp(log_e_lo - log_e_hi + spread)
            return log_e_lo - _LOG2 - 0.5 * lo * lo - z * (d - lo) + log1mexp(log_e_hi - log_e_lo - spread)
        return np.log(0.5 * (erf(w_hi / _SQRT2) - erf(w_lo / _SQRT2))) + z * (0.5 * z - d)

    @numba.vectorize(["float64(float64, float64, float64, float64, float64, float64)"], nopython=True)
    def loglik_kernel(y: float, mu: float, sigma: float, l: float, r: float, eps: float) -> float:
        beta = (r - l) / eps
        z = sigma / beta
        alpha = (l - mu) / sigma
        rho = (r - mu) / sigma
        d = (y - mu) / sigma
        dc = min(max(d, alpha), rho) if d == d else d  # np.clip, NaN kept
        log_atom_l = log_ndtr(alpha) - abs(y - l) / beta
        log_atom_r = log_ndtr(-rho) - abs(y - r) / beta
        log_below = tilted(alpha, dc, d, z)
        log_above = tilted(-rho, -dc, -d, z)
        top = max(max(log_atom_l, log_atom_r), max(log_below, log_above))
        total = np.exp(log_atom_l - top) + np.exp(log_atom_r - top) + np.exp(log_below - top) + np.exp(log_above - top)
        return top + np.log(total) - np.log(2.0 * beta)

    return loglik_kernel


def loglik(y: Any, mu: Any, sigma: Any, l: Any, r: Any, eps: Any) -> NDArray[np.float64]:
    """Compiled ``dpbayes.smc.truncation._loglik`` (same arguments, broadcasting and result shape); requires numba.

    Agrees with the NumPy path to a few units in the last place (the C library's ``exp`` and ``log``
    against NumPy's); the tests compare the two on wide random and extreme arguments.
    """
    kernel = _compiled.get("loglik")
    if kernel is None:
        if numba is None:  # pragma: no cover - callers check compiled_enabled() first
            raise RuntimeError("the compiled kernels need numba: pip install 'dpbayes[fast]'")
        kernel = _build_loglik()
        _compiled["loglik"] = kernel
    # -inf and nan arise as in the NumPy path (which silences the same floating-point flags)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = kernel(y, mu, sigma, l, r, eps)
    # the ufunc's array result is new and writeable; scalars come back as a NumPy scalar, which the NumPy
    # path returns as a 0-d array (no copy of the array results on this hot path)
    return out if isinstance(out, np.ndarray) else np.array(out, dtype=float)
