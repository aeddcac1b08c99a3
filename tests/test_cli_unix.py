"""Issue 28, item 2: the command line behaves like any Unix tool.

A missing value is an error naming the option (not the next option taken as the value); a default
given explicitly plans the same run as leaving it out; output to a closed pipe ends quietly; the
help is plain text with one example per subcommand (the examples themselves are executed by
``tests/test_doc_commands.py``). Everything here plans or prints; no notebook is executed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpbayes.book import cli

ROOT = Path(__file__).resolve().parents[1]
CH4 = "chapters/04-counting-queries"


def dpbayes(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, **kwargs)


@pytest.mark.parametrize(("args", "message"), [
    (["-p", "eps", "--dry-run"], "error: -p eps is missing its value before --dry-run: -p NAME VALUE or -p NAME=VALUE"),
    (["-p", "eps", "-p", "seed", "2"], "error: -p eps is missing its value before -p: -p NAME VALUE or -p NAME=VALUE"),
    (["-p", "eps", "--jobs", "2"], "error: -p eps is missing its value before --jobs: -p NAME VALUE or -p NAME=VALUE"),
    (["-p", "--dry-run"], "error: -p is missing its parameter name and value before --dry-run: -p NAME VALUE or -p NAME=VALUE"),
    (["--dry-run", "-p", "eps"], "error: -p eps is missing its value: -p NAME VALUE or -p NAME=VALUE"),
    (["--param=eps", "--dry-run"], "error: -p eps is missing its value before --dry-run: -p NAME VALUE or -p NAME=VALUE"),
    # a value may start with one '-': the range check refuses it, not the parser
    (["-p", "eps", "-1", "--dry-run"], "error: parameter eps of 04b-bayes-vs-naive.ipynb must lie in (0, inf), got -1.0"),
])
def test_a_missing_value_is_an_error_naming_the_option(tmp_path, args, message):
    result = dpbayes("run", CH4, "--out", str(tmp_path / "runs"), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [message]
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def _planned(*args: str) -> list[str]:
    result = dpbayes("run", *args, "--dry-run")
    assert result.returncode == 0, result.stderr
    return [line.split(" -> ")[1] for line in result.stdout.splitlines() if " -> " in line]


def test_a_default_given_explicitly_plans_the_same_run_as_leaving_it_out():
    nb = f"{CH4}/04b-bayes-vs-naive.ipynb"  # eps 0.1, seed 1, eps_mc [0.01, ..., 10] by default
    assert _planned(nb, "-p", "seed", "1") == _planned(nb)
    assert _planned(nb, "-p", "seed=1", "-p", "eps", "0.10") == _planned(nb)
    assert _planned(nb, "-p", "eps_mc", "0.01,0.03,0.1,0.3,1,3,10") == _planned(nb)
    assert _planned(nb, "-p", "seed", "2") != _planned(nb)
    # on a chapter (04a and 04b declare seed), and in a sweep: the same runs in the same sweep
    assert _planned(CH4, "-p", "seed", "1", "-p", "n", "100") == _planned(CH4, "-p", "seed", "1")
    sweep = _planned(nb, "-p", "eps", "0.1,0.5")
    assert _planned(nb, "-p", "eps", "0.1,0.5", "-p", "seed", "1") == sweep
    assert sweep[0].rsplit("/", 1)[1] == _planned(nb)[0].rsplit("/", 1)[1]  # eps 0.1 is the default run
    # the dry run says so, and a sweep's summary still shows the value given
    shown = dpbayes("run", nb, "-p", "seed", "1", "--dry-run").stdout
    assert '{"seed": 1} (= the defaults) -> ' in shown
    jobs, is_sweep, _ = cli.plan_jobs(ROOT / nb, {"eps": "0.1,0.5", "seed": "1"}, ROOT / "runs", False, ROOT)
    assert is_sweep and [j.values for j in jobs] == [{}, {"eps": 0.5}]
    assert [j.shown for j in jobs] == [{"eps": 0.1, "seed": 1}, {"eps": 0.5, "seed": 1}]


def test_params_into_a_closed_pipe_ends_quietly():
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails (EPIPE), as after `| head -1` has read its line
    try:
        proc = subprocess.run([sys.executable, "-m", "dpbayes", "params", "chapters"], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode == cli.EXIT_BROKEN_PIPE == 141  # what a Unix tool that SIGPIPE ends returns
    # and as a reader types it
    shell = subprocess.run(["bash", "-c", f"{sys.executable} -m dpbayes params chapters | head -1"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0 and shell.stderr == ""
    assert shell.stdout == "| Notebook | Parameter | Type | Default | Allowed | Meaning |\n"


def _helps() -> dict[str, str]:
    parser = cli.build_parser()
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": parser.format_help(), **{name: p.format_help() for name, p in subcommands.choices.items()}}


MARKUP = re.compile(r"`|:(func|mod|class|meth|data|attr):|\*\*|^\s*\.\. ", re.M)


def test_help_is_plain_text_with_one_example_per_subcommand():
    helps = _helps()
    assert set(helps) == {"", "run", "params", "store-run", "verify-run", "redraw"}
    for name, text in helps.items():
        assert not MARKUP.search(text), f"--help of {name or 'python -m dpbayes'}: markup {MARKUP.search(text).group()!r}"
    for name in cli.EXAMPLES:
        assert helps[name].rstrip().endswith(f"\nexample:\n  {cli.EXAMPLES[name]}"), helps[name]
        assert f"\n  {cli.EXAMPLES[name]}\n" in helps[""]
    assert "  target      a chapter folder, a notebook (.ipynb), or chapters" in helps["params"]
    # what a reader sees is what the parser prints
    result = dpbayes("run", "--help", env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0 and not MARKUP.search(result.stdout)
    assert result.stdout.rstrip().endswith(f"\nexample:\n  {cli.EXAMPLES['run']}")
