"""The book's machinery: what the notebooks, the ``python -m dpbayes`` command and the Sphinx build use.

Nothing in the science modules of :mod:`dpbayes` imports from here; this package imports the
science, never the other way round (``tests/test_layout.py`` checks it).

Modules: :mod:`~dpbayes.book.params` (the parameters cell grammar), :mod:`~dpbayes.book.constraints`
(constraints between a notebook's parameters), :mod:`~dpbayes.book.figures` (house style, stored
figures and their comparison), :mod:`~dpbayes.book.formatting` (printed numbers),
:mod:`~dpbayes.book.progress` (progress reports from notebook loops), :mod:`~dpbayes.book.cli` (the
run / store-run / verify-run commands, built from :mod:`~dpbayes.book.planning`,
:mod:`~dpbayes.book.execution` and :mod:`~dpbayes.book.storing`), :mod:`~dpbayes.book.audit_book`
(the privacy audit of every mechanism the book uses), :mod:`~dpbayes.book._io` (atomic writes) and
:mod:`~dpbayes.book.sphinx_ext` (the Sphinx extension: verdict dashboard, parameter tables, offline
MathJax).

Layer 3 (the book). May import: every layer below (dpbayes.core, the subjects, dpbayes.choosing, dpbayes.release).
"""
