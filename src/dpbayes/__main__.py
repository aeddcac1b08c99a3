"""Entry point of ``python -m dpbayes`` (see :mod:`dpbayes.cli`)."""

import sys

from dpbayes.cli import main

sys.exit(main())
