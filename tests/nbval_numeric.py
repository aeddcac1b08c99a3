"""nbval with numbers compared to a tolerance (pytest plugin: ``pytest --nbval -p tests.nbval_numeric``).

nbval compares a re-executed cell's text outputs with the stored ones byte for byte. Floating-point
results differ in the last bits between CPUs (SIMD width, FMA, BLAS kernels), and a number that
lies near a rounding boundary of its printed format then prints differently. This plugin keeps
nbval (kernel, cell markers, sanitiser, reporting) and replaces only its comparison of two
outputs: each text is split into numbers and the text between them.

Rules (also in CONTRIBUTING.md, "How notebook outputs are compared"):

* The text between numbers must be equal after nbval's sanitiser, with every run of spaces or tabs
  read as one space and every run of three or more ``-`` (Markdown table rules) as ``---``, so that
  column padding that follows a number's width does not count.
* Two numbers ``r`` (stored) and ``t`` (fresh) agree when
  ``|r - t| <= unit + RTOL * max(|r|, |t|) + ATOL``, where ``unit`` is one unit in the last
  printed digit of the more precisely printed of the two (``0.07055`` -> 1e-5, ``5.173e-05`` ->
  1e-8, ``1`` vs ``0.9999`` -> 1e-4). Integers on both sides (no decimal point, no exponent:
  counts, sizes, indices) get no ``unit``: they must be equal up to ``RTOL``/``ATOL``. A page's
  power of ten is one number: ``4×10⁻¹⁵`` is 4e-15 with unit 1e-15, ``10⁻⁸`` is 1e-8 with unit 1e-8.
* ``ATOL`` is the absolute floor for quantities that are zero in exact arithmetic.

A difference beyond the tolerance fails the cell with a message naming the output, both numbers
and the tolerance. With ``NBVAL_NUMERIC_LOG=<file>`` every differing number, also within the
tolerance, is appended to ``<file>`` as a JSON line (used to audit which printed quantities move
between machines).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

RTOL = Decimal("1e-9")
ATOL = Decimal("1e-12")

# A number is not glued to a preceding letter, digit, dot or underscore ("fig3", "X86_V3" stay text). A
# page's power of ten (dpbayes.book.pagevalues.format_number: "4×10⁻¹⁵", "10⁻⁸") is one number.
_SUPERSCRIPTS = "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"
_FROM_SUPERSCRIPT = str.maketrans(_SUPERSCRIPTS, "-0123456789")
_NUMBER = re.compile(rf"(?<![\w.])[-+]?(?:10[{_SUPERSCRIPTS}]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?:×10[{_SUPERSCRIPTS}]+)?)")
_SPACE = re.compile(r"[ \t]+")
_RULE = re.compile(r"-{3,}")
# MIME types (and stream names) whose text is compared with numbers to a tolerance
TEXT_KEYS = ("text/plain", "text/markdown", "text/html", "text/latex", "stdout", "stderr", "evalue")
# a value glued for a page (dpbayes.book.pagevalues) is stored under this prefix: compared the same way
GLUE_PREFIX = "application/papermill.record/"
TEXT_KEYS = TEXT_KEYS + tuple(GLUE_PREFIX + k for k in TEXT_KEYS[:4])


@dataclass(frozen=True)
class Mismatch:
    """Why two texts differ: ``kind`` is ``"number"`` or ``"text"``."""

    kind: str
    stored: str
    fresh: str
    tolerance: Decimal | None = None
    context: str = ""

    def describe(self) -> str:
        if self.kind == "number":
            diff = abs(number_value(self.stored) - number_value(self.fresh))
            return (
                f"number {self.stored} (stored) vs {self.fresh} (fresh): difference {float(diff):.3g} exceeds "
                f"tolerance {float(self.tolerance or 0):.3g} (one unit in the last printed digit + {RTOL} relative "
                f"+ {ATOL} absolute); near: {self.context!r}"
            )
        return f"text differs: stored {self.stored!r} vs fresh {self.fresh!r}"


def split_numbers(text: str) -> tuple[list[str], list[str]]:
    """Split ``text`` into the texts between numbers (one more than numbers) and the numbers."""
    return _NUMBER.split(text), _NUMBER.findall(text)


def text_shape(text: str) -> str:
    """``text`` with every number replaced by ``#`` and padding normalised (compared exactly)."""
    return _RULE.sub("---", _SPACE.sub(" ", _NUMBER.sub("#", text)))


