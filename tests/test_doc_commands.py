"""Every shell command the documentation shows runs as written.

The fenced ``bash`` blocks of README.md, rerun.md and CONTRIBUTING.md, the examples that the
``{dpbayes-run-examples}`` directive generates into rerun.md, and the example that each
subcommand's ``--help`` shows (``python -m`` there, ``.venv/bin/python -m`` here) are extracted line
by line and checked:

* ``python -m dpbayes run ...``: executed with ``--dry-run`` (every parameter and constraint is
  validated, nothing runs); it must succeed, or, when the next line is ``# error: MESSAGE``, exit
  with 2 and print exactly that message;
* ``python -m dpbayes params|verify-run|redraw ...``: executed (``verify-run`` and ``redraw`` with ``--dry-run``);
* ``python -m dpbayes store-run RUN --as LABEL``: ``RUN`` must be the directory that the ``run``
  command before it in the same block plans, and ``LABEL`` a valid label not stored yet (or ``--force``);
* ``make TARGET``: ``make -n TARGET`` must succeed (the target exists; nothing is built);
* ``.venv/bin/dask scheduler|worker ...`` (starting a Dask cluster, see rerun.md): the arguments are
  parsed by Dask's own command-line parser, which must accept every option and value; nothing starts.
  ``tests/test_dask_tls.py`` starts the TLS cluster of rerun.md from those very lines on 127.0.0.1;
* ``mkdir ...`` and ``openssl ...`` (making the Dask cluster's key and certificate): executed in a
  temporary directory standing in for the home directory (``~`` is expanded to it); every file
  named by ``-keyout``/``-out`` must then exist;
  A ``run``/``verify-run`` with ``--scheduler ADDRESS`` is checked with ``--dry-run`` like any other,
  which validates the address but does not contact it (``tests/test_dask.py`` runs them on a real
  loopback cluster).

A command of any other form fails the test, so a new kind of example needs a rule here.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dpbayes.book.sphinx_ext import run_examples_markdown
from dpbayes.book.figures import STORED_RUNS_DIR

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "rerun.md", "CONTRIBUTING.md")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def shell_blocks(text: str) -> list[list[str]]:
    """The lines of every fenced block marked bash/sh/shell/console (indented fences included)."""
    blocks, current, indent = [], None, ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if current is None and m and m.group(2) in ("bash", "sh", "shell", "console"):
            current, indent = [], m.group(1)
        elif current is not None and m and not m.group(2):
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line[len(indent):] if line.startswith(indent) else line.strip())
    return blocks


def logical_lines(block: list[str]) -> list[str]:
    """The block's lines with every shell continuation joined: a command line ending in ``\\``
    goes on with the next line (the book breaks long commands so that they fit its column)."""
    out: list[str] = []
    pending: str | None = None
    for line in block:
        if pending is not None:
            line, pending = f"{pending} {line.strip()}", None
        stripped = line.rstrip()
        if stripped.endswith("\\") and not stripped.lstrip().startswith("#"):
            pending = stripped[:-1].rstrip()
            continue
        out.append(line)
    if pending is not None:
        raise ValueError(f"the last command of the block ends in a continuation: {pending!r}")
    return out


def commands(block: list[str]) -> list[tuple[list[str], str | None]]:
    """(argv, expected error or None) per command (continued lines joined); ``# or: CMD`` in a
    comment is a command too."""
    out: list[tuple[list[str], str | None]] = []
    block = logical_lines(block)
    for i, line in enumerate(block):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        expected = None
        if i + 1 < len(block) and block[i + 1].strip().startswith("# error:"):
            expected = block[i + 1].strip()[2:]
            for more in block[i + 2:]:  # a long message continues on comment lines indented by "#   "
                if not more.startswith("#   "):
                    break
                expected += " " + more[1:].strip()
        out.append((shlex.split(stripped, comments=True), expected))
        alternative = re.search(r"#\s*or:\s*(.+)$", stripped)
        if alternative:
            out.append((shlex.split(alternative.group(1), comments=True), None))
    return out


def collect() -> list[tuple[str, list[tuple[list[str], str | None]]]]:
    cases = []
    for doc in DOCS:
        for k, block in enumerate(shell_blocks((ROOT / doc).read_text(encoding="utf-8"))):
            cases.append((f"{doc}#{k}", commands(block)))
    for k, block in enumerate(shell_blocks(run_examples_markdown(ROOT))):
        cases.append((f"dpbayes-run-examples#{k}", commands(block)))
    cases.append(("--help", commands([f".venv/bin/{line}" for line in help_examples()])))
    return [(name, cmds) for name, cmds in cases if cmds]


def help_examples() -> list[str]:
    """The example that each subcommand's ``--help`` shows (one each, in the order of the
    subcommands: the ``store-run`` example stores the run that the ``run`` example plans)."""
    from dpbayes.book.cli import build_parser

    (subcommands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    examples = []
    for name, parser in subcommands.choices.items():
        head, sep, tail = parser.format_help().partition("\nexample:\n")
        lines = [line.strip() for line in tail.strip().splitlines()]
        assert sep and len(lines) == 1 and lines[0].startswith(f"python -m dpbayes {name} "), \
            f"`python -m dpbayes {name} --help` must end with one example: {tail!r}"
        examples.append(lines[0])
    return examples


CASES = collect()


def _dpbayes(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def _check_dask_command(name: str, argv: list[str], home: Path) -> None:
    """``dask scheduler|worker ARGS`` parsed by Dask's click command, without starting anything.

    Dask's parser wants the files of the ``--tls-*`` options to exist: ``~/`` is expanded to the
    stand-in ``home``, where empty files take their place (their contents are
    ``tests/test_dask_tls.py``'s business)."""
    import click

    from distributed.cli import dask_scheduler, dask_worker

    commands = {"scheduler": dask_scheduler.main, "worker": dask_worker.main}
    assert argv[1] in commands, f"{name}: no rule for `{' '.join(argv)}`"
    argv = [str(home / a[2:]) if a.startswith("~/") else a for a in argv]
    for option, value in zip(argv, argv[1:]):
        if option.startswith("--tls-") and not Path(value).exists():
            Path(value).parent.mkdir(parents=True, exist_ok=True)
            Path(value).touch()
    try:
        ctx = commands[argv[1]].make_context(f"dask {argv[1]}", list(argv[2:]))
    except click.ClickException as exc:
        pytest.fail(f"{name}: `{' '.join(argv)}`: {exc.format_message()}")
    # `dask worker` passes unknown options on to preload scripts instead of refusing them
    assert not ctx.params.get("preload_argv"), f"{name}: `{' '.join(argv)}`: unknown options {ctx.params['preload_argv']}"


def _top_level() -> list[str]:
    return sorted(os.listdir(ROOT))


#: Commands that make files in the home directory: run in a stand-in home (see :func:`_run_in_home`).
IN_HOME = ("mkdir", "openssl")


def _run_in_home(name: str, argv: list[str], home: Path) -> None:
    """``argv`` with ``~/`` expanded to ``home``, run in ``home``: it must succeed, and every file
    named by ``-keyout`` or ``-out`` must exist afterwards."""
    argv = [str(home / a[2:]) if a.startswith("~/") else str(home) if a == "~" else a for a in argv]
    result = subprocess.run(argv, cwd=home, env={**os.environ, "HOME": str(home)}, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"{name}: `{' '.join(argv)}`: {result.stderr.strip()}"
    for option in ("-keyout", "-out"):
        if option in argv:
            assert Path(argv[argv.index(option) + 1]).is_file(), f"{name}: `{' '.join(argv)}` made no {option} file"


def _check_folding_command(name: str, argv: list[str], tmp: Path) -> None:
    """``python -m dpbayes.book.folding [--apply] NOTEBOOK``: the check runs on the notebook as written
    (exit 0, every cell folded as the rule says, or 1 with the list); ``--apply`` runs on a copy in
    ``tmp`` (nothing in the repository is written) and must leave the copy's sources and outputs as
    they were and pass the check afterwards."""
    import nbformat

    notebook = ROOT / argv[-1]
    assert notebook.is_file(), f"{name}: `{' '.join(argv)}`: no notebook {argv[-1]}"
    target = argv[-1]
    if "--apply" in argv:
        copy = tmp / notebook.name
        copy.write_bytes(notebook.read_bytes())
        target = str(copy)
    result = subprocess.run([sys.executable, *argv[1:-1], target], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr, f"{name}: `{' '.join(argv)}`: {result.stderr}"
    if "--apply" in argv:
        assert result.returncode == 0, f"{name}: `{' '.join(argv)}`: {result.stderr}"
        before, after = (nbformat.read(p, as_version=4) for p in (notebook, Path(target)))
        assert [(c.source, c.get("outputs")) for c in before.cells] == [(c.source, c.get("outputs")) for c in after.cells]
        again = subprocess.run([sys.executable, *argv[1:3], target], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, f"{name}: the notebook still has cells to fold after --apply: {again.stdout}"


@pytest.mark.parametrize("name,cmds", CASES, ids=[name for name, _ in CASES])
def test_documented_commands_run_as_written(name: str, cmds: list[tuple[list[str], str | None]], tmp_path: Path) -> None:
    before = _top_level()
    planned: list[str] = []
    for argv, expected in cmds:
        shown = " ".join(argv)
        if argv[0] in IN_HOME:
            _run_in_home(name, argv, tmp_path)
            continue
        if argv[0] == "make":
            result = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, f"{name}: `{shown}`: {result.stderr.strip()}"
            continue
        if argv[0] == ".venv/bin/dask":
            _check_dask_command(name, argv, tmp_path)
            continue
        if argv[:3] == [".venv/bin/python", "-m", "dpbayes.book.folding"]:
            _check_folding_command(name, argv, tmp_path)
            continue
        if argv[:3] == [".venv/bin/python", "-m", "dpbayes.book.pagesize"]:
            # read-only: prints the page's size; exit 0 within the targets, 1 above them
            result = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert result.returncode in (0, 1) and "words" in result.stdout, f"{name}: `{shown}`: {result.stderr}"
            continue
        assert argv[:3] == [".venv/bin/python", "-m", "dpbayes"], f"{name}: no rule for the command `{shown}`"
        assert (ROOT / argv[0]).parent.name == "bin"
        sub, args = argv[3], argv[4:]
        if sub == "run":
            result = _dpbayes(["run", *args, "--dry-run"])
            if expected is not None:
                assert result.returncode == 2, f"{name}: `{shown}` should fail: {result.stdout}{result.stderr}"
                assert result.stderr.strip().splitlines()[-1] == expected, f"{name}: `{shown}`"
                continue
            assert result.returncode == 0, f"{name}: `{shown}`: {result.stderr.strip()}"
            planned += [line.split(" -> ")[1] for line in result.stdout.splitlines() if " -> " in line]
        elif sub == "store-run":
            run_dir, label = args[0], args[args.index("--as") + 1]
            assert run_dir in planned, f"{name}: `{shown}`: {run_dir} is not the run the command before it makes ({planned})"
            from dpbayes.book.cli import check_label

            check_label(label)
            stored = list((ROOT / "figures").glob(f"*/{STORED_RUNS_DIR}/{label}"))
            assert not stored or "--force" in args, f"{name}: `{shown}` would be refused: {stored[0]} exists"
        elif sub in ("params", "verify-run", "redraw"):
            result = _dpbayes([sub, *args, *(["--dry-run"] if sub in ("verify-run", "redraw") else [])])
            assert result.returncode == 0, f"{name}: `{shown}`: {result.stderr.strip()}"
            assert result.stdout.strip()
        else:
            pytest.fail(f"{name}: no rule for `python -m dpbayes {sub}`")
    assert _top_level() == before, "a documented command wrote into the repository"


def test_contributing_parameters_example_parses() -> None:
    """The parameters-cell example of CONTRIBUTING.md is valid grammar (it is Python, not shell)."""
    from dpbayes.book.params import parse_parameters_source

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    # the one python block written in the parameters grammar ("Numbers on pages" has another python block)
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "; range" in b]
    lines = "\n".join(line.strip() for line in example.splitlines())
    assert set(parse_parameters_source(lines)) >= {"eps", "K", "seed"}


def test_continued_command_lines_are_one_command() -> None:
    block = [
        "# a comment ending in a backslash \\",
        ".venv/bin/python -m dpbayes run \\",
        "    chapters/01-ubapp/01a-lp-and-exact-solver.ipynb \\",
        "    -p K 0",
        "# error: parameter K must lie in [1, 100000], got 0",
        "make test",
    ]
    assert commands(block) == [
        ([".venv/bin/python", "-m", "dpbayes", "run", "chapters/01-ubapp/01a-lp-and-exact-solver.ipynb", "-p", "K", "0"],
         "error: parameter K must lie in [1, 100000], got 0"),
        (["make", "test"], None),
    ]
    with pytest.raises(ValueError, match="continuation"):
        logical_lines(["make \\"])
    # a long expected error continues on comment lines indented by "#   "
    long_error = ["make x", "# error: the first part", "#   and the rest", "# a plain comment"]
    assert commands(long_error) == [(["make", "x"], "error: the first part and the rest")]


def test_extraction_sees_the_readme_examples() -> None:
    """The extraction itself must not silently find nothing."""
    readme = [c for name, cmds in CASES if name.startswith("README.md") for c, _ in cmds]
    assert ["make", "test"] in readme
    assert any(c[3:6] == ["run", "chapters/04-counting-queries", "-p"] for c in readme if len(c) > 5)
    assert any(name.startswith("dpbayes-run-examples") for name, _ in CASES)
    # the generated examples are continued over several lines; each is still one whole command
    generated = [c for name, cmds in CASES if name.startswith("dpbayes-run-examples") for c, _ in cmds]
    assert generated and all(c[:4] == [".venv/bin/python", "-m", "dpbayes", "run"] and "-p" in c for c in generated)
