"""The switch for the optional compiled kernels (numba: ``pip install "dpbayes[fast]"``), and the core's own kernel.

Every compiled kernel of the library repeats a NumPy (or SciPy) reference operation for operation, and
its callers use the reference when numba is missing, when ``DPBAYES_NO_NUMBA=1`` is set in the
environment, or after :func:`use_compiled` ``(False)``. One switch serves all of them: this module's
(``dpbayes.smc._kernels`` holds chapter 3's kernels and uses it too).

The core's kernel is :func:`first_order_chain`, the chained first-order recursions of the geometric
kernel sums (:func:`dpbayes.core.geometric.geometric_kernel_sums_by_chunk`), which SciPy's ``lfilter``
runs one filter at a time at about 5 ns a term. It gives the **same bits** as the ``lfilter`` chain
(``tests/core/test_compiled.py``): each output is ``x + z`` and each new state ``a * y`` (or
``a * x + a * y``), in the order of ``lfilter``'s direct form II transposed, without fused multiply-adds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["HAVE_NUMBA", "compiled_enabled", "use_compiled", "compile_kernel", "first_order_chain"]

try:  # pragma: no cover - depends on the environment
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None  # type: ignore[assignment]
    HAVE_NUMBA = False

_enabled = HAVE_NUMBA and os.environ.get("DPBAYES_NO_NUMBA", "") in ("", "0")
_compiled: dict[str, Any] = {}


def compiled_enabled() -> bool:
    """Whether the library uses its compiled kernels (numba installed and not switched off)."""
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


def compile_kernel(name: str, func: Callable[..., Any]) -> Any:
    """``func`` compiled once by numba (no fast-math: the same floating-point operations); requires numba."""
    kernel = _compiled.get(name)
    if kernel is None:
        if numba is None:  # pragma: no cover - callers check compiled_enabled() first
            raise RuntimeError("the compiled kernels need numba: pip install 'dpbayes[fast]'")
        kernel = numba.njit(cache=True, nogil=True, fastmath=False)(func)
        _compiled[name] = kernel
    return kernel


def _first_order_chain_py(v: NDArray[np.float64], a: float, state: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``out[r]`` of the chain ``lfilter([1], [1, -a], v)``, then ``lfilter([0, a], [1, -a], .)`` of the previous
    output (``r = 1``) and of ``2 out[1] + out[0]`` (``r = 2``), each continuing from ``state[r]`` and leaving
    its final state there (``lfilter``'s ``zi``/``zf``), for ``r < len(state)``."""
    m = state.shape[0]
    z0 = state[0]
    z1 = state[1] if m > 1 else 0.0
    z2 = state[2] if m > 2 else 0.0
    for i in range(v.shape[0]):
        y0 = 1.0 * v[i] + z0
        z0 = 0.0 * v[i] - -a * y0  # lfilter: b[1] x - a[1] y with b = [1], a = [1, -a] (b[1] = 0)
        out[0, i] = y0
        if m > 1:
            y1 = 0.0 * y0 + z1
            z1 = a * y0 - -a * y1
            out[1, i] = y1
            if m > 2:
                x2 = 2.0 * y1 + y0
                y2 = 0.0 * x2 + z2
                z2 = a * x2 - -a * y2
                out[2, i] = y2
    state[0] = z0
    if m > 1:
        state[1] = z1
    if m > 2:
        state[2] = z2


def first_order_chain(v: NDArray[np.float64], a: float, state: NDArray[np.float64]) -> NDArray[np.float64]:
    """The chained recursions of ``lfilter`` on ``v``, compiled: the outputs, shape ``(len(state), len(v))``.

    ``out[0]`` is ``lfilter([1], [1, -a], v)``; ``out[1]`` is ``lfilter([0, a], [1, -a], out[0])`` and ``out[2]``
    the same filter of ``2 out[1] + out[0]``, for as many rows as ``state`` has; each continues from ``state[r]``
    (``lfilter``'s ``zi``) and leaves its final state there (``zf``). Requires numba.
    """
    out = np.empty((state.shape[0], v.shape[0]))
    compile_kernel("first_order_chain", _first_order_chain_py)(np.ascontiguousarray(v, dtype=np.float64), float(a), state, out)
    return out
