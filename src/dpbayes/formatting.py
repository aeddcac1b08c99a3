"""Text for numbers that are shown to readers: no digit the computation cannot stand behind.

Pure functions (no I/O); the notebooks use them for table cells whose value is known only to a
stated accuracy (an LP solver's tolerance, a difference of two equal quantities).
"""

from __future__ import annotations

import math
import numbers

from dpbayes.validation import check_int, check_positive

__all__ = ["format_to_accuracy"]


def format_to_accuracy(x: float, accuracy: float, digits: int = 3) -> str:
    """Format ``x`` known to absolute ``accuracy``: ``"0"`` below it, else ``digits`` significant digits.

    A value smaller in magnitude than ``accuracy`` is zero at that accuracy and prints as ``"0"``,
    whether it is an exact zero or rounding residue such as ``-1.85e-16`` (which one it is differs
    between machines, so the two must print alike); state the accuracy next to the number (e.g. in
    the column header). Anything else prints with ``digits`` significant digits.

    Parameters
    ----------
    x : float
        The value (finite).
    accuracy : float
        Its absolute accuracy, ``> 0``.
    digits : int
        Significant digits for values above the accuracy, in ``[1, 17]``.

    Returns
    -------
    str
    """
    if not isinstance(x, numbers.Real) or isinstance(x, bool) or not math.isfinite(float(x)):
        raise ValueError(f"x must be a finite real number, got {x!r}")
    acc = float(check_positive("accuracy", accuracy))
    n = check_int("digits", digits, minimum=1, maximum=17)
    value = float(x)
    if abs(value) < acc:
        return "0"
    return f"{value:.{n}g}"
