"""Which notebooks compute differently on the narrow floating-point path: ``make narrow-survey``.

Runs every notebook at its default parameters twice through ``python -m dpbayes run``, on this
machine's own path and on the narrow one (:mod:`narrow_cpu`), and compares every output nbval
compares and every figure's data, exactly (:func:`notebook_runs.comparable_outputs`). Writes
``tests/narrow-survey.json``: the notebooks that differ and those that do not, with what differed.
The record's ``guarded`` notebooks (chosen among those that do not, and kept from the previous record
unless they now differ) are left out of ``make notebooks-narrow`` and checked by
``test_narrow_guard.py`` instead; every other notebook is validated there in full. About two full runs
of the book (15-20 minutes on 2 cores); run it when a notebook is added or when the guard fails.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from narrow_cpu import narrow_environment  # noqa: E402
from notebook_runs import NOTEBOOKS, ROOT, comparable_outputs, differences, run_at_test_values  # noqa: E402

SURVEY = ROOT / "tests" / "narrow-survey.json"


def _numbers(value: object) -> list[float]:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _numbers(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    return []


def _largest_relative(a: object, b: object) -> float | None:
    """Largest relative difference between the numbers of two figure data (None: not comparable that way)."""
    xa, xb = _numbers(a), _numbers(b)
    if not xa or len(xa) != len(xb):
        return None
    rel = [abs(p - q) / max(abs(p), abs(q)) for p, q in zip(xa, xb) if p != q and math.isfinite(p) and math.isfinite(q)]
    return max(rel, default=0.0)


def survey_one(notebook: Path, base: Path) -> dict:
    rel = notebook.relative_to(ROOT).as_posix()
    runs, seconds = {}, {}
    for path, extra in (("own", {}), ("narrow", narrow_environment())):
        t0 = time.perf_counter()
        run_dir, result = run_at_test_values(notebook, base / path / notebook.stem, env=dict(os.environ, **extra), values={})
        seconds[path] = round(time.perf_counter() - t0, 1)
        if result.returncode != 0:
            raise SystemExit(f"{rel} failed on the {path} path:\n{result.stdout}{result.stderr}")
        runs[path] = comparable_outputs(run_dir, notebook)
    keys = differences(runs["own"], runs["narrow"])
    rels = [_largest_relative(runs["own"].get(k), runs["narrow"].get(k)) for k in keys if k.startswith("figure ")]
    print(f"{rel}: {'differs in ' + str(len(keys)) + ' outputs' if keys else 'the same'} ({seconds['own']} s, {seconds['narrow']} s)", flush=True)
    return {"notebook": rel, "differing": keys, "seconds": seconds,
            "largest_relative_in_figures": max((r for r in rels if r is not None), default=None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=SURVEY)
    parser.add_argument("--only", nargs="+", type=Path, metavar="NOTEBOOK",
                        help="survey these notebooks again and keep the record of the others")
    args = parser.parse_args()
    git = ["git", "describe", "--always", "--dirty"]
    commit = subprocess.run(git, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    chosen = NOTEBOOKS if not args.only else [ROOT / p.resolve().relative_to(ROOT) for p in args.only]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda nb: survey_one(nb, Path(tmp)), chosen))
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    details = previous.get("details", {}) if args.only else {}
    for r in results:
        details[r["notebook"]] = {"differing": r["differing"], "largest_relative_in_figures": r["largest_relative_in_figures"],
                                  "seconds": r["seconds"], "commit": commit, "measured_utc": when}
    order = [nb.relative_to(ROOT).as_posix() for nb in NOTEBOOKS]
    details = {k: details[k] for k in order if k in details}
    differ = {k for k, d in details.items() if d["differing"]}
    record = {
        "what": "notebooks whose outputs or figure data differ between this machine's floating-point path and the narrow one "
                "(tests/narrow_cpu.py), each run at its defaults on both (tests/narrow_survey.py)",
        "narrow_path": narrow_environment(),
        # the choice of guarded notebooks and the guard's measured power are kept; one that now differs is validated in full
        "guarded": [nb for nb in previous.get("guarded", []) if nb not in differ],
        "guard_rule": previous.get("guard_rule", ""),
        "guard_power": previous.get("guard_power", {}),
        # surveys of the same notebooks on other kinds of CPU (kept; a new one is added by hand from --out elsewhere)
        "other_machines": previous.get("other_machines", []),
        "differ": [k for k, d in details.items() if d["differing"]],
        "same": [k for k, d in details.items() if not d["differing"]],
        "details": details,
    }
    tmp_out = args.out.with_suffix(".partial")
    tmp_out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    tmp_out.replace(args.out)  # never half a record
    print(f"{len(record['differ'])} of {len(details)} notebooks differ on the narrow path: {args.out}")


if __name__ == "__main__":
    main()
