"""Stored-figure machinery: atomic writes, JSON payload, and a comparison that really bites."""

import json
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpbayes.book import figures  # noqa: E402

STORED = Path(__file__).resolve().parents[1] / "figures"


def _make_figure(out: Path, monkeypatch, value: float = 1.0) -> None:
    monkeypatch.setenv(figures.FIGURES_ENV, str(out))
    figures.use_style()
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 11)
    ax.plot(x, value * x**2, label="series")
    ax.legend()
    figures.save_figure(fig, "00-test", "fig0-demo", data={"x": x, "y": value * x**2, "inf": np.inf}, params={"value": value})
    plt.close(fig)


def test_nothing_written_without_output_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(figures.FIGURES_ENV, raising=False)
    fig, _ = plt.subplots()
    assert figures.save_figure(fig, "00-test", "x", data={}, params={}) is None
    plt.close(fig)
    assert not any(tmp_path.iterdir())


def test_payload_and_identical_rerun(tmp_path, monkeypatch):
    _make_figure(tmp_path / "a", monkeypatch)
    _make_figure(tmp_path / "b", monkeypatch)
    payload = json.loads((tmp_path / "a/00-test/fig0-demo.json").read_text())
    assert payload["params"] == {"value": 1.0}
    assert payload["data"]["inf"] == "inf"
    assert payload["library_version"]
    assert not list((tmp_path / "a/00-test").glob("*.tmp"))
    assert figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b") == []
    # same parameters, same bytes: the style fixes fonts, DPI and metadata
    assert (tmp_path / "a/00-test/fig0-demo.png").read_bytes() == (tmp_path / "b/00-test/fig0-demo.png").read_bytes()


def test_missing_and_extra_figures_are_reported(tmp_path, monkeypatch):
    _make_figure(tmp_path / "a", monkeypatch)
    (tmp_path / "b").mkdir()
    problems = figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b")
    assert len(problems) == 1 and "not produced" in problems[0].detail
    problems = figures.compare_figure_dirs(tmp_path / "b", tmp_path / "a")
    assert len(problems) == 1 and "not stored" in problems[0].detail


def test_a_run_of_some_notebooks_expects_only_their_figures(tmp_path, monkeypatch):
    _make_figure(tmp_path / "a", monkeypatch)
    (tmp_path / "b").mkdir()
    drawn_by = json.loads((tmp_path / "a/00-test/fig0-demo.json").read_text())["notebook"]
    assert figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b", notebooks=["another.ipynb"]) == []
    # the notebook that draws it ran, and the figure is missing: reported
    problems = figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b", notebooks=[drawn_by])
    assert len(problems) == 1 and "not produced" in problems[0].detail


def test_run_results_are_not_figures(tmp_path, monkeypatch):
    # save_results writes results-<name>.json beside the figures of a run; the run command never
    # stores them, so the stored-vs-fresh comparison must not ask for them
    _make_figure(tmp_path / "a", monkeypatch)
    _make_figure(tmp_path / "b", monkeypatch)
    monkeypatch.setenv("DPBAYES_FIGURES_DIR", str(tmp_path / "b"))
    figures.save_results("demo", {"rmse": 0.5})
    assert (tmp_path / "b/results-demo.json").exists()
    assert figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b") == []
    # a real figure that is missing is still reported
    (tmp_path / "b/00-test/fig0-demo.json").unlink()
    assert len(figures.compare_figure_dirs(tmp_path / "a", tmp_path / "b")) == 1


def _one_stored_figure(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A copy of one real stored figure (first in name order), or a generated one before any exist."""
    stored = sorted(STORED.rglob("*.json")) if STORED.exists() else []
    src_dir = tmp_path / "stored"
    if stored:
        rel = stored[0].relative_to(STORED)
        for suffix in (".json", ".png"):
            dst = (src_dir / rel).with_suffix(suffix)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stored[0].with_suffix(suffix), dst)
        return src_dir, rel
    _make_figure(src_dir, monkeypatch)
    return src_dir, Path("00-test/fig0-demo.json")


def _first_number_path(data, path=()):
    if isinstance(data, dict):
        for k in sorted(data):
            found = _first_number_path(data[k], (*path, k))
            if found is not None:
                return found
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found = _first_number_path(item, (*path, i))
            if found is not None:
                return found
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        return path
    return None


def test_comparison_bites_on_a_perturbed_json_value(tmp_path, monkeypatch):
    stored_dir, rel = _one_stored_figure(tmp_path, monkeypatch)
    fresh_dir = tmp_path / "fresh"
    shutil.copytree(stored_dir, fresh_dir)
    assert figures.compare_figure_dirs(stored_dir, fresh_dir) == []
    fresh_json = (fresh_dir / rel).with_suffix(".json")
    payload = json.loads(fresh_json.read_text())
    path = _first_number_path(payload["data"])
    assert path is not None, "the stored figure holds no number to perturb"
    node = payload["data"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = node[path[-1]] * 1.01 + 1e-3
    fresh_json.write_text(json.dumps(payload))
    problems = figures.compare_figure_dirs(stored_dir, fresh_dir)
    assert len(problems) == 1
    assert problems[0].series == "data." + ".".join(k for k in path if isinstance(k, str))
    assert "largest |diff|" in problems[0].detail


def _fresh_copy_png(tmp_path, monkeypatch):
    """A stored figure, a fresh copy of its folder, and the copy's PNG (to be altered by the test)."""
    stored_dir, rel = _one_stored_figure(tmp_path, monkeypatch)
    fresh_dir = tmp_path / "fresh"
    shutil.copytree(stored_dir, fresh_dir)
    return stored_dir, fresh_dir, (fresh_dir / rel).with_suffix(".png")


def test_comparison_bites_on_a_perturbed_png(tmp_path, monkeypatch):
    stored_dir, fresh_dir, png = _fresh_copy_png(tmp_path, monkeypatch)
    image = plt.imread(png)
    h, w = image.shape[:2]
    image[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4, :3] = 1.0 - image[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4, :3]
    plt.imsave(png, image)
    problems = figures.compare_figure_dirs(stored_dir, fresh_dir)
    assert [p.series for p in problems] == ["png"]
    assert "RMS" in problems[0].detail


def test_a_png_of_another_size_is_a_difference_not_a_crash(tmp_path, monkeypatch):
    # a redrawn figure (other size) used to raise ImageComparisonFailure out of verify-run
    stored_dir, fresh_dir, png = _fresh_copy_png(tmp_path, monkeypatch)
    image = plt.imread(png)
    plt.imsave(png, image[: image.shape[0] // 2])
    problems = figures.compare_figure_dirs(stored_dir, fresh_dir)
    assert [p.series for p in problems] == ["png"]
    assert "size" in problems[0].detail and "\n" not in problems[0].detail


@pytest.mark.parametrize("value", [np.nan, -np.inf])
def test_nonfinite_values_compare_equal_to_themselves(value):
    a = {"data": {"y": [1.0, figures._to_jsonable(value)]}}
    assert figures.compare_figure_json(a, a, "x") == []
    b = {"data": {"y": [1.0, 2.0]}}
    assert len(figures.compare_figure_json(a, b, "x")) == 1
