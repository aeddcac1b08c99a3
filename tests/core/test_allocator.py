"""Tests for dpbayes.core.allocator: glibc's dynamic thresholds raised by one freed block.

The effect exists only while glibc adapts its thresholds, which it stops doing for the whole process once
any of them is set (``mallopt(3)``: ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_MMAP_MAX_`` or their ``GLIBC_TUNABLES``). The children here therefore run without those variables, and a
separate child first checks, with glibc's own counters, that its thresholds do adapt there.
"""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

_CHURN = textwrap.dedent("""
    import resource
    import numpy as np
    from dpbayes.core.allocator import warm_allocator

    def faults_of_churn():
        # blocks of 4 temporaries of 3 MB (written, then all freed): 12 MB back at the top of the heap
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20):
            arrays = [np.ones(3 << 17) for _ in range(4)]
            del arrays
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    {warm}
    print(faults_of_churn())
""")

# Whether a freed 8 MiB mmapped block raises glibc's mmap threshold above 4 MiB, read off mallinfo2's count of
# mmapped blocks (glibc >= 2.33), independently of dpbayes.
_ADAPTS = textwrap.dedent("""
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
    libc.mallinfo2.restype = Info

    def mmapped(size):
        before = libc.mallinfo2().hblks
        block = libc.malloc(size)
        answer = libc.mallinfo2().hblks > before
        libc.free(block)
        return answer

    first = mmapped(4 << 20)
    mmapped(8 << 20)
    print(first, mmapped(4 << 20))
""")

_MALLOC_SETTINGS = ("MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_",
                    "GLIBC_TUNABLES")


def _environment(**settings: str) -> dict[str, str]:
    """This process's environment without glibc's malloc settings, plus ``settings``."""
    env = {key: value for key, value in os.environ.items() if key not in _MALLOC_SETTINGS}
    return env | settings


def _child(code: str, env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.strip()


def _faults(warm: bool, env: dict[str, str]) -> int:
    return int(_child(_CHURN.format(warm="warm_allocator()" if warm else ""), env))


glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")


@glibc_only
def test_warm_allocator_keeps_freed_blocks_in_the_heap():
    """In a fresh process, blocks of temporaries larger than twice their largest array fault their pages in
    again after every block (the heap top is trimmed); after warm_allocator only the first block's are faulted in
    (measured: about 61,000 faults, 20 blocks of 12 MB, against 3,072, one block's)."""
    env = _environment()
    first_mmapped, later_mmapped = _child(_ADAPTS, env).split()
    assert first_mmapped == "True"  # glibc's initial threshold (128 KiB) sends 4 MiB to mmap
    if later_mmapped == "True":
        pytest.skip("glibc keeps its thresholds fixed in this process although no MALLOC_* setting is in its "
                    "environment (a preloaded library or mallopt call)")
    cold, warm = _faults(False, env), _faults(True, env)
    assert cold > 100  # 20 blocks faulted in again: about 3,000 pages each (4 KiB), or 6 (2 MiB transparent huge pages)
    assert warm < cold / 10


@glibc_only
def test_warm_allocator_leaves_fixed_thresholds_alone():
    """Where the environment fixes glibc's thresholds, the warm-up changes nothing: the churn faults as much
    with it as without (measured: 61,520 both)."""
    env = _environment(MALLOC_TOP_PAD_="131072")
    assert _child(_ADAPTS, env).split() == ["True", "True"]  # the setting switches the adaptation off
    cold, warm = _faults(False, env), _faults(True, env)
    assert cold > 100
    assert abs(warm - cold) < cold / 10


def test_warm_allocator_refuses_nothing_and_returns_none():
    """Any size, including none, is accepted; nothing is returned."""
    from dpbayes.core.allocator import warm_allocator

    assert warm_allocator(0) is None
    assert warm_allocator(1 << 20) is None
