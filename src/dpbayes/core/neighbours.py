"""Neighbour relations of a data set: which two data sets differential privacy must not tell apart.

A guarantee of ``eps``-DP is only as meaningful as its neighbour relation (Dwork and Roth 2014,
Def. 2.4 and §2.3). The book's releases of a count or a proportion summarise a data set of binary
records by ``(n, c)``: its number of records ``n`` and its count of ones ``c``, ``0 <= c <= n``.
Two relations are in use, named once here (:data:`NEIGHBOUR_RELATIONS`) and checked by
:func:`check_neighbours` everywhere a release or an audit takes one:

``"replace-one"``
    Two data sets of the *same* size ``n`` that differ in one record's value:
    ``(n, c) ~ (n, c ± 1)``. The size ``n`` is public (not computed from the confidential data). This
    is the relation of the sources of chapters 1, 2, 4 and 5 ("bounded" DP).
``"add-remove"``
    One data set is the other with one record added or removed:
    ``(n, c) ~ (n + 1, c)`` (the record is a 0) and ``(n, c) ~ (n + 1, c + 1)`` (a 1). The size ``n`` is
    itself confidential; a release may only use a *public* bound ``n_bound >= n`` ("unbounded" DP; OpenDP's
    default for counts). A release that uses the data's own ``n`` (for example clamping a noisy count
    to ``{0..n}`` with ``n = len(df)``) is not private under this relation.

Replacing a record is one removal followed by one addition, so an ``eps``-DP release under add/remove is
``2 eps``-DP under replace-one in general (and ``eps``-DP for the count releases of this book, whose law
depends on ``c`` only); the converse fails (the audit of :mod:`dpbayes.core.privacy_loss` shows an infinite
loss for the clamp to the data's own ``n``).
"""

from __future__ import annotations

from typing import Any

from dpbayes.core.validation import check_choice

__all__ = ["NEIGHBOUR_RELATIONS", "REPLACE_ONE", "ADD_REMOVE", "check_neighbours"]

#: Name of the relation "one record replaced, ``n`` public": ``(n, c) ~ (n, c ± 1)``.
REPLACE_ONE = "replace-one"
#: Name of the relation "one record added or removed, ``n`` confidential": ``(n, c) ~ (n + 1, c)`` and ``(n + 1, c + 1)``.
ADD_REMOVE = "add-remove"
#: The neighbour relations a release or an audit accepts (module docstring): ``("replace-one", "add-remove")``.
NEIGHBOUR_RELATIONS = (REPLACE_ONE, ADD_REMOVE)


def check_neighbours(value: Any, name: str = "neighbours") -> str:
    """Require one of :data:`NEIGHBOUR_RELATIONS`; the message names the parameter and the allowed values.

    Parameters
    ----------
    value : str
        The relation asked for.
    name : str
        The parameter's name in the message.

    Returns
    -------
    str
        ``value``, one of ``"replace-one"``, ``"add-remove"``.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, NEIGHBOUR_RELATIONS))}, got {type(value).__name__}")
    return check_choice(name, value, NEIGHBOUR_RELATIONS)
