"""Stored figures: one house style, atomic PNG + JSON output, and numerical comparison.

Every figure of the book is written as ``<dir>/<chapter>/<figure_id>.png`` plus
``<figure_id>.json`` holding the plotted numbers, the parameters that produced them and the
library version. Where ``<dir>`` is depends on who runs the notebook:

* ``DPBAYES_FIGURES_DIR`` set (``python -m dpbayes run`` and ``make test`` set it): write there;
* unset (an interactive session, ``make book``): nothing is written, the figure is only shown.

The stored copies under ``figures/`` are therefore only replaced by
``python -m dpbayes run ... --update-stored``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpbayes.core._extras import require

matplotlib = require("matplotlib", "dpbayes.book.figures")

from dpbayes import __version__
from dpbayes.book._io import atomic_path, atomic_write_text

FIGURES_ENV = "DPBAYES_FIGURES_DIR"
NOTEBOOK_ENV = "DPBAYES_NOTEBOOK"  # set by the run command: which notebook wrote a figure
DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-9
PNG_RMS_TOLERANCE = 2.0  # RMS of 8-bit pixel differences; identical renders give 0

# Fonts, sizes and DPI fixed in one place so that PNGs are byte-stable across runs.
STYLE: dict[str, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.figsize": (6.4, 4.0),
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 10,
    "legend.title_fontsize": 10,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.6,
    "lines.markersize": 5,
    "axes.prop_cycle": matplotlib.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
    ),
    "image.cmap": "viridis",
    "svg.hashsalt": "dpbayes",
    "path.simplify": False,
    # IPython's inline backend saves with bbox_inches="tight" and this padding: 0.1 in (matplotlib's
    # default) made a column-wide figure 691 px, scaled down into the 688 px output box.
    # (The stored PNGs are saved without a tight box, so this does not change them.)
    "savefig.pad_inches": 0.02,
}


def use_style() -> None:
    """Apply the book's matplotlib style globally (call once at the top of a notebook)."""
    matplotlib.rcParams.update(STYLE)


JSON_DIGITS = 12
"""Significant digits of every float written to a figure or results JSON file.

Far below any comparison tolerance (the smallest stored ``rtol`` is 1e-9), far above the last-digit
noise of floating point (different BLAS paths, summation order), so that re-storing an unchanged
result rewrites the same bytes."""


def json_float(x: float) -> float:
    """``x`` rounded to :data:`JSON_DIGITS` significant digits (the one place floats are rounded for storage)."""
    return float(f"{x:.{JSON_DIGITS}g}")


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _to_jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return json_float(f)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def output_dir() -> Path | None:
    """Directory figures are written to, or ``None`` when figures are only shown."""
    value = os.environ.get(FIGURES_ENV)
    return Path(value) if value else None


BOOK_COLUMN_PX = 680
"""Width in CSS pixels of the book's text column at a 1300 px window (the width notebook figures are shown at, checked by the browser test,
``tests/test_browser.py``); a wider figure is scaled down to it."""

BODY_FONT_PX = 16.0
"""Size in CSS pixels of the book's body text (the theme's paragraphs; checked in the rendered book by
``tests/test_browser.py``)."""

MIN_FONT_SHARE = 0.8
"""Smallest figure text as a share of the body text, as the reader sees both (issue 49, item 4)."""

MIN_FONT_PX = MIN_FONT_SHARE * BODY_FONT_PX
"""Smallest text of a figure, in CSS pixels as the reader sees it in the book (``tests/test_figure_layout.py``):
12.8 px, which a figure shown at the column's width reaches from 9.2 pt (:data:`MIN_FONT_PT`)."""


COLUMN_WIDTH_IN = BOOK_COLUMN_PX / STYLE["figure.dpi"]
"""Width in inches of a figure shown at exactly the text column's width (6.8 in at 100 dpi): the
book's text sizes (:data:`MIN_FONT_PT` and up) stay at least :data:`MIN_FONT_PX` on screen."""

MIN_FONT_PT = MIN_FONT_PX * 72.0 / STYLE["figure.dpi"]
"""Smallest font size in points of a column-wide figure (9.2 pt): every size in :data:`STYLE` is at least
10 pt, and a notebook that sets a size itself uses 10 or more."""


