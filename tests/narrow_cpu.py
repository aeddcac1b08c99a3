"""Run a command on the narrow floating-point code path: ``python tests/narrow_cpu.py CMD ARGS...``.

A machine with a wide vector unit runs NumPy's SIMD kernels for its widest instruction groups and
OpenBLAS's kernels for its own core; a reader's machine may run narrower ones, whose results
differ in the last bits. This wrapper sets

* ``NPY_DISABLE_CPU_FEATURES`` to every instruction group above NumPy's compiled baseline that
  this machine offers (e.g. ``X86_V3 X86_V4 AVX512_ICL``), so NumPy dispatches to the baseline;
* ``OPENBLAS_CORETYPE`` to an older core than the one OpenBLAS picks here (``Nehalem`` on
  x86-64, ``ARMV8`` on aarch64),
* ``NUMBA_CPU_NAME=generic``, so that the optional compiled kernels (numba) are built for the
  architecture's baseline instead of this CPU's widest instructions,

checks in a child process that both took effect, prints one line saying what it set, and replaces
itself with ``CMD ARGS...`` (``make test`` runs the notebook validation a second time this way).
``--print`` only prints the settings; ``--validated`` the notebooks the narrow pass validates in full.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import platform
import subprocess
import sys

# OpenBLAS core types that every CPU of the architecture can run (DYNAMIC_ARCH builds)
NARROW_CORES = {"x86_64": ("Nehalem", "Core2"), "aarch64": ("ARMV8",)}


def dispatched_groups() -> list[str]:
    """NumPy's instruction groups above its compiled baseline that it dispatches to on this CPU."""
    from numpy._core import _multiarray_umath as umath

    return [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]


def openblas_cores() -> list[str]:
    """The core name of every OpenBLAS that NumPy and SciPy load (``[]`` if none is found)."""
    import numpy
    import scipy

    names = []
    for package in (numpy, scipy):
        for lib in glob.glob(os.path.join(os.path.dirname(package.__file__) + ".libs", "*openblas*.so*")):
            handle = ctypes.CDLL(lib)
            for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
                if hasattr(handle, symbol):
                    fn = getattr(handle, symbol)
                    fn.restype = ctypes.c_char_p
                    names.append(fn().decode())
                    break
    return names


def narrow_environment() -> dict[str, str]:
    """The variables to set (``NPY_DISABLE_CPU_FEATURES`` may be empty: already baseline only)."""
    env = {"NPY_DISABLE_CPU_FEATURES": " ".join(dispatched_groups()), "NUMBA_CPU_NAME": "generic"}
    current = set(openblas_cores())
    for core in NARROW_CORES.get(platform.machine(), ()):
        if core not in current:
            env["OPENBLAS_CORETYPE"] = core
            break
    return env


def _check() -> None:
    """Run in the narrowed child: fail unless NumPy dispatches nothing above the baseline and
    OpenBLAS runs the requested core."""
    available = dispatched_groups()
    if available:
        sys.exit(f"narrow_cpu: NumPy still dispatches {available}")
    wanted = os.environ.get("OPENBLAS_CORETYPE")
    cores = openblas_cores()
    if wanted and any(c.lower() != wanted.lower() for c in cores):
        sys.exit(f"narrow_cpu: OpenBLAS runs {cores}, not {wanted}")
    try:
        from numba.core import config
    except ImportError:  # the optional extra is not installed: nothing compiled to narrow
        return
    if config.CPU_NAME != "generic":
        sys.exit(f"narrow_cpu: numba compiles for {config.CPU_NAME!r}, not 'generic'")


def validated_notebooks() -> list[str]:
    """The notebooks ``make notebooks-narrow`` validates in full: every one but the guarded ones of
    ``tests/narrow-survey.json`` (those run at their test parameters only, ``tests/test_narrow_guard.py``)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "tests", "narrow-survey.json")) as fh:
        guarded = set(json.load(fh)["guarded"])
    notebooks = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "chapters", "**", "*.ipynb"), recursive=True)
                       if ".ipynb_checkpoints" not in p)
    return [nb for nb in notebooks if nb not in guarded]


def main(argv: list[str]) -> None:
    if argv[:1] == ["--check"]:
        _check()
        return
    if argv[:1] == ["--validated"]:
        print(" ".join(validated_notebooks()))
        return
    env = dict(os.environ, **narrow_environment())
    settings = ", ".join(f"{k}={env[k]!r}" for k in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "NUMBA_CPU_NAME") if k in env)
    if argv[:1] == ["--print"] or not argv:
        print(settings)
        return
    subprocess.run([sys.executable, __file__, "--check"], env=env, check=True)
    print(f"narrow CPU path: {settings} (checked)", flush=True)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main(sys.argv[1:])
