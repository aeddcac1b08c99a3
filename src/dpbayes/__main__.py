"""Entry point of ``python -m dpbayes`` (see :mod:`dpbayes.book.cli`)."""

import sys

from dpbayes.book.cli import main

sys.exit(main())
