"""Drawn width of a figure as the notebook shows it (``dpbayes.book.figures.column_fit``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from dpbayes.book import figures  # noqa: E402


@pytest.fixture(autouse=True)
def _style():
    with matplotlib.rc_context(figures.STYLE):
        yield
    plt.close("all")


def test_a_column_figure_is_shown_at_most_the_output_box_wide() -> None:
    """The inline PNG is the tight bounding box plus the style's padding: a full-width column
    figure with labels outside the axes must still fit the 688 px output box (with matplotlib's
    default 0.1 in padding it came out 691 px and was scaled down)."""
    figures.use_style()
    fig, ax = figures.column_subplots()
    ax.plot([0, 1], [0, 1e5], label="a series")
    ax.set_xlabel(r"privacy parameter $\varepsilon$")
    ax.set_ylabel("mean squared error")
    fig.set_layout_engine("constrained")
    fit = figures.column_fit(fig)
    assert fit["drawn_px"] <= figures.BOOK_COLUMN_PX + 2 * figures.INLINE_PAD_IN * fig.dpi
    assert fit["fits"], fit
    assert fit["downscaled_by_px"] == 0
    # the same figure with matplotlib's default padding would not fit: the check can fail
    import io
    import struct
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", pad_inches=0.1, dpi=fig.dpi)
    assert struct.unpack(">I", buf.getvalue()[16:20])[0] > figures.DISPLAYED_IMAGE_PX


def test_width_px_draws_narrower_and_fits() -> None:
    fig, ax = figures.column_subplots(width_px=660)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel(r"$\varepsilon$")
    fig.set_layout_engine("constrained")
    assert fig.get_size_inches()[0] == pytest.approx(6.6)
    fit = figures.column_fit(fig)
    assert fit["fits"] and fit["downscaled_by_px"] == 0, fit


def test_a_wide_figure_does_not_fit() -> None:
    fig, ax = plt.subplots(figsize=(9.0, 3.0))
    ax.plot([0, 1], [0, 1])
    fit = figures.column_fit(fig)
    assert not fit["fits"] and fit["downscaled_by_px"] > 40, fit  # (the tight box crops the margins)


def test_existing_calls_unchanged_and_bad_width_refused() -> None:
    fig, _ = figures.column_subplots(2, 1, panel_height_in=2.0, sharex=True)
    assert tuple(fig.get_size_inches()) == pytest.approx((figures.COLUMN_WIDTH_IN, 4.0))
    for bad in (50, 1000, "660"):
        with pytest.raises(ValueError, match="width_px"):
            figures.column_subplots(width_px=bad)