DISPLAYED_IMAGE_PX = 688
"""Widest an output image is shown without scaling in a 1300 px window (measured in Chromium: the
notebook cell's output box minus its padding). An inline PNG wider than this is scaled down
(``tests/browser_reader.py``, "figure downscaled")."""

INLINE_PAD_IN = STYLE["savefig.pad_inches"]
"""Padding IPython's inline backend adds around a figure: it saves with ``bbox_inches="tight"`` and
the style's ``savefig.pad_inches``, so the PNG a notebook shows is the figure's tight bounding box
plus this much on each side, not ``figsize`` (with matplotlib's default 0.1 in a 6.8 in column
figure became 691 px; with 0.02 in it is at most 684 px)."""


def inline_width_px(fig: Any) -> int:
    """Width in pixels of the PNG a notebook shows for ``fig`` (IPython's inline backend: tight
    bounding box plus :data:`INLINE_PAD_IN`, at the figure's dpi). Draws the figure."""
    import io
    import struct

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", pad_inches=INLINE_PAD_IN, dpi=fig.dpi,
                metadata={"Software": None})
    return int(struct.unpack(">I", buf.getvalue()[16:20])[0])  # IHDR width


def column_fit(fig: Any, column_px: float = DISPLAYED_IMAGE_PX) -> dict[str, Any]:
    """Drawn width of ``fig`` as the notebook shows it against the width it is displayed at.

    Returns ``{"drawn_px", "column_px", "downscaled_by_px", "fits"}``; ``fits`` is false when the
    book would scale the image down (its labels then shrink with it). Use it in a figure cell while
    redrawing (``assert column_fit(fig)["fits"]``) or to pick ``width_px`` of :func:`column_subplots`.
    """
    drawn = inline_width_px(fig)
    return {"drawn_px": drawn, "column_px": json_float(column_px),
            "downscaled_by_px": json_float(max(0.0, drawn - column_px)), "fits": drawn <= column_px}


def column_subplots(nrows: int = 1, ncols: int = 1, *, panel_height_in: float = 3.2, width_px: float | None = None,
                    **kwargs: Any) -> tuple[Any, Any]:
    """``plt.subplots`` sized to the book's text column, so that nothing is scaled down.

    Figures of several panels were drawn wide and shown shrunk to the column, which made their
    text too small to read (issue 16); stacking the panels at the column's width keeps every
    font at its natural size.

    Parameters
    ----------
    nrows, ncols : int
        Panel grid; one panel per row (``ncols=1``) is the readable default, two columns only for
        panels with short labels.
    panel_height_in : float
        Height of each row of panels in inches.
    width_px : float, optional
        Width of the figure in pixels instead of the column's :data:`BOOK_COLUMN_PX` (at most that):
        narrower, so that the PNG the notebook shows (tight bounding box plus padding, see
        :func:`column_fit`) is not wider than :data:`DISPLAYED_IMAGE_PX`.
    **kwargs
        Passed on to ``matplotlib.pyplot.subplots`` (``sharex``, ``squeeze``, ...).
    """
    import matplotlib.pyplot as plt

    if not (isinstance(nrows, int) and nrows >= 1 and isinstance(ncols, int) and ncols >= 1):
        raise ValueError(f"nrows and ncols must be integers >= 1, got nrows={nrows!r}, ncols={ncols!r}")
    if not (isinstance(panel_height_in, (int, float)) and 0 < panel_height_in <= 10):
        raise ValueError(f"panel_height_in must be in (0, 10] inches, got {panel_height_in!r}")
    width_in = COLUMN_WIDTH_IN
    if width_px is not None:
        if not (isinstance(width_px, (int, float)) and 100 <= width_px <= BOOK_COLUMN_PX):
            raise ValueError(f"width_px must be in [100, {BOOK_COLUMN_PX}] pixels, got {width_px!r}")
        width_in = width_px / STYLE["figure.dpi"]
    return plt.subplots(nrows, ncols, figsize=(width_in, panel_height_in * nrows), **kwargs)


def legend_below(fig: Any, *, ncol: int = 2, fontsize: float | None = None) -> Any:
    """One legend for all panels of ``fig``, below them (matplotlib's constrained layout).

    Every labelled artist of every axes appears once (the first one with that label), so a
    reference line drawn in only some panels is still explained. The legend sits outside the
    panels, where it cannot hide a curve (``covered_curve_px``); the figure switches to the
    constrained layout, which makes room for it. Call after everything is plotted; returns the legend.
    """
    entries: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    fig.set_layout_engine("constrained")
    return fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=ncol, fontsize=fontsize)


