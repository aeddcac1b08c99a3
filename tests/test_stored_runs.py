"""Stored non-default runs (``figures/<chapter>/runs/<label>/``) stay consistent with their notebooks.

Re-executing them is too slow for CI (that is why they are stored); ``make verify-runs`` does it.
Here we check what can be checked cheaply: the manifest names an existing notebook, its parameters
still validate against that notebook's ``parameters`` cell, and every stored figure was produced by
that notebook with exactly those parameter values. For chapter 3's simulation study, whose
replicates are seeded one by one, we also recompute one replicate of every stored run with the
cheap exact-likelihood methods and compare it with the stored posterior means: the stored numbers
must still come out of the library.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from dpbayes.smc import study as smc_study
from dpbayes.book.figures import RUN_MANIFEST, STORED_RUNS_DIR
from dpbayes.book.params import notebook_parameters, validate_overrides

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((ROOT / "figures").glob(f"*/{STORED_RUNS_DIR}/*/{RUN_MANIFEST}"))


def _parameters(manifest: dict) -> tuple[dict, dict]:
    """The run's validated overrides, and all its parameters (the notebook's defaults plus those)."""
    notebook = ROOT / manifest["notebook"]
    declared = notebook_parameters(notebook)
    values = validate_overrides(declared, manifest["parameters"], where=str(notebook))
    return values, {name: p.default for name, p in declared.items()} | values


@pytest.mark.parametrize("manifest_path", MANIFESTS, ids=[str(p.parent.relative_to(ROOT)) for p in MANIFESTS])
def test_stored_run_matches_its_notebook(manifest_path: Path) -> None:
    manifest = json.loads(manifest_path.read_text())
    notebook = ROOT / manifest["notebook"]
    assert notebook.exists(), f"{manifest_path}: notebook {manifest['notebook']} is gone"
    assert notebook.parent.name == manifest_path.parents[2].name, "stored under the wrong chapter"
    values, full = _parameters(manifest)
    assert values, "a stored run with the default parameters belongs in figures/<chapter>/ itself"
    figures = [p for p in manifest_path.parent.glob("*.json") if p.name != RUN_MANIFEST and not p.name.startswith("results-")]
    assert figures, f"{manifest_path.parent}: no figures stored"
    for fig in figures:
        payload = json.loads(fig.read_text())
        assert payload["notebook"] == notebook.name, fig
        assert fig.with_suffix(".png").exists(), f"{fig.with_suffix('.png')} missing"
        for name, value in payload.get("params", {}).items():
            if name in full:
                assert value == full[name], f"{fig.name}: parameter {name} = {value!r}, run declares {full[name]!r}"


SIMULATION_RUNS = [p for p in MANIFESTS if json.loads(p.read_text())["notebook"].endswith("03b-smc-simulated.ipynb")]
SPOT_CHECKED = ("MCMC", "exact-SMC-adaptive")  # seconds per replicate even at the paper's scale


@pytest.mark.parametrize("manifest_path", SIMULATION_RUNS, ids=[p.parent.name for p in SIMULATION_RUNS])
def test_one_stored_replicate_is_recomputed_exactly(manifest_path: Path) -> None:
    _, values = _parameters(json.loads(manifest_path.read_text()))
    methods = [m for m in values["methods"] if m in SPOT_CHECKED]
    assert methods, "nothing cheap to recompute in this stored run"
    config = smc_study.StudyConfig.from_parameters({**values, "methods": methods})  # as notebook 03b does
    eps_index, run = len(values["eps_grid"]) - 1, values["n_runs"] - 1  # the last replicate of the run
    eps = values["eps_grid"][eps_index]
    replicate = smc_study.run_replicate(config, eps, values["b_grid"][eps_index], eps_index, run)
    stored = json.loads((manifest_path.parent / "fig2-boxplots.json").read_text())["data"]
    for method in config.methods:
        for k, parameter in enumerate(("mu", "sigma")):
            series = stored[f"eps{eps:g}-{method}-{parameter}"]
            assert len(series) == values["n_runs"]
            # same code, same seed: equal up to floating-point differences between CPUs
            np.testing.assert_allclose(replicate.estimates[method][k], series[run], rtol=1e-7,
                                       err_msg=f"{manifest_path.parent.name}: {method} {parameter}, eps {eps:g}, run {run}")
