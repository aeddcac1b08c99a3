"""Figure text legible in the book (issue 16, item 4).

``save_figure`` records each stored figure's size, resolution and smallest font
(``layout`` in ``figures/<chapter>/<id>.json``). The book shows a PNG at its natural size, or
scaled down to the text column (``BOOK_COLUMN_PX``, checked in the rendered book by
``tests/test_browser.py``); the smallest text must then be at least ``MIN_FONT_PX`` CSS pixels.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpbayes.book import figures  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "figures"
# the default figures and those of stored runs (figures/<chapter>/runs/<label>/): the chapter pages show both
STORED = sorted(p for pattern in ("*/*.json", "*/runs/*/*.json") for p in FIGURES.glob(pattern)
                if not p.name.startswith("results-") and p.name != "run.json")


def _name(path: Path) -> str:
    return path.relative_to(FIGURES).with_suffix("").as_posix()


# Stored before save_figure recorded a layout: (chapter/id) -> why. Re-storing the notebook
# records it; the test then measures the figure and this entry must go. (Empty: every stored
# figure has been re-stored since.)
NOT_YET_MEASURED: dict[str, str] = {}  # (the stored runs were re-executed and re-stored at stop 20)

# Measured and too small, known: (chapter/id) -> why. Any other figure below the minimum fails.
KNOWN_TOO_SMALL: dict[str, str] = {}  # (empty since stop 20: all 12 figures listed at stop 19 were redrawn)


def too_small(layout: dict, name: str) -> str | None:
    px = figures.on_screen_font_px(layout)
    if px < figures.MIN_FONT_PX:
        width = layout["width_in"] * layout["dpi"]
        return (f"{name}: smallest text {layout['min_font_pt']:g} pt shows as {px:.1f} px "
                f"(figure {width:.0f} px wide in a {figures.BOOK_COLUMN_PX} px column; minimum {figures.MIN_FONT_PX:g} px)")
    return None


def test_every_stored_figure_is_legible_in_the_column():
    problems, unmeasured = [], []
    for path in STORED:
        name = _name(path)
        layout = json.loads(path.read_text()).get("layout")
        if layout is None:
            if name not in NOT_YET_MEASURED:
                problems.append(f"{name}: no layout recorded (re-store its notebook)")
            unmeasured.append(name)
            continue
        assert name not in NOT_YET_MEASURED, f"{name} is measured now: remove it from NOT_YET_MEASURED"
        problem = too_small(layout, name)
        if problem and name not in KNOWN_TOO_SMALL:
            problems.append(problem)
        if not problem and name in KNOWN_TOO_SMALL:
            problems.append(f"{name} is legible now: remove it from KNOWN_TOO_SMALL")
    assert not problems, "\n".join(problems)
    assert len(unmeasured) < len(STORED)


def test_no_stored_figure_hides_a_curve_under_a_legend_or_an_inset():
    """A legend or inset drawn over plotted data hides what the figure is for (issue 16, item 4)."""
    problems = []
    for path in STORED:
        name = _name(path)
        layout = json.loads(path.read_text()).get("layout") or {}
        if name in NOT_YET_MEASURED:
            continue  # checked by the legibility test: it must be re-stored
        if "covered_curve_px" not in layout:
            problems.append(f"{name}: no covered_curve_px recorded (re-store its notebook)")
        elif layout["covered_curve_px"] > 0:
            problems.append(f"{name}: {layout['covered_curve_px']:g} px of plotted curves lie under a legend or "
                            "an inset (move the legend outside the axes or to an empty corner)")
    assert not problems, "\n".join(problems)


def test_no_stored_figure_cuts_off_its_own_content():
    """A legend or label wider than the figure is cut off at the PNG's edge (issue 49: the larger text made
    four legends of two columns wider than their figures)."""
    problems = []
    for path in STORED:
        name = _name(path)
        layout = json.loads(path.read_text()).get("layout") or {}
        if "clipped_px" not in layout:
            problems.append(f"{name}: no clipped_px recorded (re-store its notebook, or redraw its stored run)")
        elif layout["clipped_px"] > 1.0:
            problems.append(f"{name}: content reaches {layout['clipped_px']:.0f} px past the figure's edge "
                            "(fewer legend columns, shorter labels or a wider figure)")
    assert not problems, "\n".join(problems)


def test_clipped_px_measures_a_legend_wider_than_the_figure():
    figures.use_style()
    wide, _ = figures.column_subplots(1, layout="constrained")
    narrow, _ = figures.column_subplots(1, layout="constrained")
    for fig, label in ((wide, "a long legend label number {} that takes room"), (narrow, "short {}")):
        for i in range(4):
            fig.axes[0].plot([0, 1], [i, i], label=label.format(i))
        figures.legend_below(fig, ncol=2)
        fig.canvas.draw()
    assert figures.clipped_px(wide) > 10 and figures.clipped_px(narrow) == 0.0
    plt.close(wide)
    plt.close(narrow)


def _layout(figsize, fontsize):
    fig, ax = plt.subplots(figsize=figsize, dpi=100)
    ax.plot([0, 1], [0, 1], label="a curve")
    ax.set_title("title", fontsize=fontsize)
    ax.legend(fontsize=fontsize)
    fig.canvas.draw()
    layout = figures.figure_layout(fig)
    plt.close(fig)
    return layout


def test_the_check_fails_on_small_text_and_on_a_shrunk_figure():
    ok = _layout((6.4, 4.0), 10)
    assert ok["min_font_pt"] == 10 and too_small(ok, "ok") is None
    assert too_small(_layout((6.4, 4.0), 9), "9 pt")  # 12.5 px at natural size: 78 % of the body text
    assert too_small(_layout((6.4, 4.0), 5), "tiny font")  # 6.9 px at natural size
    # 10 pt is legible at 640 px, not in a 1600 px figure scaled down to the column
    shrunk = _layout((16.0, 4.0), 10)
    assert figures.on_screen_font_px(shrunk) == pytest.approx(10 * 100 / 72 * figures.BOOK_COLUMN_PX / 1600)
    assert too_small(shrunk, "shrunk")


def test_layout_counts_tick_labels():
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=4)
    fig.canvas.draw()
    assert figures.figure_layout(fig)["min_font_pt"] == 4
    plt.close(fig)


def test_column_subplots_fill_the_column_and_keep_small_text_legible():
    fig, axes = figures.column_subplots(3, panel_height_in=2.5)
    assert axes.shape == (3,)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="x")
        ax.legend(fontsize=9.5)
    fig.canvas.draw()
    layout = figures.figure_layout(fig)
    plt.close(fig)
    assert layout["width_in"] * layout["dpi"] == pytest.approx(figures.BOOK_COLUMN_PX)
    assert layout["height_in"] == pytest.approx(7.5)
    assert too_small(layout, "column") is None  # 9.5 pt at natural size: 13.2 px
    with pytest.raises(ValueError, match="nrows"):
        figures.column_subplots(0)
    with pytest.raises(ValueError, match="panel_height_in"):
        figures.column_subplots(2, panel_height_in=-1)


def _drawn(fig):
    fig.canvas.draw()
    return figures.covered_curve_px(fig)


def test_covered_curve_px_sees_a_legend_over_a_curve_and_not_one_beside_it():
    # the book's style whatever ran before (another test's use_style() used to change the legend's
    # size, and whether it reached a curve at 0.9); the curve lies inside the legend's band in it
    with matplotlib.rc_context(figures.STYLE):
        _legend_and_inset_cover_a_curve()


def _legend_and_inset_cover_a_curve():
    x = np.linspace(0.0, 1.0, 50)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(x, np.full_like(x, 0.95), label="a curve near the top")
    ax.set_ylim(0.0, 1.0)
    ax.legend(loc="upper center")  # on the curve
    covered = _drawn(fig)
    ax.legend(loc="lower center")  # the lower half is empty
    assert covered > 20 and _drawn(fig) == 0.0
    ax.get_legend().remove()
    inset = ax.inset_axes([0.3, 0.8, 0.4, 0.15])  # over the curve
    inset.plot([0, 1], [0, 1])
    assert _drawn(fig) > 20
    inset.set_visible(False)
    ax.plot(x, np.full_like(x, 0.5))
    fig.legend(["figure legend"], loc="center")  # a figure legend counts for every axes
    assert _drawn(fig) > 20
    plt.close(fig)


def test_covered_curve_px_counts_marker_series_by_their_points():
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot([0.5], [0.5], "o", label="one point")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert _drawn(fig) == 1.0
    plt.close(fig)


def test_legend_below_lists_each_label_once_and_hides_no_curve():
    fig, axes = figures.column_subplots(2, 2, panel_height_in=2.0)
    x = np.linspace(0.0, 1.0, 20)
    for i, ax in enumerate(axes.flat):
        ax.plot(x, x, label="curve")
        if i == 3:
            ax.axvline(0.5, color="k", label="only in the last panel")
    legend = figures.legend_below(fig)
    assert [t.get_text() for t in legend.get_texts()] == ["curve", "only in the last panel"]
    fig.canvas.draw()
    assert figures.covered_curve_px(fig) == 0.0
    lowest_panel = min(ax.get_position().y0 for ax in axes.flat)
    assert legend.get_window_extent().y1 / fig.bbox.height < lowest_panel  # the legend is under the panels
    plt.close(fig)


def test_the_house_style_sets_no_text_below_the_minimum():
    """Every font size of the one style setting reaches 80 % of the body text in a column-wide figure."""
    from matplotlib import font_manager

    assert figures.MIN_FONT_PX == pytest.approx(0.8 * figures.BODY_FONT_PX)
    with plt.rc_context(figures.STYLE):
        base = float(plt.rcParams["font.size"])
        for key in ("font.size", "axes.titlesize", "axes.labelsize", "legend.fontsize", "legend.title_fontsize",
                    "xtick.labelsize", "ytick.labelsize", "figure.titlesize"):
            size = plt.rcParams[key]
            pt = float(size) if isinstance(size, (int, float)) else base * font_manager.font_scalings[size]
            assert pt >= figures.MIN_FONT_PT, (key, pt)