def figure_layout(fig: Any) -> dict[str, Any]:
    """Size, resolution, smallest font and hidden curve length of a figure, for the legibility checks.

    ``min_font_pt`` is the smallest font size (points) of any visible, non-empty text in the
    figure: titles, labels, tick labels, legend entries, annotations. ``covered_curve_px`` is
    :func:`covered_curve_px` (curves under a legend or an inset); ``clipped_px`` is :func:`clipped_px`
    (content cut off at the figure's edges).
    """
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    dpi = float(fig.get_dpi())
    w, h = fig.get_size_inches()
    return {"width_in": json_float(w), "height_in": json_float(h), "dpi": json_float(dpi),
            "min_font_pt": json_float(min(sizes)) if sizes else None,
            "covered_curve_px": json_float(covered_curve_px(fig)),
            "clipped_px": json_float(clipped_px(fig))}


def clipped_px(fig: Any) -> float:
    """How far, in figure pixels, drawn content reaches past the figure's edges (0 when everything is inside).

    The stored PNG is the figure's canvas: a legend or a label wider than the figure is cut off there
    (the notebook's inline image, cropped to the content, is wider instead). Call after the figure is drawn.
    """
    renderer = fig.canvas.get_renderer()
    tight = fig.get_tightbbox(renderer)  # inches
    w, h = fig.get_size_inches()
    overflow = max(0.0, -tight.x0, tight.x1 - w, -tight.y0, tight.y1 - h)
    return float(overflow) * float(fig.get_dpi())


def covered_curve_px(fig: Any) -> float:
    """Length in figure pixels of plotted curves hidden under a legend or an inset axes.

    Every visible ``Line2D`` of an axes (curves, marker series, reference lines) is sampled along
    its drawn segments at 1 px steps, clipped to its axes; the samples that fall inside the
    window extent of that axes' legend, of a figure legend, or of an inset axes drawn on it (with
    its title and tick labels) are counted. A legend placed over data, or an inset covering a
    curve, gives a positive length; ``0.0`` means nothing is hidden. Call after the figure is drawn.
    """
    renderer = fig.canvas.get_renderer()
    figure_covers = [leg.get_window_extent(renderer) for leg in fig.legends if leg.get_visible()]
    hidden = 0.0
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        covers = list(figure_covers)
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            covers.append(legend.get_window_extent(renderer))
        covers += [child.get_tightbbox(renderer) for child in ax.child_axes if child.get_visible()]
        if not covers:
            continue
        frame = ax.get_window_extent(renderer)
        for line in ax.get_lines():
            if not line.get_visible():
                continue
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            xy = xy[np.all(np.isfinite(xy), axis=1)]
            if len(xy) == 0:
                continue
            if line.get_linestyle() in ("None", "", " ", "none") or len(xy) == 1:
                samples = xy  # markers only: each marker centre is one sample
            else:
                steps = np.maximum(1, np.ceil(np.hypot(*np.diff(xy, axis=0).T)).astype(int))
                samples = np.concatenate([
                    a + np.linspace(0.0, 1.0, k, endpoint=False)[:, None] * (b - a)
                    for a, b, k in zip(xy[:-1], xy[1:], steps)] + [xy[-1:]])
            inside_axes = ((samples[:, 0] >= frame.x0) & (samples[:, 0] <= frame.x1)
                           & (samples[:, 1] >= frame.y0) & (samples[:, 1] <= frame.y1))
            under = np.zeros(len(samples), dtype=bool)
            for box in covers:
                under |= ((samples[:, 0] > box.x0) & (samples[:, 0] < box.x1)
                          & (samples[:, 1] > box.y0) & (samples[:, 1] < box.y1))
            hidden += float(np.count_nonzero(inside_axes & under))
    return hidden


def on_screen_font_px(layout: Mapping[str, Any], column_px: float = BOOK_COLUMN_PX) -> float:
    """The smallest font of a figure in CSS pixels when the book shows it at most ``column_px`` wide.

    A PNG of ``width_in * dpi`` pixels is shown at its natural size (one image pixel per CSS
    pixel) or scaled down to the column; a font of ``s`` points is ``s * dpi / 72`` image pixels.
    """
    width_px = float(layout["width_in"]) * float(layout["dpi"])
    scale = min(1.0, column_px / width_px)
    return float(layout["min_font_pt"]) * float(layout["dpi"]) / 72.0 * scale


