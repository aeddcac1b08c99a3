"""How to cite (issue "A book read in layers"): ``CITATION.cff`` is the one place that names the authors and
the version; the "How to cite" page and every page's footer are built from it (``dpbayes.book.sphinx_ext``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from dpbayes.book import sphinx_ext as book

ROOT = Path(__file__).resolve().parents[1]


def test_citation_file_matches_the_package_and_the_book() -> None:
    meta = book.citation_metadata(ROOT)
    assert meta["cff-version"] == "1.2.0"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert str(meta["version"]) == project["version"]  # one version, declared twice: they must agree
    assert meta["license"] == project["license"]["text"]
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert "author" not in config, "authors come from CITATION.cff only"
    assert book.citation_authors(meta)
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "file: how-to-cite" in toc and (ROOT / "how-to-cite.md").exists()
    assert "```{dpbayes-citation}" in (ROOT / "how-to-cite.md").read_text(encoding="utf-8")


def test_citation_file_without_a_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "CITATION.cff").write_text("cff-version: 1.2.0\ntitle: t\nauthors:\n  - name: x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="missing version"):
        book.citation_metadata(tmp_path)


def test_citation_block_and_footer() -> None:
    meta = {"title": "A book", "version": "1.2.3",
            "authors": [{"given-names": "Ada", "family-names": "Lovelace"}, {"name": "The team"}]}
    assert book.citation_authors(meta) == ["Ada Lovelace", "The team"]
    text = book.citation_markdown(meta, ("abc1234", "2026-11-28"))
    assert text.splitlines()[0] == "Ada Lovelace, The team (2026). *A book*. Version 1.2.3, commit abc1234 (2026-11-28)."
    assert "  version = {1.2.3}," in text and "  year = {2026}," in text and "```bibtex" in text
    assert "(20" not in book.citation_markdown(meta, None).splitlines()[0]  # no commit: no year invented
    long = book.citation_markdown({**meta, "title": "word " * 30}, None)
    assert max(len(line) for line in long.splitlines() if not line.startswith("Ada")) <= 72
    footer = book.footer_html(meta, ("abc1234", "2026-11-28"), "../how-to-cite.html")
    assert footer == ('<p>dpbayes 1.2.3 · built from commit abc1234 (2026-11-28) · '
                      '<a href="../how-to-cite.html">How to cite</a></p>')


def test_footer_links_the_repository_when_the_citation_names_it() -> None:
    meta = {"title": "A book", "version": "1.0", "authors": [{"name": "T"}], "repository-code": "https://example.org/r"}
    assert '<a href="https://example.org/r">source repository</a>' in book.footer_html(meta, None, "how-to-cite.html")
    assert "  url = {https://example.org/r}," in book.citation_markdown(meta, None)


def test_build_commit_outside_a_checkout(tmp_path: Path) -> None:
    assert book.build_commit(tmp_path) is None
