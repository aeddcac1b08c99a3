"""Entry point of ``python -m dpbayes`` (see :mod:`dpbayes.book.cli`).

The run command belongs to the book: it needs a checkout of the repository (its chapters, stored
figures and ``pip install -e ".[book]"``). An installed wheel has no ``dpbayes.book`` and says so.
"""

import sys

try:
    from dpbayes.book.cli import main
except ModuleNotFoundError as exc:
    if exc.name is None or not exc.name.startswith("dpbayes.book"):
        raise
    sys.exit(
        "python -m dpbayes is the book's run command: it works in a checkout of the book's repository "
        '(make setup, or pip install -e ".[book]" there), not from an installed dpbayes wheel'
    )

sys.exit(main())