def save_figure(
    fig: Any,
    chapter: str,
    figure_id: str,
    data: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    note: str = "",
) -> None:
    """Write ``fig`` and the numbers behind it, atomically, if an output directory is set.

    Returns nothing, so that a notebook cell ending in this call prints the same output
    whether or not figures are written.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The finished figure (not closed, so a notebook still shows it inline).
    chapter, figure_id : str
        Folder (e.g. ``"01-ubapp"``) and file stem (e.g. ``"fig3-mse-high-privacy"``).
    data : mapping
        Every plotted series by name (arrays, lists or scalars); compared numerically in tests.
    params : mapping
        The parameters that produced the figure (notebook parameters and derived settings).
    rtol, atol : float
        Tolerances used when a fresh run is compared with the stored JSON.
    note : str
        Optional provenance note (e.g. which solver produced which curve).
    """
    base = output_dir()
    if base is None:
        return
    target = base / chapter / f"{figure_id}.png"
    payload = {
        "chapter": chapter,
        "figure_id": figure_id,
        "notebook": os.environ.get(NOTEBOOK_ENV, ""),
        "library_version": __version__,
        "params": _to_jsonable(dict(params)),
        "tolerance": {"rtol": rtol, "atol": atol},
        "note": note,
        "data": _to_jsonable(dict(data)),
    }
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    payload["layout"] = figure_layout(fig)  # after drawing: tick labels exist only then
    atomic_write_text(target.with_suffix(".json"), json.dumps(payload, indent=1, sort_keys=True) + "\n")


def save_results(name: str, results: Mapping[str, Any]) -> None:
    """Record scalar results of a run (``results-<name>.json``) for sweep summaries.

    Written next to the figures when an output directory is set; ignored otherwise. The run
    command gathers these into ``summary.csv`` when it sweeps a parameter.
    """
    base = output_dir()
    if base is None:
        return
    atomic_write_text(base / f"results-{name}.json", json.dumps(_to_jsonable(dict(results)), indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class FigureDifference:
    """One failed comparison: which figure, which series, how large the difference."""

    figure: str
    series: str
    detail: str

    def __str__(self) -> str:
        return f"{self.figure}: {self.series}: {self.detail}"


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def _numeric(value: Any) -> np.ndarray | None:
    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(x) for x in v]
        if v in ("nan", "inf", "-inf"):
            return float(v)
        return v

    try:
        arr = np.asarray(conv(value), dtype=float)
    except (TypeError, ValueError):
        return None
    return arr


def compare_figure_json(stored: Mapping[str, Any], fresh: Mapping[str, Any], name: str) -> list[FigureDifference]:
    """Compare the ``data`` and ``params`` of two figure JSON payloads with the stored tolerances."""
    tol = stored.get("tolerance", {})
    rtol = float(tol.get("rtol", DEFAULT_RTOL))
    atol = float(tol.get("atol", DEFAULT_ATOL))
    problems: list[FigureDifference] = []
    for section in ("params", "data"):
        a: dict[str, Any] = {}
        b: dict[str, Any] = {}
        _flatten("", stored.get(section, {}), a)
        _flatten("", fresh.get(section, {}), b)
        for key in sorted(set(a) | set(b)):
            label = f"{section}.{key}"
            if key not in b:
                problems.append(FigureDifference(name, label, "missing from the fresh run"))
                continue
            if key not in a:
                problems.append(FigureDifference(name, label, "not in the stored figure"))
                continue
            x, y = _numeric(a[key]), _numeric(b[key])
            if x is None or y is None or x.dtype == object or y.dtype == object:
                if a[key] != b[key]:
                    problems.append(FigureDifference(name, label, f"stored {a[key]!r} != fresh {b[key]!r}"))
                continue
            if x.shape != y.shape:
                problems.append(FigureDifference(name, label, f"shape {x.shape} != {y.shape}"))
                continue
            same_nonfinite = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
            finite = np.isfinite(x) & np.isfinite(y)
            bad = ~same_nonfinite & ~(finite & np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=False))
            if np.any(bad):
                diff = np.where(finite, np.abs(x - y), np.inf)
                worst = int(np.argmax(np.where(bad, diff, -1.0)))
                idx = np.unravel_index(worst, x.shape) if x.ndim else ()
                problems.append(
                    FigureDifference(
                        name,
                        label,
                        f"{int(bad.sum())} value(s) differ; largest |diff| = {diff.flat[worst]:.3g} "
                        f"at {tuple(int(i) for i in idx)} (stored {float(x.flat[worst])!r}, fresh {float(y.flat[worst])!r}; "
                        f"rtol={rtol:g}, atol={atol:g})",
                    )
                )
    return problems


