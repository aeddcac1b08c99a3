"""``--dist loadgroup`` keeps each ``xdist_group`` on one worker (``make unit`` relies on it).

The Dask, TLS and packaging tests are marked ``xdist_group``: their module-scoped fixtures (a cluster,
a built wheel) are built once, on one worker. pytest 9.2 with pytest-xdist 3.8 dropped the grouping
silently (pytest-dev/pytest-xdist#1386), so each worker built its own; requirements.txt pins the
pytest that groups. This runs a tiny suite with two groups on two workers and checks where each
test ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = '''
import json, os, pytest

def _record(name):
    with open(os.environ["WHERE"], "a") as fh:
        fh.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")

@pytest.mark.parametrize("k", range(4))
@pytest.mark.xdist_group("first")
def test_first(k):
    _record(f"first{k}")

@pytest.mark.parametrize("k", range(4))
@pytest.mark.xdist_group("second")
def test_second(k):
    _record(f"second{k}")
'''


def test_each_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    where = tmp_path / "where.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "test_suite.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "WHERE": str(where)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ran = [json.loads(line) for line in where.read_text().splitlines()]
    assert len(ran) == 8, ran
    workers = {group: {w for name, w in ran if name.startswith(group)} for group in ("first", "second")}
    assert all(len(w) == 1 for w in workers.values()), f"a group was split over workers: {workers}"
