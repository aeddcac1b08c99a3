"""Redrawing stored figures from their JSON (``dpbayes.book.chapter_figures``, ``python -m dpbayes redraw``).

A stored run (``figures/<chapter>/runs/<label>/``) cannot be re-run when the book's figure style changes;
its figure JSON keeps every plotted number, and the notebook draws its figure from exactly those
numbers with the functions of :mod:`dpbayes.book.chapter_figures`. So a redraw must keep ``data``,
``params``, ``note`` and ``tolerance``, record a legible ``layout``, and draw what the notebook draws.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from dpbayes.book import chapter_figures, cli, figures  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "figures"
RUN = FIGURES / "03-adaptive-truncation" / "runs" / "fair-twostage-30runs"
KEPT = ("chapter", "figure_id", "notebook", "library_version", "params", "tolerance", "note", "data")


def _drawn_figures() -> list[Path]:
    """Every stored figure JSON (default and stored runs) that a function of chapter_figures draws."""
    out = []
    for path in sorted([*FIGURES.glob("*/*.json"), *FIGURES.glob("*/runs/*/*.json")]):
        if path.name.startswith("results-") or path.name == figures.RUN_MANIFEST:
            continue
        payload = json.loads(path.read_text())
        if (payload.get("chapter"), payload.get("figure_id")) in chapter_figures.DRAWINGS:
            out.append(path)
    return out


DRAWN = _drawn_figures()


def _copy_run(tmp_path: Path) -> Path:
    target = tmp_path / "fair-twostage-30runs"
    shutil.copytree(RUN, target)
    return target


def test_every_drawing_function_has_a_stored_figure():
    drawn = {(json.loads(p.read_text())["chapter"], json.loads(p.read_text())["figure_id"]) for p in DRAWN}
    assert drawn == set(chapter_figures.DRAWINGS)


def test_redraw_keeps_the_numbers_and_records_a_legible_layout(tmp_path):
    run = _copy_run(tmp_path)
    before = {p.name: json.loads(p.read_text()) for p in run.glob("*.json")}
    (run / "fig-fair-twostage.png").write_bytes(b"not a png")  # the redraw must replace it
    layouts = chapter_figures.redraw_stored(run)
    assert list(layouts) == ["fig-fair-twostage"]
    after = json.loads((run / "fig-fair-twostage.json").read_text())
    old = before["fig-fair-twostage.json"]
    for key in KEPT:
        assert after[key] == old[key], key
    # data byte-identical in the file (sorted keys, indent 1: what save_figure writes)
    assert json.dumps(after["data"], indent=1, sort_keys=True) == json.dumps(old["data"], indent=1, sort_keys=True)
    assert after["layout"] == layouts["fig-fair-twostage"]
    assert figures.on_screen_font_px(after["layout"]) >= figures.MIN_FONT_PX
    assert after["layout"]["covered_curve_px"] == 0.0
    png = (run / "fig-fair-twostage.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    width = int.from_bytes(png[16:20], "big")
    assert width == round(after["layout"]["width_in"] * after["layout"]["dpi"])
    # the scalar results and the manifest are not figures: untouched
    for name in ("results-03e-fair.json", "run.json"):
        assert json.loads((run / name).read_text()) == before[name]
    assert not list(run.glob(".*.tmp")), "a temporary file was left behind"


def test_redraw_refuses_an_unknown_figure_id_and_writes_nothing(tmp_path):
    run = _copy_run(tmp_path)
    payload = json.loads((run / "fig-fair-twostage.json").read_text())
    (run / "fig-unknown.json").write_text(json.dumps({**payload, "figure_id": "fig-unknown"}))
    (run / "fig-unknown.png").write_bytes((run / "fig-fair-twostage.png").read_bytes())
    files = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(chapter_figures.RedrawError,
                       match=r"no drawing function for figure 03-adaptive-truncation/fig-unknown .*draws .*fig-fair-twostage"):
        chapter_figures.redraw_stored(run)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == files  # checked before anything is written


def test_redraw_refuses_a_folder_without_figures(tmp_path):
    with pytest.raises(chapter_figures.RedrawError, match="no figure JSON"):
        chapter_figures.redraw_stored(tmp_path)
    with pytest.raises(chapter_figures.RedrawError, match="not a directory"):
        chapter_figures.redraw_stored(tmp_path / "missing")


def test_redraw_command(tmp_path, capsys):
    run = _copy_run(tmp_path)
    before = (run / "fig-fair-twostage.json").read_text()
    assert cli.main(["redraw", str(run), "--dry-run"]) == 0
    assert capsys.readouterr().out.strip() == f"would redraw fig-fair-twostage in {run}"
    assert (run / "fig-fair-twostage.json").read_text() == before
    assert cli.main(["redraw", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"redrawn  {run / 'fig-fair-twostage'}.png" in out and "px on screen" in out
    payload = json.loads((run / "fig-fair-twostage.json").read_text())
    old = json.loads(before)
    assert all(payload[key] == old[key] for key in KEPT)


def test_redraw_command_exits_2_on_an_unknown_figure(tmp_path):
    run = _copy_run(tmp_path)
    payload = json.loads((run / "fig-fair-twostage.json").read_text())
    (run / "fig-unknown.json").write_text(json.dumps({**payload, "figure_id": "fig-unknown"}))
    result = subprocess.run([sys.executable, "-m", "dpbayes", "redraw", str(run)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert "no drawing function for figure 03-adaptive-truncation/fig-unknown" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path", DRAWN, ids=[p.relative_to(FIGURES).with_suffix("").as_posix() for p in DRAWN])
def test_redrawing_a_stored_figure_draws_its_png(path, tmp_path):
    """What a redraw draws from the JSON is the stored PNG (within the PNG tolerance of ``make figures``
    and ``verify-run``): the notebook draws with the same function from the same numbers. (The Monte-Carlo
    error bars of estimators-vs-eps are not in its data; without them the frame stays the same.)"""
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    shutil.copy(path.with_suffix(".png"), tmp_path / "stored.png")
    layout = chapter_figures.redraw_figure(copy)
    assert layout == json.loads(path.read_text())["layout"]
    assert figures.compare_figure_png(tmp_path / "stored.png", copy.with_suffix(".png")) is None
