import math

import numpy as np
import pytest

from dpbayes.book.formatting import format_to_accuracy


def test_exact_zero_prints_zero():
    assert format_to_accuracy(0.0, 1e-6) == "0"
    assert format_to_accuracy(-0.0, 1e-6) == "0"


@pytest.mark.parametrize("x", [-1.85e-16, 2.049e-16, 1.515e-07, -9.99e-7])
def test_below_accuracy_prints_zero_like_an_exact_zero(x):
    assert format_to_accuracy(x, 1e-6) == format_to_accuracy(0.0, 1e-6) == "0"


def test_above_accuracy_prints_significant_digits():
    assert format_to_accuracy(-2.345678e-3, 1e-6) == "-0.00235"
    assert format_to_accuracy(1.0e-6, 1e-6, digits=2) == "1e-06"
    assert format_to_accuracy(np.float64(0.125), 1e-3, digits=1) == "0.1"


@pytest.mark.parametrize("bad", [math.nan, math.inf, "0.1", True, None])
def test_bad_value_is_rejected(bad):
    with pytest.raises(ValueError, match="x must be a finite real number"):
        format_to_accuracy(bad, 1e-6)


@pytest.mark.parametrize("kwargs, match", [({"accuracy": 0.0}, "accuracy"), ({"accuracy": -1.0}, "accuracy"),
                                          ({"accuracy": 1e-6, "digits": 0}, "digits")])