def compare_figure_png(stored: Path, fresh: Path, tol: float = PNG_RMS_TOLERANCE) -> FigureDifference | None:
    """Compare two PNGs with :func:`matplotlib.testing.compare.compare_images` (RMS tolerance)."""
    from matplotlib.testing.compare import compare_images
    from matplotlib.testing.exceptions import ImageComparisonFailure

    try:
        result = compare_images(str(stored), str(fresh), tol, in_decorator=True)
    except ImageComparisonFailure as exc:  # different pixel sizes: the figure was redrawn
        return FigureDifference(stored.stem, "png", f"{exc} (height, width, channels)".splitlines()[0])
    if result is None:
        return None
    return FigureDifference(stored.stem, "png", f"RMS {result['rms']:.3f} > tolerance {tol} (diff image {result['diff']})")


STORED_RUNS_DIR = "runs"
"""``figures/<chapter>/runs/<label>/`` keeps a run with non-default parameters (``python -m dpbayes
store-run``); it is checked by ``python -m dpbayes verify-run``, not by the default-parameter comparison."""

RUN_MANIFEST = "run.json"


def _is_figure_file(rel: Path) -> bool:
    # results-*.json are scalar run summaries (see save_results) and run.json a stored run's manifest:
    # neither is a figure. Stored runs (runs/<label>/) are compared only against their own re-run.
    return not (rel.name.startswith("results-") or rel.name == RUN_MANIFEST or STORED_RUNS_DIR in rel.parts[:-1])


def _figure_stems(base: Path) -> set[Path]:
    return {p.relative_to(base).with_suffix("") for p in base.rglob("*.json") if _is_figure_file(p.relative_to(base))}


def compare_results(stored: Mapping[str, Any], fresh: Mapping[str, Any], name: str,
                    rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> list[FigureDifference]:
    """Compare two ``results-*.json`` payloads (flat scalar results of a run) with a tolerance."""
    return compare_figure_json({"data": dict(stored), "tolerance": {"rtol": rtol, "atol": atol}},
                               {"data": dict(fresh)}, name)


def compare_figure_dirs(stored_dir: Path, fresh_dir: Path, png_tol: float = PNG_RMS_TOLERANCE,
                        notebooks: Collection[str] | None = None) -> list[FigureDifference]:
    """Compare every stored figure with its fresh counterpart; report missing and extra figures too.

    ``notebooks`` (file names): only the stored figures those notebooks draw are expected (a run of
    some notebooks only, as on the narrow path).
    """
    stored_dir, fresh_dir = Path(stored_dir), Path(fresh_dir)
    stored = _figure_stems(stored_dir)
    if notebooks is not None:
        names = set(notebooks)
        stored = {rel for rel in stored if json.loads((stored_dir / rel).with_suffix(".json").read_text()).get("notebook") in names}
    fresh = _figure_stems(fresh_dir) if fresh_dir.exists() else set()
    problems: list[FigureDifference] = []
    for rel in sorted(stored - fresh):
        problems.append(FigureDifference(str(rel), "*", "stored figure was not produced by the notebooks"))
    for rel in sorted(fresh - stored):
        problems.append(FigureDifference(str(rel), "*", "produced but not stored (run with --update-stored)"))
    for rel in sorted(stored & fresh):
        a = json.loads((stored_dir / rel).with_suffix(".json").read_text())
        b = json.loads((fresh_dir / rel).with_suffix(".json").read_text())
        problems += compare_figure_json(a, b, str(rel))
        diff = compare_figure_png((stored_dir / rel).with_suffix(".png"), (fresh_dir / rel).with_suffix(".png"), png_tol)
        if diff is not None:
            problems.append(FigureDifference(str(rel), diff.series, diff.detail))
    return problems
