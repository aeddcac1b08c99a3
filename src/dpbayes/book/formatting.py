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

from dpbayes.core.validation import check_int, check_positive

__all__ = ["format_to_accuracy", "markdown_table", "reader_table", "show_table", "escape_cell", "reader_symbols", "MISSING"]

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


def markdown_table(
    df: Any,
    floatfmt: str | Sequence[str] = ".4g",
    *,
    index: bool = False,
    missing: str = MISSING,
    preformatted: Sequence[int] = (),
) -> str:
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
    preformatted : sequence of int
        Positions of columns whose cells are already number texts: printed as they are (not
        re-parsed and re-formatted), right-aligned like numbers.

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
    if not preformatted:
        return tabulate(rows, headers=headers, tablefmt="pipe", floatfmt=floatfmt, missingval=missing)
    colalign = [("right" if i in set(preformatted) else None) for i in range(len(headers))]
    return tabulate(rows, headers=headers, tablefmt="pipe", floatfmt=floatfmt, missingval=missing,
                    disable_numparse=list(preformatted), colalign=colalign)


EXPONENT_BELOW = 1e-4
EXPONENT_FROM = 1e4
"""A float column with any nonzero magnitude below :data:`EXPONENT_BELOW` or from
:data:`EXPONENT_FROM` up is printed with an exponent in every row (``.3e``), never mixed."""


_READER_SYMBOLS = ((re.compile(r"\beps\b"), "\u03b5"), (re.compile(r"\bsqrt ?(\d)\b"), "\u221a\\1"),
                   (re.compile(r"<="), "\u2264"), (re.compile(r">="), "\u2265"))


def reader_symbols(text: str) -> str:
    """``text`` with the plain-ASCII symbols of code and library strings written as a reader expects.

    ``eps`` becomes ``ε``, ``sqrt 2`` ``√2``, ``<=`` and ``>=`` ``≤`` and ``≥`` (Unicode, so the result
    reads the same in a Markdown table, a notebook's generated text and a matplotlib legend). For
    display only: the library's strings (verdict words such as ``"not eps-DP as calibrated"``) stay
    as they are, so code that compares them is unaffected.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    for pattern, symbol in _READER_SYMBOLS:
        text = pattern.sub(symbol, text)
    return text


def reader_table(df: Any, floatfmt: str = ".4g", *, index: bool | None = False) -> str:
    """:func:`markdown_table` of ``df`` in the book's table style (issue 27).

    - headers typeset: the word ``eps`` becomes $\\varepsilon$ and ``<=`` becomes $\\le$;
    - text cells through :func:`reader_symbols` (``eps`` -> ``ε``, ...);
    - boolean columns read ``yes`` / ``no`` (never Python's ``True`` / ``False``);
    - one number format per column: ``floatfmt`` unless some value of the column needs an
      exponent (see :data:`EXPONENT_BELOW`), then ``.3e`` for the whole column.

    Parameters
    ----------
    df : pandas.DataFrame
    floatfmt : str
        Format of float columns that need no exponent.
    index : bool or None
        Show the index as the first column(s); every level must be named (it heads its column).
        ``None``: show it unless it is the default ``0, 1, 2, ...``.

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
    if index is None:
        index = any(name is not None for name in df.index.names) or not df.index.equals(pd.RangeIndex(len(df)))
    if index:
        if any(name is None for name in df.index.names):
            raise ValueError("index=True needs a named index (df.rename_axis('...')): a bare index column tells the reader nothing")
        df = df.reset_index()
    df = df.rename(columns=lambda c: re.sub(r"\beps\b", r"$\\varepsilon$", str(c)).replace("<=", r"$\le$"))
    df = df.apply(lambda s: s.map({True: "yes", False: "no"}) if s.dtype == bool else s)
    df = df.apply(lambda s: s if pd.api.types.is_numeric_dtype(s) else s.map(lambda v: reader_symbols(v) if isinstance(v, str) else v))
    formats, preformatted = [], []
    significant = re.fullmatch(r"\.(\d+)g", floatfmt)
    for position, column in enumerate(df.columns):
        values = df[column].to_numpy(dtype=float) if df[column].dtype.kind == "f" else np.array([])
        magnitudes = np.abs(values[np.isfinite(values) & (values != 0)])
        needs_exponent = magnitudes.size and (magnitudes.min() < EXPONENT_BELOW or magnitudes.max() >= EXPONENT_FROM)
        formats.append(".3e" if needs_exponent else floatfmt)
        if not needs_exponent and significant and magnitudes.size and magnitudes.max() >= 10.0 ** int(significant.group(1)):
            # "g" would switch this column's large values (1250 at ".3g") to an exponent and leave the others plain
            digits = max(1, int(significant.group(1)))
            df = df.assign(**{column: [None if not np.isfinite(v) else _plain_significant(float(v), digits) for v in values]})
            preformatted.append(position)
    return markdown_table(df, formats, preformatted=preformatted)


def _plain_significant(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant digits, written without an exponent (``1250``, ``0.0969``)."""
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - exponent)
    text = f"{rounded:.{max(0, digits - 1 - exponent)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def show_table(df: Any, floatfmt: str = ".4g", *, index: bool | None = False) -> None:
    """Show :func:`reader_table` of ``df`` as a notebook output (the one display helper here)."""
    from IPython.display import Markdown, display

    display(Markdown(reader_table(df, floatfmt, index=index)))


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and math.isnan(value)):
        return None  # tabulate prints None as its ``missingval``
    if isinstance(value, str):
        return _escape_cell(value)
    return value
