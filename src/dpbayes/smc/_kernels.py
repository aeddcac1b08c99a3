"""Compiled kernels of chapter 3's hot loops (optional: ``pip install "dpbayes[fast]"``).

Two kernels: one rejuvenation step of the latent-``x`` SMC (:func:`latent_step`: the resampling
copy, both MH moves and the row sums of the Gibbs draws, with :func:`row_sq_dev_sums` for the
second Gibbs sum) and the exact log-likelihood of a truncated, privatised normal release
(:func:`loglik`, the core of :func:`dpbayes.smc.truncation.loglik_privatised_normal`, evaluated
millions of times by the exact SMC, the MCMC and the quadrature posterior).

The kernels are compiled with numba when it is installed; without it (or with
``DPBAYES_NO_NUMBA=1`` in the environment, or :func:`use_compiled` ``(False)``, the library's one switch in
:mod:`dpbayes.core.compiled`) every caller uses
its pure NumPy code, which is the reference the tests compare the kernels with. A kernel never
touches the random number generator: the caller draws the same arrays with the same
``numpy.random.Generator`` calls in the same order on both paths.

The two kernels are held to different standards, each the one its tests check:

* the latent step gives the **same bits** as the NumPy path (``tests/smc/test_samplers.py``
  compares whole runs of :func:`dpbayes.smc.samplers.smc_latent` on both paths with
  ``np.array_equal``): it repeats the NumPy path's floating-point operations in the same order (no
  fast-math, no contraction to fused multiply-adds), and its sums replicate NumPy's pairwise
  summation of ``float64`` (:func:`pairwise_sum`, compared with ``np.sum`` bit for bit);
* the compiled :func:`loglik` is **not** bitwise: the C library's ``exp``, ``log``, ``log1p`` and
  ``expm1`` replace NumPy's vectorised loops and may differ in the last bits. The tests
  (``tests/smc/test_truncation.py``) check a relative tolerance of ``1e-13`` on the chapter's cases
  (extreme means, scales and intervals) and of ``1e-12`` on 50,000 wide random arguments, with the
  same ``-inf`` and ``nan``; most results, not all, have the same bits. Runs that use it
  (:func:`dpbayes.smc.samplers.smc_exact`, above all adaptive ones, whose intervals feed back into
  the releases) can therefore differ from the NumPy path in the last bits of their results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "HAVE_NUMBA",
    "compiled_enabled",
    "use_compiled",
    "latent_step",
    "row_sq_dev_sums",
    "pairwise_sum",
    "loglik",
]

try:  # pragma: no cover - depends on the environment
    import numba
    from numba.extending import register_jitable

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None  # type: ignore[assignment]
    HAVE_NUMBA = False

from dpbayes.core.compiled import compile_kernel, compiled_enabled, use_compiled  # noqa: E402  (the library's one switch)

_F = TypeVar("_F", bound=Callable[..., Any])


def _jitable(func: _F) -> _F:
    """A helper callable from Python and, inlined, from the compiled kernels (numba's ``register_jitable``)."""
    return register_jitable(func) if HAVE_NUMBA else func


# --------------------------------------------------------------------------------------------
# NumPy's pairwise summation of float64, element by element
# --------------------------------------------------------------------------------------------
# numpy/_core/src/umath/loops_utils.h.src, DOUBLE_pairwise_sum (NumPy 2.x): fewer than 8 terms are
# added in order to -0.0; up to PW_BLOCKSIZE = 128 terms go to 8 accumulators (term i to accumulator
# i % 8, the first 8 terms as their initial values, the last n % 8 terms added in order after
# ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))); longer runs are split at n2 = n // 2 rounded
# down to a multiple of 8 and the halves' sums added. An add-reduction (``x.sum()``,
# ``x.sum(axis=1)`` of rows) adds that to its initial value 0.0. numba does not compile this
# recursion, so it runs on an explicit stack of at most 64 frames (the depth is below log2(n)).
_PW_BLOCKSIZE = 128
_PW_DEPTH = 64


@_jitable
def _pairwise_block(a: NDArray[np.float64], start: int, n: int, centre: float, square: bool) -> float:
    """NumPy's sum of the ``n <= 128`` terms ``a[start:start + n]`` (or of ``(a - centre)**2`` if ``square``)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            v = a[start + i]
            if square:
                v = (v - centre) * (v - centre)
            res += v
        return res
    r0 = a[start]
    r1 = a[start + 1]
    r2 = a[start + 2]
    r3 = a[start + 3]
    r4 = a[start + 4]
    r5 = a[start + 5]
    r6 = a[start + 6]
    r7 = a[start + 7]
    if square:
        r0 = (r0 - centre) * (r0 - centre)
        r1 = (r1 - centre) * (r1 - centre)
        r2 = (r2 - centre) * (r2 - centre)
        r3 = (r3 - centre) * (r3 - centre)
        r4 = (r4 - centre) * (r4 - centre)
        r5 = (r5 - centre) * (r5 - centre)
        r6 = (r6 - centre) * (r6 - centre)
        r7 = (r7 - centre) * (r7 - centre)
    end = n - n % 8
    if square:
        for i in range(start + 8, start + end, 8):
            v0 = a[i] - centre
            v1 = a[i + 1] - centre
            v2 = a[i + 2] - centre
            v3 = a[i + 3] - centre
            v4 = a[i + 4] - centre
            v5 = a[i + 5] - centre
            v6 = a[i + 6] - centre
            v7 = a[i + 7] - centre
            r0 += v0 * v0
            r1 += v1 * v1
            r2 += v2 * v2
            r3 += v3 * v3
            r4 += v4 * v4
            r5 += v5 * v5
            r6 += v6 * v6
            r7 += v7 * v7
    else:
        for i in range(start + 8, start + end, 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(start + end, start + n):
        v = a[i]
        if square:
            v = (v - centre) * (v - centre)
        res += v
    return res


@_jitable
def _pairwise(a: NDArray[np.float64], start: int, n: int, centre: float, square: bool) -> float:
    """``DOUBLE_pairwise_sum`` of ``a[start:start + n]`` (of ``(a - centre)**2`` if ``square``), bit for bit."""
    if n <= _PW_BLOCKSIZE:
        return _pairwise_block(a, start, n, centre, square)
    # the recursion, post-order: stage 0 descends left, 1 keeps the left sum and descends right, 2 adds
    f_start = np.empty(_PW_DEPTH, dtype=np.int64)
    f_len = np.empty(_PW_DEPTH, dtype=np.int64)
    f_stage = np.zeros(_PW_DEPTH, dtype=np.int64)
    f_left = np.empty(_PW_DEPTH, dtype=np.float64)
    top = 0
    f_start[0] = start
    f_len[0] = n
    ret = 0.0
    while top >= 0:
        s = f_start[top]
        k = f_len[top]
        if k <= _PW_BLOCKSIZE:
            ret = _pairwise_block(a, s, k, centre, square)
            top -= 1
            continue
        half = k // 2
        half -= half % 8
        stage = f_stage[top]
        if stage == 0:
            f_stage[top] = 1
            top += 1
            f_start[top] = s
            f_len[top] = half
            f_stage[top] = 0
        elif stage == 1:
            f_left[top] = ret
            f_stage[top] = 2
            top += 1
            f_start[top] = s + half
            f_len[top] = k - half
            f_stage[top] = 0
        else:
            ret = f_left[top] + ret
            top -= 1
    return ret


def _pairwise_sum_py(a: NDArray[np.float64]) -> float:
    """``np.sum(a)`` of a 1-D float64 array (any stride), bit for bit: 0.0 plus the pairwise sum."""
    return 0.0 + _pairwise(a, 0, a.shape[0], 0.0, False)


def _row_sq_dev_sums_py(x: NDArray[np.float64], t: int, centre: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``out[i] = ((x[i, :t] - centre[i]) ** 2).sum()`` for every row, NumPy's bits, no temporaries."""
    for i in range(x.shape[0]):
        out[i] = 0.0 + _pairwise(x[i], 0, t, centre[i], True)


# --------------------------------------------------------------------------------------------
# one rejuvenation step of the latent-x SMC
# --------------------------------------------------------------------------------------------
@_jitable
def _mh_moves(
    x: float, lap: float, mi: float, step: float, two_var: float, s: float, z_rw: float, logu_rw: float,
    z_ind: float, logu_ind: float, lo: float, hi: float, yy: float, sl: float,
) -> tuple[float, float, int]:
    """Both MH moves of one latent value ``x`` (cached ``lap``): the new value, its ``lap``, the acceptances."""
    accepted = 0
    # (i) random walk
    prop = x + step * z_rw
    c = min(max(prop, lo), hi)
    prop_lap = -sl * abs(yy - c)
    a = x - mi
    b = prop - mi
    if logu_rw < (a * a - b * b) / two_var + prop_lap - lap:
        x = prop
        lap = prop_lap
        accepted += 1
    # (ii) independence proposal from N(mu, sigma^2)
    prop = mi + s * z_ind
    c = min(max(prop, lo), hi)
    prop_lap = -sl * abs(yy - c)
    if logu_ind < prop_lap - lap:
        x = prop
        lap = prop_lap
        accepted += 1
    return x, lap, accepted


def _latent_step_py(
    src: NDArray[np.float64],
    src_lap: NDArray[np.float64],
    dst: NDArray[np.float64],
    dst_lap: NDArray[np.float64],
    parent: NDArray[np.int64],
    t: int,
    cols: NDArray[np.int64],
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
    row_sum: NDArray[np.float64],
) -> int:
    """The resampling copy, both MH moves of :func:`dpbayes.smc.samplers.smc_latent`'s sweep and the row sums.

    Double buffering: particle ``i``'s latent row is read from row ``parent[i]`` of ``src`` (the
    NumPy path's ``latent[:, :t] = latent[idx, :t]``) and written, moved, to row ``i`` of ``dst``;
    the caller then swaps the buffers, so no separate copy of the ``N x t`` array is made. Columns
    ``cols[j]`` (all of ``0 .. t-1``, or the sorted subset of ``rejuvenate``) are moved, element by
    element with the NumPy path's operations: (i) random walk ``prop = x + (rw_scale * sd) * z``,
    accepted when ``log u < ((x - mu)^2 - (prop - mu)^2) / (2 sigma^2) + lap(prop) - lap(x)``;
    (ii) independence proposal ``prop = mu + sd * z``, accepted when ``log u < lap(prop) - lap(x)``,
    with ``lap(v) = -sl * |y - clip(v, lo, hi)|``; the other columns are copied. Finally
    ``row_sum[i] = dst[i, :t].sum()`` with NumPy's pairwise summation (same bits), while the row is
    in the cache. The result is bit for bit the NumPy path's (tests/smc/test_samplers.py).

    Parameters
    ----------
    src, src_lap : ndarray, shape (N, n)
        Latent values and their cached Laplace log-likelihoods before resampling (read only).
    dst, dst_lap : ndarray, shape (N, n)
        Their first ``t`` columns receive the resampled, moved values (other columns untouched).
    parent : ndarray of int64, shape (N,)
        Ancestor index of each particle (systematic resampling).
    t : int
        Number of latent values of each particle.
    cols : ndarray of int64, shape (m,)
        Increasing columns to move (``m == t`` means all of them, ``cols = 0 .. t-1``).
    z_rw, logu_rw, z_ind, logu_ind : ndarray, shape (N, m)
        Standard normal draws and logs of uniform draws of the two moves.
    mu, sd, sigma2 : ndarray, shape (N,)
        Each (resampled) particle's ``mu``, ``sigma`` and ``sigma^2``.
    lo, hi, yy, sl : ndarray, shape (m,)
        Intervals, releases and Laplace slopes ``eps / (r - l)`` of the moved individuals.
    rw_scale : float
        Random-walk scale in units of ``sigma``.
    row_sum : ndarray, shape (N,)
        Receives ``dst[i, :t].sum()``.

    Returns
    -------
    int
        Number of accepted proposals (both moves).
    """
    n_part = dst.shape[0]
    m = cols.shape[0]
    accepted = 0
    for i in range(n_part):
        p = parent[i]
        if m < t:  # a subset is moved: the whole row first
            for k in range(t):
                dst[i, k] = src[p, k]
                dst_lap[i, k] = src_lap[p, k]
        mi = mu[i]
        step = rw_scale * sd[i]
        two_var = 2.0 * sigma2[i]
        s = sd[i]
        if m == t:  # every column (cols is 0 .. t-1): direct indices, which the compiler handles much better
            for k in range(t):
                x, lap, acc = _mh_moves(src[p, k], src_lap[p, k], mi, step, two_var, s, z_rw[i, k], logu_rw[i, k],
                                        z_ind[i, k], logu_ind[i, k], lo[k], hi[k], yy[k], sl[k])
                dst[i, k] = x
                dst_lap[i, k] = lap
                accepted += acc
        else:
            for j in range(m):
                k = cols[j]
                x, lap, acc = _mh_moves(src[p, k], src_lap[p, k], mi, step, two_var, s, z_rw[i, j], logu_rw[i, j],
                                        z_ind[i, j], logu_ind[i, j], lo[j], hi[j], yy[j], sl[j])
                dst[i, k] = x
                dst_lap[i, k] = lap
                accepted += acc
        row_sum[i] = 0.0 + _pairwise(dst[i], 0, t, 0.0, False)
    return accepted


_compiled: dict[str, Any] = {}  # the vectorised loglik (built by _build_loglik, not by compile_kernel)


def _kernel(name: str, func: Callable[..., Any]) -> Any:
    return compile_kernel(name, func)


def latent_step(*args: Any) -> int:
    """Compiled :func:`_latent_step_py` (same arguments and result); requires numba."""
    return int(_kernel("latent_step", _latent_step_py)(*args))


def row_sq_dev_sums(x: NDArray[np.float64], t: int, centre: NDArray[np.float64]) -> NDArray[np.float64]:
    """``((x[:, :t] - centre[:, None]) ** 2).sum(axis=1)``, the same bits, without the ``N x t`` temporary; requires numba."""
    out = np.empty(x.shape[0])
    _kernel("row_sq_dev_sums", _row_sq_dev_sums_py)(x, t, centre, out)
    return out


def pairwise_sum(a: NDArray[np.float64]) -> float:
    """Compiled ``np.sum`` of a 1-D float64 array (any stride), the same bits; requires numba."""
    return float(_kernel("pairwise_sum", _pairwise_sum_py)(a))


# --------------------------------------------------------------------------------------------
# the exact log-likelihood of one release, element by element
# --------------------------------------------------------------------------------------------
# The same formulas as dpbayes.smc.truncation._loglik (and its _log_ndtr, _log1mexp and
# _log_tilted_normal_mass), written for one element: the branches are taken per element instead of
# through masks. erfcx and erf are SciPy's own C functions (scipy.special.cython_special), so the
# special functions give the same bits; exp, log, log1p and expm1 come from the C library instead of
# NumPy's vectorised loops, which may differ in the last bits: not bitwise, the tests bound the relative
# difference (1e-13 on the chapter's cases, 1e-12 on wide random arguments).
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

    Not bitwise: the C library's ``exp`` and ``log`` replace NumPy's, so the result may differ from the
    NumPy path in the last bits. The tests check a relative tolerance of ``1e-13`` on extreme means,
    scales and intervals (the same ``-inf`` and ``nan``) and of ``1e-12`` on 50,000 wide random
    arguments.
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
