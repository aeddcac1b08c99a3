"""The notebook comparison of tests/nbval_numeric.py bites: beyond tolerance fails, within passes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest

from nbval_numeric import compare_text, compare_value, last_digit_unit, number_tolerance, number_value

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "chapters/03-adaptive-truncation/03a-fisher-intervals.ipynb"


def stored_markdown_output() -> dict:
    """The stored output of 03a's table of best half-widths (a Markdown table display)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "best_table = pd.DataFrame(rows)" in cell.source:
            (out,) = [o for o in cell.outputs if "text/markdown" in o.get("data", {})]
            return json.loads(json.dumps(out))
    raise AssertionError("03a no longer displays best_table")


@pytest.fixture(scope="module")
def table() -> str:
    return stored_markdown_output()["data"]["text/markdown"]


def probe_numbers(table: str) -> tuple[str, str, str]:
    """A stored number of the form 0.0dddd, the same one unit in the last digit away (within tolerance) and
    three units away (beyond it): read from the table, so that a re-stored table keeps the test meaningful."""
    import re

    found = re.search(r"(?<![\d.])0\.0\d{4}(?![\d])", table)
    assert found, "03a's table has no number of the form 0.0dddd"
    orig = found.group()
    last = int(orig[-1])
    within = orig[:-1] + str(last + 1 if last < 9 else last - 1)
    beyond = orig[:-1] + str(last + 3 if last < 7 else last - 3)
    return orig, within, beyond


def test_identical_text_passes(table):
    assert compare_text(table, table) == (None, [])


def test_last_digit_unit_and_tolerance():
    assert last_digit_unit("0.07055") == Decimal("1e-5")
    assert last_digit_unit("5.173e-05") == Decimal("1e-8")
    assert last_digit_unit("12") == Decimal(1)
    # the finer of two printings decides: 1 vs 0.9999 (a .4g flip at 0.99995)
    assert number_tolerance("1", "0.9999") >= Decimal("1e-4")
    # two integers get no unit: counts and sizes must not move
    assert number_tolerance("100", "101") < 1


def test_number_within_printed_precision_passes(table):
    orig, within, _ = probe_numbers(table)
    mismatch, moved = compare_text(table, table.replace(orig, within, 1))
    assert mismatch is None
    assert [(s, f) for s, f, _ in moved] == [(orig, within)]


def test_number_beyond_tolerance_fails_and_names_both_numbers(table):
    orig, _, beyond = probe_numbers(table)
    mismatch, _ = compare_text(table, table.replace(orig, beyond, 1))
    assert mismatch is not None and mismatch.kind == "number"
    text = mismatch.describe()
    assert f"{orig} (stored)" in text and f"{beyond} (fresh)" in text and "tolerance 1e-05" in text


def test_changed_integer_fails(table):
    mismatch, _ = compare_text("n = 100, 30 runs", "n = 101, 30 runs")
    assert mismatch is not None and "100 (stored)" in mismatch.describe()


def test_changed_word_fails(table):
    mismatch, _ = compare_text(table, table.replace("harmonic", "harmonics", 1))
    assert mismatch is not None and mismatch.kind == "text"
    assert "harmonics" in mismatch.describe()


def test_padding_that_follows_a_number_width_passes():
    stored = "| a | b |\n|--:|--:|\n|  0        | 1 |\n"
    fresh = "| a | b |\n|--:|--:|\n| -1.85e-16 | 1 |\n"
    assert compare_text(stored, fresh)[0] is None  # zero in exact arithmetic: the absolute floor


def test_a_page_power_of_ten_is_one_number() -> None:
    # glue_number's "m×10ⁿ": a rounding residue that prints 4×10⁻¹⁵ on one CPU and 5×10⁻¹⁵ on another is
    # within the absolute floor, like 4e-15 vs 5e-15; read digit by digit (4 vs 5, 10 vs 10) it failed
    assert number_value("4×10⁻¹⁵") == Decimal("4e-15") and number_value("-2.5×10³") == Decimal("-2500")
    assert number_value("10⁻⁸") == Decimal("1e-8") and last_digit_unit("10⁻⁸") == Decimal("1e-8")
    assert last_digit_unit("1.806×10⁻⁵") == Decimal("1e-8")
    assert compare_text("largest deviation 4×10⁻¹⁵", "largest deviation 5×10⁻¹⁵")[0] is None
    assert compare_text("gap 9×10⁻¹³", "gap 10⁻¹²")[0] is None  # a printing that rounds up to a bare power
    # beyond the tolerance: the exponent counts (1.806×10⁻⁵ vs 1.816×10⁻⁵ and vs 1.806×10⁻⁴)
    mismatch, _ = compare_text("x = 1.806×10⁻⁵", "x = 1.816×10⁻⁵")
    assert mismatch is not None and "1.806×10⁻⁵ (stored)" in mismatch.describe()
    assert compare_text("x = 1.806×10⁻⁵", "x = 1.806×10⁻⁴")[0] is not None
    assert compare_text("n = 2×10⁶ records", "n = 4×10⁶ records")[0] is not None  # 2×10⁶ stands for ±10⁶


def test_tiny_value_beyond_the_absolute_floor_fails():
    assert compare_text("diff 0", "diff 3e-9")[0] is not None


def test_non_text_fields_are_compared_exactly():
    assert compare_value("0.5", "0.5000001", "image/svg+xml")[0] is not None
    assert compare_value(["0.0705", "5\n"], "0.07055\n", "text/plain")[0] is None


def _tiny_notebook(path: Path, output: dict) -> None:
    """A notebook whose one cell re-displays 03a's stored table; its stored output is ``output``."""
    text = stored_markdown_output()["data"]["text/markdown"]
    cell = nbformat.v4.new_code_cell(
        "from IPython.display import Markdown, display\n" f"display(Markdown({text!r}))\n",
        execution_count=1, outputs=[nbformat.from_dict(output)])
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_nbval_with_the_plugin_end_to_end(tmp_path):
    """nbval + plugin on copies of a stored output: within precision passes, beyond fails, word fails."""
    original = stored_markdown_output()
    orig, within, _ = probe_numbers(original["data"]["text/markdown"])
    beyond = orig[:-2] + str((int(orig[-2]) + 2) % 10) + orig[-1]  # two units in the next-to-last digit
    cases = {"within": (orig, within), "beyond": (orig, beyond), "word": ("harmonic", "harmonix")}
    for name, (old, new) in cases.items():
        out = copy.deepcopy(original)
        out["data"]["text/markdown"] = out["data"]["text/markdown"].replace(old, new, 1)
        _tiny_notebook(tmp_path / f"{name}.ipynb", out)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "tests.nbval_numeric", "-p", "no:cacheprovider",
         "-q", "-rf", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log
    assert "2 failed, 1 passed" in log, log
    # the stored copy was changed, so the fresh run shows the original numbers
    assert "beyond.ipynb::Cell 0" in log and f"{beyond} (stored) vs {orig} (fresh)" in log, log
    assert "word.ipynb::Cell 0" in log and "harmonix" in log, log
    assert "within.ipynb::Cell 0" not in log.split("short test summary")[-1], log
