"""dpbayes: the library behind the companion book on differentially private Bayes estimation.

One module per concept; all functions are pure, vectorised NumPy code without plotting or
file I/O (those live in :mod:`dpbayes.book.figures` and :mod:`dpbayes.book.cli`).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpbayes")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = ["__version__"]
