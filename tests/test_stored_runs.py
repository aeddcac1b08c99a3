"""Stored non-default runs (``figures/<chapter>/runs/<label>/``) stay consistent with their notebooks.

Re-executing them is too slow for CI (that is why they are stored); ``make verify-runs`` does it.
Here we check what can be checked cheaply: the manifest names an existing notebook, its parameters
still validate against that notebook's ``parameters`` cell, and every stored figure was produced by
that notebook with exactly those parameter values.
"""

import json
from pathlib import Path

import pytest

from dpbayes.figures import RUN_MANIFEST, STORED_RUNS_DIR
from dpbayes.params import notebook_parameters, validate_overrides

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((ROOT / "figures").glob(f"*/{STORED_RUNS_DIR}/*/{RUN_MANIFEST}"))


@pytest.mark.parametrize("manifest_path", MANIFESTS, ids=[str(p.parent.relative_to(ROOT)) for p in MANIFESTS])
def test_stored_run_matches_its_notebook(manifest_path: Path) -> None:
    manifest = json.loads(manifest_path.read_text())
    notebook = ROOT / manifest["notebook"]
    assert notebook.exists(), f"{manifest_path}: notebook {manifest['notebook']} is gone"
    assert notebook.parent.name == manifest_path.parents[2].name, "stored under the wrong chapter"
    declared = notebook_parameters(notebook)
    values = validate_overrides(declared, manifest["parameters"], where=str(notebook))
    assert values, "a stored run with the default parameters belongs in figures/<chapter>/ itself"
    full = {name: p.default for name, p in declared.items()} | values
    figures = [p for p in manifest_path.parent.glob("*.json") if p.name != RUN_MANIFEST and not p.name.startswith("results-")]
    assert figures, f"{manifest_path.parent}: no figures stored"
    for fig in figures:
        payload = json.loads(fig.read_text())
        assert payload["notebook"] == notebook.name, fig
        assert fig.with_suffix(".png").exists(), f"{fig.with_suffix('.png')} missing"
        for name, value in payload.get("params", {}).items():
            if name in full:
                assert value == full[name], f"{fig.name}: parameter {name} = {value!r}, run declares {full[name]!r}"
