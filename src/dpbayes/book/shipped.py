"""The library the book was built from, shipped inside the built book (a Sphinx extension).

Every HTML build (``make book``, the browser tests' build) writes into ``_shipped/`` of its output:

* the wheel of ``dpbayes`` built from this checkout's ``pyproject.toml`` and ``src/`` (``pip wheel --no-deps`` on a
  copy, so the checkout gets no ``build/``); ``pip install "<wheel>[release,data]"`` is the install line of
  "Using dpbayes on your data";
* the repository's source at the build commit (``git archive HEAD``, committed files only: the chapters, the
  stored outputs, the tests, everything ``make book`` and ``make test`` need), when the book is built from a git
  checkout;
* the whole book as one PDF, when ``make pdf`` has built it (``_build/pdf/dpbayes-book.pdf``; it prints the
  stored outputs of the same checkout, so build it first when the book is to carry it);
* ``SHA256SUMS``, in the format ``sha256sum -c`` reads.

Pages link them with the role ``{shipped}`wheel```, ``{shipped}`source``` or ``{shipped}`pdf```: the file name,
linked, and its SHA-256. A page that names a wheel or source the build could not make (no git checkout) gets a
build warning, which ``-W`` turns into an error; a PDF that was not built is said so in the text.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SHIPPED_DIR", "PDF", "Shipped", "build_wheel", "build_source", "sha256", "ship"]

#: The folder of the built book that holds the artefacts.
SHIPPED_DIR = "_shipped"
#: Where ``make pdf`` leaves the book's PDF, relative to the book's root.
PDF = "_build/pdf/dpbayes-book.pdf"


@dataclass(frozen=True)
class Shipped:
    """One artefact: its file name under :data:`SHIPPED_DIR`, SHA-256 (hex) and size in bytes."""

    name: str
    sha256: str
    size: int


def sha256(path: Path) -> str:
    """The file's SHA-256, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_wheel(root: Path, out: Path) -> Path:
    """The wheel of ``root``'s library, built from a copy of its packaging files and ``src/`` into ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "src-copy"
        copy.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(root / name, copy / name)
        shutil.copytree(root / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(copy)],
                       check=True, capture_output=True, text=True)
    wheels = sorted(out.glob("dpbayes-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one dpbayes wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def build_source(root: Path, out: Path) -> Path | None:
    """``git archive`` of ``HEAD`` as ``dpbayes-src-<commit>.tar.gz`` in ``out``; ``None`` outside a git checkout."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return None
    commit = head.stdout.strip()
    path = out / f"dpbayes-src-{commit}.tar.gz"
    subprocess.run(["git", "-C", str(root), "archive", "--format=tar.gz", f"--prefix=dpbayes-src-{commit}/", "-o", str(path),
                    "HEAD"], check=True, capture_output=True, text=True)
    return path


def ship(root: Path, outdir: Path) -> dict[str, Shipped]:
    """Build the artefacts into ``outdir / SHIPPED_DIR`` (emptied first); ``{"wheel": ..., "source": ...}``."""
    target = Path(outdir) / SHIPPED_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    made = {"wheel": build_wheel(Path(root), target), "source": build_source(Path(root), target), "pdf": None}
    if (Path(root) / PDF).is_file():
        made["pdf"] = Path(shutil.copy2(Path(root) / PDF, target / Path(PDF).name))
    shipped = {kind: Shipped(path.name, sha256(path), path.stat().st_size) for kind, path in made.items() if path is not None}
    (target / "SHA256SUMS").write_text("".join(f"{s.sha256}  {s.name}\n" for s in shipped.values()), encoding="utf-8")
    return shipped


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes

    def _ship(app: Any) -> None:
        # a book without the library beside it (a test's small book) ships nothing; a page naming an artefact warns
        root = Path(app.srcdir)
        has_library = (root / "pyproject.toml").is_file() and (root / "src").is_dir()
        app._dpbayes_shipped = ship(root, Path(app.outdir)) if app.builder.format == "html" and has_library else {}

    def shipped_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None) -> Any:
        env = inliner.document.settings.env
        env.note_reread()  # the hash changes with every build commit: never keep this page's doctree cached
        found = getattr(env.app, "_dpbayes_shipped", {})
        kind = text.strip()
        if kind == "pdf" and kind not in found:
            return [nodes.Text("not part of this build ("), nodes.literal("make pdf", "make pdf"), nodes.Text(" builds it)")], []
        if kind not in ("wheel", "source", "pdf") or kind not in found:
            msg = inliner.reporter.warning(f"shipped: no artefact {kind!r} in this build (wheel; source needs a git checkout)",
                                           line=lineno)
            return [inliner.problematic(rawtext, rawtext, msg)], [msg]
        art = found[kind]
        up = "../" * env.docname.count("/")
        link = nodes.reference("", "", nodes.literal(art.name, art.name), refuri=f"{up}{SHIPPED_DIR}/{art.name}")
        size = f"{art.size / 1e6:.1f} MB" if art.size >= 1e5 else f"{art.size / 1e3:.0f} kB"
        return [link, nodes.Text(f" ({size}, SHA-256 "), nodes.literal(art.sha256, art.sha256), nodes.Text(")")], []

    app.connect("builder-inited", _ship)
    app.add_role("shipped", shipped_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
