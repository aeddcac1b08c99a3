"""dpbayes: the library behind the companion book on differentially private Bayes estimation.

One subpackage per subject, in layers; a module imports only from its own layer's allowed packages
and the layers below (``tests/test_layout.py`` checks it, from the "May import" line of each
subpackage's docstring):

3. :mod:`dpbayes.book` -- the book's machinery (run command, stored figures, Sphinx extension);
   not in the wheel.
2. :mod:`dpbayes.choosing` (which estimator) and :mod:`dpbayes.release` (releases of real data):
   what spans the chapters.
1. The subjects, one per source: :mod:`dpbayes.ubapp` (chapter 1), :mod:`dpbayes.posterior`
   (chapter 2), :mod:`dpbayes.smc` (chapter 3), :mod:`dpbayes.counting` (chapter 4).
0. :mod:`dpbayes.core` -- mechanisms and their exact laws, privacy loss and audit, losses and
   distances, validation, executors.

All functions are pure, vectorised NumPy code without plotting or file I/O (those live in
:mod:`dpbayes.book`).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpbayes")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = ["__version__"]