def _mantissa_and_power(token: str) -> tuple[Decimal, int]:
    """``"4×10⁻¹⁵"`` -> ``(4, -15)``, ``"10⁻⁸"`` -> ``(1, -8)``, ``"0.5"`` -> ``(0.5, 0)``."""
    sign = "-" if token.startswith("-") else ""
    body = token.lstrip("+-")
    if body[-1] not in _SUPERSCRIPTS:  # a plain number
        return Decimal(sign + body), 0
    mantissa, _, power = body.rpartition("10")  # "4×" and "⁻¹⁵", or "" and "⁻⁸" for a bare power
    return Decimal(sign + (mantissa.rstrip("×") or "1")), int(power.translate(_FROM_SUPERSCRIPT))


def number_value(token: str) -> Decimal:
    """The value of a number token, a page's power of ten included (``"4×10⁻¹⁵"`` -> ``4E-15``)."""
    mantissa, power = _mantissa_and_power(token)
    return mantissa.scaleb(power)


def _is_integer(token: str) -> bool:
    return not any(c in token for c in ".eE×" + _SUPERSCRIPTS)


def last_digit_unit(token: str) -> Decimal:
    """One unit in the last printed digit of a number token (``"5.173e-05"`` -> ``1E-8``, ``"4×10⁻¹⁵"`` -> ``1E-15``)."""
    mantissa, power = _mantissa_and_power(token)
    return Decimal(1).scaleb(mantissa.as_tuple().exponent + power)


def number_tolerance(stored: str, fresh: str) -> Decimal:
    """The tolerance for two printed numbers (see the module docstring)."""
    r, t = number_value(stored), number_value(fresh)
    tol = RTOL * max(abs(r), abs(t)) + ATOL
    if not (_is_integer(stored) and _is_integer(fresh)):
        tol += min(last_digit_unit(stored), last_digit_unit(fresh))
    return tol


def compare_text(stored: str, fresh: str) -> tuple[Mismatch | None, list[tuple[str, str, Decimal]]]:
    """Compare two output texts by the rules above.

    Returns
    -------
    (mismatch, moved) : the first difference beyond tolerance (``None`` if they agree) and every
        pair of numbers that differ but lie within the tolerance, as ``(stored, fresh, tolerance)``.
    """
    moved: list[tuple[str, str, Decimal]] = []
    if text_shape(stored) != text_shape(fresh):
        s_lines, f_lines = stored.splitlines(), fresh.splitlines()
        for s, f in zip(s_lines, f_lines):
            if text_shape(s) != text_shape(f):
                return Mismatch("text", s.strip(), f.strip()), moved
        return Mismatch("text", f"{len(s_lines)} lines", f"{len(f_lines)} lines"), moved
    s_text, s_num = split_numbers(stored)
    for i, (s, f) in enumerate(zip(s_num, split_numbers(fresh)[1])):
        if s == f:
            continue
        tol = number_tolerance(s, f)
        if abs(number_value(s) - number_value(f)) > tol:
            context = (s_text[i][-40:] + s + s_text[i + 1][:20]).strip()
            return Mismatch("number", s, f, tol, context), moved
        moved.append((s, f, tol))
    return None, moved


def compare_value(stored: Any, fresh: Any, key: str) -> tuple[Mismatch | None, list[tuple[str, str, Decimal]]]:
    """Compare one output field: texts of :data:`TEXT_KEYS` by :func:`compare_text`, others exactly."""
    if isinstance(stored, list):
        stored = "".join(stored)
    if isinstance(fresh, list):
        fresh = "".join(fresh)
    if key in TEXT_KEYS and isinstance(stored, str) and isinstance(fresh, str):
        return compare_text(stored, fresh)
    if stored != fresh:
        return Mismatch("text", str(stored)[:200], str(fresh)[:200]), []
    return None, []


