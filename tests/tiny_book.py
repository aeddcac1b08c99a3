"""A one-notebook book in a temporary directory, for end-to-end tests of `python -m dpbayes run`."""

import signal
from pathlib import Path

import nbformat


def sigint_as_at_a_terminal() -> None:
    """``preexec_fn`` for a command a test interrupts with SIGINT, as Ctrl-C at a terminal would.

    A job started in the background by a non-interactive shell (``make test &`` in a script, a CI
    runner's background step) inherits SIGINT *ignored*, and Python then keeps it ignored: the
    command would never see the test's Ctrl-C. Restoring the default lets Python install its
    KeyboardInterrupt handler, as in an interactive shell."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_tiny_book(root: Path, notebook: str, parameters: str, body: str, title: str | None = None) -> Path:
    """Write ``_toc.yml`` and ``chapters/00-demo/<notebook>`` (optional title cell, a ``parameters``
    cell, one code cell) under ``root``; return ``root``."""
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    chapter = root / "chapters" / "00-demo"
    chapter.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = ([nbformat.v4.new_markdown_cell(title)] if title else []) + [
        nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(body),
    ]
    nbformat.write(nb, chapter / notebook)
    return root