def test_bad_accuracy_or_digits_is_rejected(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        format_to_accuracy(0.5, **kwargs)


# -- markdown_table: every notebook table goes through it (issue 16, items 1 and 9) ----------------
import pandas as pd  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from dpbayes.book.formatting import MISSING, markdown_table  # noqa: E402


def rendered_rows(markdown: str) -> list[list[str]]:
    """The cells of every row of the first table MyST's parser (markdown-it, GFM tables) makes of ``markdown``."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    rows, row = [], None
    for tok in tokens:
        if tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(tok.content.replace("\\|", "|"))
        elif tok.type == "tr_close":
            rows.append(row)
            row = None
    return rows


PIPES = pd.DataFrame({"eps": [0.1, 1.0], "max |P_LP - P_exact|": ["< 1e-06", "0"], "P(A | B)": [0.5, 0.25]})


def test_a_pipe_in_a_header_or_cell_stays_in_its_cell():
    rows = rendered_rows(markdown_table(PIPES))
    assert rows[0] == ["eps", "max |P_LP - P_exact|", "P(A | B)"]
    assert [len(r) for r in rows] == [3, 3, 3]
    text = pd.DataFrame({"case": ["a | b"], "x": [1]})
    assert rendered_rows(markdown_table(text))[1] == ["a | b", "1"]


def test_the_check_fails_on_pandas_own_markdown():
    """The same table through DataFrame.to_markdown: MyST makes no table of it (the header splits)."""
    assert rendered_rows(PIPES.to_markdown(index=False)) == []


def test_missing_values_print_as_a_dash_not_nan():
    df = pd.DataFrame({"eps": [1.0, 2.0], "paper's b*": [0.06, float("nan")], "note": ["x", None]})
    table = markdown_table(df)
    assert "nan" not in table.lower() and table.count(MISSING) == 2
    assert rendered_rows(table)[2] == ["2", MISSING, MISSING]
    assert "nan" in df.to_markdown(index=False)  # what the helper prevents


def test_no_bare_index():
    df = pd.DataFrame({"a": [1.5, 2.5]})
    assert rendered_rows(markdown_table(df))[0] == ["a"]
    with pytest.raises(ValueError, match="named index"):
        markdown_table(df, index=True)
    assert rendered_rows(markdown_table(df.rename_axis("n"), index=True))[0] == ["n", "a"]
    with pytest.raises(TypeError, match="DataFrame"):
        markdown_table([[1, 2]])


def test_float_format_is_applied_like_pandas():
    df = pd.DataFrame({"x": [0.123456, 12345.678], "n": [1, 20]})
    assert markdown_table(df, ".3g") == df.to_markdown(index=False, floatfmt=".3g")


def test_reader_table_typesets_headers_and_booleans_and_keeps_one_format_per_column() -> None:
    import pandas as pd

    from dpbayes.book.formatting import reader_table

    text = reader_table(pd.DataFrame({"eps": [0.1, 1.0], "MSE <= bound": [True, False],
                                      "small": [4.1e-5, 0.3], "plain": [0.1234567, 0.5]}))
    header, _, first, second = text.splitlines()
    assert r"$\varepsilon$" in header and r"MSE $\le$ bound" in header
    assert "True" not in text and "False" not in text
    assert "yes" in first and "no" in second
    # the column with a 4e-5 gets an exponent in every row, not only where it is needed
    assert "4.100e-05" in first and "3.000e-01" in second
    assert "0.1235" in first and "0.5" in second and "e-0" not in first.split("|")[4]


def test_reader_table_refuses_what_is_not_a_dataframe() -> None:
    import pytest

    from dpbayes.book.formatting import reader_table

    with pytest.raises(TypeError, match="df must be a pandas DataFrame"):
        reader_table([[1, 2]])


def test_reader_symbols_typesets_plain_ascii_symbols_for_display() -> None:
    from dpbayes.book.formatting import reader_symbols

    assert reader_symbols("noise scale (r-l)/(eps sqrt 2)") == "noise scale (r-l)/(ε √2)"
    assert reader_symbols("not eps-DP as calibrated") == "not ε-DP as calibrated"
    assert reader_symbols("a <= b >= c") == "a ≤ b ≥ c"
    # only the word: epsilon, eps2 and steps stay
    assert reader_symbols("epsilon, eps2, steps") == "epsilon, eps2, steps"
    with pytest.raises(TypeError, match="text must be a str"):
        reader_symbols(1.0)  # type: ignore[arg-type]


def test_reader_table_shows_a_named_index_and_typesets_text_cells() -> None:
    import pandas as pd

    from dpbayes.book.formatting import reader_table

    df = pd.DataFrame({"eps": [1.0, 2.0], "note": ["eps-DP", "x <= 1"]}, index=pd.Index(["LSHist", "EHD"], name="mechanism"))
    table = reader_table(df, ".3g", index=True)
    header, _, first, second = table.splitlines()
    assert header.split("|")[1].strip() == "mechanism" and "$\\varepsilon$" in header
    assert "LSHist" in first and "ε-DP" in first and "x ≤ 1" in second
    with pytest.raises(ValueError, match="named index"):
        reader_table(df.rename_axis(None), index=True)


def test_reader_table_shows_the_index_only_when_it_says_something() -> None:
    import pandas as pd

    from dpbayes.book.formatting import reader_table

    plain = pd.DataFrame({"x": [1.0, 2.0]})
    assert reader_table(plain, index=None).splitlines()[0].count("|") == 2
    named = plain.set_index(pd.Index([10, 20], name="n"))
    assert reader_table(named, index=None).splitlines()[0].split("|")[1].strip() == "n"
    with pytest.raises(ValueError, match="named index"):
        reader_table(plain.set_index(pd.Index([10, 20])), index=None)


def test_reader_table_never_mixes_plain_and_exponent_within_a_column() -> None:
    import pandas as pd

    from dpbayes.book.formatting import reader_table

    text = reader_table(pd.DataFrame({"ratio": [845.2, 1253.0, 86.94, float("nan")], "x": [1.0, 2.0, 3.0, 4.0]}), ".3g")
    cells = [line.split("|")[1].strip() for line in text.splitlines()[2:]]
    assert cells == ["845", "1250", "86.9", "—"]
    assert "e+" not in text
    # numbers stay right-aligned
    assert text.splitlines()[1].split("|")[1].endswith(":")
