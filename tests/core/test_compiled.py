"""The switch of the compiled kernels and the core's kernel (``dpbayes.core.compiled``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from dpbayes.core import compiled, geometric
from dpbayes.smc import _kernels as smc_kernels

needs_numba = pytest.mark.skipif(not compiled.HAVE_NUMBA, reason="numba not installed")


def _lfilter_chain(v: np.ndarray, a: float, state: np.ndarray) -> list[np.ndarray]:
    den = [1.0, -a]
    out0, z = lfilter([1.0], den, v, zi=state[0:1])
    state[0] = z[0]
    out = [out0]
    if state.size > 1:
        out1, z = lfilter([0.0, a], den, out0, zi=state[1:2])
        state[1] = z[0]
        out.append(out1)
    if state.size > 2:
        out2, z = lfilter([0.0, a], den, 2.0 * out1 + out0, zi=state[2:3])
        state[2] = z[0]
        out.append(out2)
    return out


@needs_numba
@pytest.mark.parametrize("moments", [0, 1, 2])
@pytest.mark.parametrize("length", [1, 7, 1000])  # (a chunk is never empty)
def test_the_compiled_chain_is_lfilters_bits(moments, length):
    rng = np.random.default_rng(length + moments)
    for a in (np.exp(-0.01), np.exp(-1.0), np.exp(-15.0)):
        v = rng.random(length) ** 3
        start = rng.random(moments + 1) * 5.0
        ref_state, got_state = start.copy(), start.copy()
        ref = _lfilter_chain(v, a, ref_state)
        got = compiled.first_order_chain(v[::-1][::-1], a, got_state)
        for r in range(moments + 1):
            assert got[r].tobytes() == ref[r].tobytes(), (a, r)
        assert got_state.tobytes() == ref_state.tobytes()


@needs_numba
def test_the_bit_comparison_can_fail():
    """A kernel one ulp off in its factor is told apart from lfilter's chain."""
    rng = np.random.default_rng(5)
    v, a = rng.random(500), float(np.exp(-0.3))
    ref = _lfilter_chain(v, a, np.zeros(3))
    shifted = compiled.first_order_chain(v, float(np.nextafter(a, 1.0)), np.zeros(3))
    assert all(s.tobytes() != r.tobytes() for s, r in zip(shifted, ref))


@pytest.mark.parametrize("use", [True, False])
def test_the_chunked_kernel_sums_are_the_same_bits_on_both_paths(use):
    previous = compiled.use_compiled(use)
    try:
        assert compiled.compiled_enabled() == (use and compiled.HAVE_NUMBA)
        w = np.random.default_rng(1).random(3001) ** 4
        whole = geometric.geometric_kernel_sums(w, 0.2, 2)
        pieces = list(geometric.geometric_kernel_sums_by_chunk(lambda lo, hi: w[lo:hi], 3000, 0.2, 2, 700))
        for r in range(3):
            assert np.concatenate([s[r] for _, _, s in pieces]).tobytes() == whole[r].tobytes()
    finally:
        compiled.use_compiled(previous)


def test_one_switch_for_every_kernel():
    """Chapter 3's kernels follow the core's switch: turning it off there turns them off."""
    previous = compiled.use_compiled(False)
    try:
        assert not smc_kernels.compiled_enabled()
        assert smc_kernels.use_compiled is compiled.use_compiled
    finally:
        compiled.use_compiled(previous)
    assert smc_kernels.compiled_enabled() == compiled.compiled_enabled()