def _flatten(cell: Any, outputs: list[Any], skip: tuple[str, ...]) -> dict[str, list[Any]]:
    """nbval's layout: one list of values per output field / MIME type, in output order."""
    from nbval.plugin import transform_streams_for_comparison

    flat: dict[str, list[Any]] = defaultdict(list)
    for out in transform_streams_for_comparison(outputs):
        for key, value in out.items():
            if key in skip:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in skip:
                        flat[mime].append(cell.sanitize(data))
            else:
                flat[key].append(cell.sanitize(value))
    return flat


def _glue_names(outputs: list[Any]) -> list[str]:
    """The glue keys of a cell's glued outputs, in output order."""
    return [((out.get("metadata") or {}).get("scrapbook") or {}).get("name", "?")
            for out in outputs if any(k.startswith(GLUE_PREFIX) for k in (out.get("data") or {}))]


def pages_showing(notebook: str, key: str) -> list[str]:
    """The book pages (``*.md`` under the book's root) whose ``{glued}`` roles show ``key`` of ``notebook``."""
    from pathlib import Path

    from dpbayes.book.pagevalues import glued_references, resolve_notebook

    nb = Path(notebook).resolve()
    root = next((p for p in nb.parents if (p / "_toc.yml").exists()), None)
    if root is None:
        return []
    pages = []
    for page in sorted(root.rglob("*.md")):
        if any(part.startswith((".", "_build")) for part in page.relative_to(root).parts):
            continue
        for ref in glued_references(page.read_text(encoding="utf-8")):
            try:
                if ref.key == key and resolve_notebook(ref.ref, page.parent, root).resolve() == nb:
                    pages.append(f"{page.relative_to(root).as_posix()}:{ref.line}")
            except ValueError:
                continue
    return pages


def _log_moved(cell: Any, key: str, moved: list[tuple[str, str, Decimal]]) -> None:
    path = os.environ.get("NBVAL_NUMERIC_LOG")
    if not path or not moved:
        return
    with open(path, "a", encoding="utf-8") as log:
        for s, f, tol in moved:
            rel = abs(number_value(s) - number_value(f)) / tol
            log.write(json.dumps({"cell": cell.nodeid, "key": key, "stored": s, "fresh": f,
                                  "tolerance": str(tol), "fraction_of_tolerance": float(rel)}) + "\n")


def compare_outputs(self: Any, test: list[Any], ref: list[Any], skip_compare: Any = None) -> bool:
    """Replacement for ``nbval.plugin.IPyNbCell.compare_outputs`` using :func:`compare_value`."""
    skip = tuple(skip_compare or self.parent.skip_compare)
    fresh, stored = _flatten(self, test, skip), _flatten(self, ref, skip)
    self.comparison_traceback = []
    if set(fresh) != set(stored):
        self.comparison_traceback.append(f"output fields differ: stored {sorted(stored)}, fresh {sorted(fresh)}")
        return False
    for key, stored_values in stored.items():
        fresh_values = fresh[key]
        if len(stored_values) != len(fresh_values):
            self.comparison_traceback.append(f"{key}: {len(stored_values)} stored outputs, {len(fresh_values)} fresh")
            return False
        for i, (s, f) in enumerate(zip(stored_values, fresh_values)):
            mismatch, moved = compare_value(s, f, key)
            _log_moved(self, key, moved)
            if mismatch is not None:
                where = key
                if key.startswith(GLUE_PREFIX):
                    names = _glue_names(ref)
                    glue_key = names[i] if i < len(names) else "?"
                    shown = pages_showing(str(self.parent.fspath), glue_key)
                    where = f"glued value {glue_key!r}, shown on {', '.join(shown) or 'no page'}"
                self.comparison_traceback.append(f"{self.nodeid} [{where}]: {mismatch.describe()}")
                return False
    return True


def pytest_configure(config: Any) -> None:
    # nbval has no hook for the comparison itself, and its cell class calls super() by its
    # module-level name (so it cannot be swapped for a subclass): replace the one method
    import nbval.plugin

    nbval.plugin.IPyNbCell.compare_outputs = compare_outputs
