"""Progress of long loops inside a notebook, shown by ``python -m dpbayes run``.

Papermill's progress bar counts cells, so a cell that runs a simulation study for an hour shows nothing
for an hour. A notebook loop can report its own progress with :func:`reporter`; the run command points
the kernel at a small file (environment variable ``DPBAYES_PROGRESS_FILE``) and turns what is written
there into a second progress bar. The report goes to that file and never to the notebook's outputs
(anything a kernel writes to stdout or stderr, even at file-descriptor level, is captured into the
executed notebook), so executed notebooks are the same with and without it. Outside the run command
(nbval, Jupyter Book, an interactive session) :func:`reporter` returns ``None`` and nothing is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

PROGRESS_FILE_ENV = "DPBAYES_PROGRESS_FILE"

ProgressCallback = Callable[[int, int], None]


def reporter(label: str) -> ProgressCallback | None:
    """A ``progress(done, total)`` callback for a long notebook loop, or ``None`` when nobody listens.

    Parameters
    ----------
    label : str
        What is being counted, shown beside the bar (e.g. ``"03b replicates"``).

    Returns
    -------
    callable or None
        ``None`` unless ``DPBAYES_PROGRESS_FILE`` is set (the run command sets it). The callback
        replaces the file atomically with ``{"label", "done", "total"}``, so a reader never sees a
        half-written report.
    """
    if not isinstance(label, str) or not label:
        raise ValueError(f"label must be a non-empty string, got {label!r}")
    target = os.environ.get(PROGRESS_FILE_ENV)
    if not target:
        return None
    path = Path(target)

    def report(done: int, total: int) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"label": label, "done": int(done), "total": int(total)}))
        os.replace(tmp, path)

    return report


def read_report(path: Path) -> tuple[str, int, int] | None:
    """The last report in ``path`` as ``(label, done, total)``, or ``None`` if there is none yet."""
    try:
        payload = json.loads(Path(path).read_text())
        return str(payload["label"]), int(payload["done"]), int(payload["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
