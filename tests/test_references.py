"""References that must resolve: in-text author-year citations with the bibliography's 2023a/2023b
suffixes, and a ``{py:func}`` role to a missing object failing the ``-W`` build (``nitpicky``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dpbayes.book import sphinx_ext as book

ROOT = Path(__file__).resolve().parents[1]

BIB = """
@article{smith2020a, author = {Smith, Ann and Jones, Bob}, title = {First}, journal = {J}, year = {2020}}
@article{smith2020b, author = {Smith, Ann and Jones, Bob}, title = {Second}, journal = {J}, year = {2020}}
@article{doe2019, author = {Doe, Jane}, title = {Alone}, journal = {J}, year = {2019}}
"""

PAGE = """# Tiny

{cite:t}`smith2020a` and {cite:t}`smith2020b` differ from {cite:p}`doe2019`; see also {cite:p}`smith2020b`.
The validator is {py:func}`dpbayes.core.validation.check_positive`.

```{bibliography}
```
"""

API = """# API

```{eval-rst}
.. automodule:: dpbayes.core.validation
   :members: check_positive
```
"""


def tiny_book(root: Path, page: str) -> Path:
    """intro.md, one API page and a .bib, with the real book's Sphinx configuration."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config["sphinx"]
    root.mkdir(parents=True)
    (root / "intro.md").write_text(page, encoding="utf-8")
    (root / "api.md").write_text(API, encoding="utf-8")
    (root / "refs.bib").write_text(BIB, encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: api\n")
    tiny = {"title": "tiny", "only_build_toc_files": True, "execute": {"execute_notebooks": "off"},
            "bibtex_bibfiles": ["refs.bib"], "sphinx": {"extra_extensions": sphinx["extra_extensions"],
                                                        "config": sphinx["config"]}}
    (root / "_config.yml").write_text(yaml.safe_dump(tiny, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


def build(root: Path) -> subprocess.CompletedProcess[str]:
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(root), "-W", "--keep-going", "-q"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def test_year_of_label() -> None:
    assert book.year_of_label("Lakshminarayanan and Rojas, 2023a", "2023") == "2023a"
    assert book.year_of_label("Dwork et al., 2006", "2006") == "2006"
    assert book.year_of_label("Anonymous, 2020", "2019") == "2019"  # a label not ending in the year
    assert book.year_of_label("", "n.d.") == "n.d."


def test_config_is_nitpicky_and_ignores_no_dpbayes_name() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]
    assert config["nitpicky"] is True
    assert config["bibtex_reference_style"] == "dpbayes-author-year"
    ignores = config.get("nitpick_ignore_regex", [])
    for kind, target in [("py:func", "dpbayes.ubapp.optimal.no_such_function"), ("py:class", "dpbayes.release.statistic.NoSuchRelease"),
                         ("py:class", "NoSuchRelease"), ("py:mod", "dpbayes.no_such_module"),
                         ("py:func", "no_such_function")]:
        hits = [(k, r) for k, r in ignores if re.fullmatch(k, kind) and re.fullmatch(r, target)]
        assert not hits, (kind, target, hits)


@pytest.mark.xdist_group("tiny-reference-book")
def test_citations_show_label_suffixes_and_a_missing_function_fails(tmp_path: Path) -> None:
    good = tiny_book(tmp_path / "good", PAGE)
    result = build(good)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    html = (good / "_build" / "html" / "intro.html").read_text(encoding="utf-8")
    cited = re.findall(r'<a class="reference internal" href="#[^"]*" title="[^"]*">([^<]*)</a>', html)
    assert cited == ["2020a", "2020b", "Doe, 2019", "Smith and Jones, 2020b"], cited
    labels = [re.sub(r"<[^>]+>", "", m) for m in re.findall(r'class="label"><span class="fn-bracket">\[</span>(.*?)'
                                                           r'<span class="fn-bracket">\]', html)]
    assert labels == ["Doe, 2019", "Smith and Jones, 2020a", "Smith and Jones, 2020b"], labels  # the bibliography
    assert 'href="api.html#dpbayes.core.validation.check_positive"' in html

    bad = tiny_book(tmp_path / "bad", PAGE.replace("check_positive`", "check_positiv`"))
    result = build(bad)
    assert result.returncode != 0
    log = result.stdout + result.stderr
    assert "check_positiv" in log and "reference target not found" in log, log[-3000:]
