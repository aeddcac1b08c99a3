"""Text for numbers that are shown to readers: no digit the computation cannot stand behind.

Pure functions (no I/O; :func:`show_table` only displays); the notebooks use them for table cells whose value is known only to a
stated accuracy (an LP solver's tolerance, a difference of two equal quantities), and
:func:`markdown_table` for every table a notebook shows.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from typing import Any

from dpbayes.validation import check_int, check_positive

__all__ = ["format_to_accuracy", "markdown_table", "reader_table", "show_table", "escape_cell", "MISSING"]

MISSING = "\u2014"
"""What a table cell without a value shows (an em dash); the notebook says what it means."""


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


def escape_cell(text: str) -> str:
    """Cell text safe inside a Markdown table row: every ``|`` not yet escaped becomes ``\\|``.

    Inside a table MyST (markdown-it) splits the row at every unescaped ``|`` (``max |P_LP -
    P_exact|``, ``P(A | B)``), also inside inline code and math; ``\\|`` is turned back into ``|``
    before the cell is parsed. Used for the notebooks' tables (:func:`markdown_table`) and the
    tables the Sphinx extension generates.
    """
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def _escape_cell(text: str) -> str:
    return escape_cell(text.replace("\n", " "))


def markdown_table(df: Any, floatfmt: str | Sequence[str] = ".4g", *, index: bool = False, missing: str = MISSING) -> str:
    """The Markdown (GFM) table of a :class:`pandas.DataFrame`, safe to show with ``IPython.display.Markdown``.

    Every table a notebook shows goes through this function, so that all of them render the same
    way in the book:

    - a ``|`` in a column header or a text cell is escaped as ``\\|`` (otherwise the row splits
      into more cells than its header and MyST leaves the whole table as raw text);
    - no index column unless ``index=True`` (then the index must have a name, which heads it:
      a bare ``0, 1, 2, ...`` column tells the reader nothing);
    - a missing value (``NaN``, ``None``) prints as ``missing`` (an em dash), never ``nan``:
      say next to the table what it means.

    Parameters
    ----------
    df : pandas.DataFrame
        The table; numeric columns are formatted with ``floatfmt``, text columns as they are.
    floatfmt : str or sequence of str
        Format of floating-point cells (``tabulate``'s ``floatfmt``: one for all columns, or one per column).
    index : bool
        Show the index as the first column (it must be named).
    missing : str
        Text of a cell without a value.

    Returns
    -------
    str
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if index and any(name is None for name in df.index.names):
        raise ValueError("index=True needs a named index (df.rename_axis('...')): a bare index column tells the reader nothing")
    from tabulate import tabulate

    table = df.reset_index() if index else df
    headers = [_escape_cell(str(c)) for c in table.columns]
    rows = [[_cell(v) for v in row] for row in table.itertuples(index=False, name=None)]
    return tabulate(rows, headers=headers, tablefmt="pipe", floatfmt=floatfmt, missingval=missing)


EXPONENT_BELOW = 1e-4
EXPONENT_FROM = 1e4
"""A float column with any nonzero magnitude below :data:`EXPONENT_BELOW` or from
:data:`EXPONENT_FROM` up is printed with an exponent in every row (``.3e``), never mixed."""


def reader_table(df: Any, floatfmt: str = ".4g") -> str:
    """:func:`markdown_table` of ``df`` in the book's table style (issue 27).

    - headers typeset: the word ``eps`` becomes $\\varepsilon$ and ``<=`` becomes $\\le$;
    - boolean columns read ``yes`` / ``no`` (never Python's ``True`` / ``False``);
    - one number format per column: ``floatfmt`` unless some value of the column needs an
      exponent (see :data:`EXPONENT_BELOW`), then ``.3e`` for the whole column.

    Parameters
    ----------
    df : pandas.DataFrame
    floatfmt : str
        Format of float columns that need no exponent.

    Returns
    -------
    str
        Markdown, to be shown with ``IPython.display.Markdown``.
    """
    import numpy as np
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(floatfmt, str):
        raise TypeError(f"floatfmt must be a format string such as '.4g', got {type(floatfmt).__name__}")
    df = df.rename(columns=lambda c: re.sub(r"\beps\b", r"$\\varepsilon$", str(c)).replace("<=", r"$\le$"))
    df = df.apply(lambda s: s.map({True: "yes", False: "no"}) if s.dtype == bool else s)
    formats = []
    for column in df.columns:
        values = df[column].to_numpy(dtype=float) if df[column].dtype.kind == "f" else np.array([])
        magnitudes = np.abs(values[np.isfinite(values) & (values != 0)])
        needs_exponent = magnitudes.size and (magnitudes.min() < EXPONENT_BELOW or magnitudes.max() >= EXPONENT_FROM)
        formats.append(".3e" if needs_exponent else floatfmt)
    return markdown_table(df, formats)


def show_table(df: Any, floatfmt: str = ".4g") -> None:
    """Show :func:`reader_table` of ``df`` as a notebook output (the one display helper here)."""
    from IPython.display import Markdown, display

    display(Markdown(reader_table(df, floatfmt)))


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and math.isnan(value)):
        return None  # tabulate prints None as its ``missingval``
    if isinstance(value, str):
        return _escape_cell(value)
    return value
