"""The C allocator's thresholds, raised before a sweep of many blocks of temporaries.

glibc's ``malloc`` serves a request above its *mmap threshold* with a fresh ``mmap`` and returns the
free memory at the top of its heap to the system once that exceeds the *trim threshold*; both start
small (128 KiB and twice that) and rise when a block larger than the mmap threshold is freed: to
that block's size, and twice it (``mallopt(3)``, "dynamic mmap threshold", up to 32 MiB on 64-bit
systems). A sweep whose blocks each allocate and free more temporaries than twice its largest one
therefore gives its memory back after every block and faults it in again on the next (the absolute-
loss remap at ``n = 10^7``: a first call 0.86 [0.82, 0.90] times as long after :func:`warm_allocator`,
a peak of 293-294 MB against 286-294; 10 interleaved pairs of fresh processes on 2 cores,
``benchmarks/bench_allocator.py``, record ``benchmarks/results/release-absolute-allocator.json``).

:func:`warm_allocator` frees one untouched block of ``WARM_BYTES``: the state a process reaches by
itself once it has freed any array of that size, with the dynamic adjustment still on (no
``mallopt``). Elsewhere (another C library) it allocates and frees that block, and nothing else. Where the
environment fixes glibc's thresholds (any of ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_MAX_`` or their ``GLIBC_TUNABLES``), glibc adapts none of them and the
warm-up changes nothing: it respects the setting rather than overriding it by ``mallopt``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["WARM_BYTES", "warm_allocator"]

#: Size of the block :func:`warm_allocator` frees: glibc's thresholds become 8 MiB (mmap) and 16 MiB (trim).
WARM_BYTES = 8 << 20


def warm_allocator(nbytes: int = WARM_BYTES) -> None:
    """Free one block of ``nbytes`` at once, so that glibc's dynamic thresholds rise to it before a sweep.

    The block is never written, so no page of it is faulted in: one ``mmap`` and one ``munmap``.

    Parameters
    ----------
    nbytes : int
        Size of the block (glibc adapts to blocks of at most 32 MiB).
    """
    block = np.empty(max(int(nbytes), 0) // 8)
    del block
