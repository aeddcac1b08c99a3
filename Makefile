# The two commands of README.md: `make book` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CACHE := _build/.jupyter_cache
FRESH_FIGURES := _build/test-figures
FRESH_FIGURES_NARROW := _build/test-figures-narrow
# every notebook's run at its test parameters, kept by `make unit` for the narrow-path guard
KEPT_RUNS := _build/nondefault-runs
# the notebooks the narrow path validates in full: all but the guarded ones of tests/narrow-survey.json
NARROW_NOTEBOOKS = $(shell $(PYTHON) tests/narrow_cpu.py --validated)
# nbval with numbers compared to a tolerance (tests/nbval_numeric.py; rules in CONTRIBUTING.md)
NBVAL_FLAGS := --nbval -p tests.nbval_numeric --nbval-sanitize-with tests/nbval-sanitize.cfg -p no:cacheprovider
JOBS ?= 2
UV := uv==0.13.10
# Offline MathJax 3 for the rendered book (copied into _build/html/_static/mathjax by dpbayes.book.sphinx_ext).
BOOK_PACKAGES := django-static-mathjax==3.2.2.1
BOOK_STAMP := $(VENV)/.installed-$(subst ==,-,$(BOOK_PACKAGES))
# The browser test renders the stored notebook outputs (just validated by nbval) without executing.
BROWSER_DIR := _build/browser
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: book test lint unit notebooks figures notebooks-narrow figures-narrow narrow-survey browser browser-build browser-check chromium setup clean verify-runs pdf

setup: $(STAMP) $(BOOK_STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the pinned packages by uv (itself from PyPI, pinned): the same versions as pip installs (compared
	# with pip freeze), in about 14 s instead of about 60 s on a new machine; pip if uv cannot. Compiled to
	# bytecode at install as pip does: where PYTHONDONTWRITEBYTECODE is set (CI), every process would
	# otherwise compile what it imports again (make unit took 620 s instead of 517 s that way)
	$(BIN)/python -m pip install --quiet $(UV) && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.txt \
	  || $(BIN)/python -m pip install --quiet -r requirements.txt
	# diffprivlib's wheel ships a top-level package named `tests`, which would hide this repository's
	# tests/ (nbval loads the plugin tests.nbval_numeric): remove that stray package
	rm -rf $(VENV)/lib/python*/site-packages/tests
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	# kernels started from this venv (nbval, Jupyter Book) listen on 127.0.0.1 only: silence their
	# TCP-without-encryption warning, as `python -m dpbayes run` does on its command line
	mkdir -p $(VENV)/etc/ipython
	echo 'c.IPKernelApp.log_level = "ERROR"' > $(VENV)/etc/ipython/ipython_kernel_config.py
	touch $(STAMP)

# the packages only the rendered book needs (the stamp's name changes with their versions)
$(BOOK_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(BOOK_PACKAGES)
	touch $(BOOK_STAMP)

# jupyter-cache keys a notebook on its code cells only: drop the cache when the library changes,
# and Sphinx's saved environment too (otherwise unchanged notebooks are not re-read, so not re-run).
# (src/dpbayes/book/sphinx_ext.py is the book's Sphinx extension: it does not change any notebook output.)
book: $(STAMP) $(BOOK_STAMP)
	@mkdir -p _build
	@hash=$$(find src \( -name '*.py' -o -name '*.mplstyle' \) ! -name sphinx_ext.py | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); \
	if [ "$$(cat _build/.src-hash 2>/dev/null)" != "$$hash" ]; then \
	  echo "library changed: clearing the execution cache and Sphinx's environment"; \
	  rm -rf $(CACHE) _build/.doctrees _build/jupyter_execute; echo $$hash > _build/.src-hash; fi
	$(BIN)/jupyter-book build . --path-output . -W --keep-going

# The stages in order, except that the three which mostly wait or use one core (lint and mypy, the book
# rendered from the stored outputs for the browser test, Chromium's install) run side by side first.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target lint browser-build chromium
	$(MAKE) --no-print-directory unit notebooks figures notebooks-narrow figures-narrow browser-check

# The stages that run JOBS processes side by side (pytest-xdist workers, each notebook's kernel) give each one
# BLAS thread: OpenBLAS's threads spin while they wait, and with JOBS processes on as many cores its small
# calls (L-BFGS-B's level-1 operations in the minimax solver) ran several times slower than on one thread.
unit notebooks notebooks-narrow: export OPENBLAS_NUM_THREADS = 1

# ruff with the rule set of pyproject.toml ([tool.ruff.lint]: syntax errors and pyflakes)
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy src/dpbayes

unit: $(STAMP) $(BOOK_STAMP)
	rm -rf $(KEPT_RUNS)
	DPBAYES_KEEP_RUNS=$(CURDIR)/$(KEPT_RUNS) $(BIN)/python -m pytest tests -q -p no:cacheprovider -n $(JOBS) --dist loadgroup --ignore=tests/test_browser.py --ignore=tests/test_pdf.py

notebooks: $(STAMP)
	rm -rf $(FRESH_FIGURES)
	DPBAYES_FIGURES_DIR=$(CURDIR)/$(FRESH_FIGURES) $(BIN)/python -m pytest $(NBVAL_FLAGS) -n $(JOBS) --dist loadfile chapters -q

figures: $(STAMP)
	DPBAYES_FRESH_FIGURES=$(CURDIR)/$(FRESH_FIGURES) $(BIN)/python -m pytest tests/test_stored_figures.py -q -p no:cacheprovider -rs

# The same validation on the narrow floating-point path: NumPy's SIMD dispatch limited to its
# baseline and an older OpenBLAS core (tests/narrow_cpu.py), so that a machine with a wide vector
# unit also checks what a reader's narrower CPU computes. The guarded notebooks of tests/narrow-survey.json
# (measured the same on both paths, and expensive) are run there at their test parameters instead and
# must equal, exactly, their runs of `make unit` (tests/test_narrow_guard.py).
notebooks-narrow: $(STAMP)
	rm -rf $(FRESH_FIGURES_NARROW)
	DPBAYES_FIGURES_DIR=$(CURDIR)/$(FRESH_FIGURES_NARROW) $(BIN)/python tests/narrow_cpu.py \
	  $(BIN)/python -m pytest $(NBVAL_FLAGS) -n $(JOBS) --dist loadfile $(NARROW_NOTEBOOKS) -q
	DPBAYES_KEEP_RUNS=$(CURDIR)/$(KEPT_RUNS) $(BIN)/python tests/narrow_cpu.py \
	  $(BIN)/python -m pytest tests/test_narrow_guard.py -q -p no:cacheprovider -n $(JOBS) -rs

figures-narrow: $(STAMP)
	DPBAYES_FRESH_FIGURES=$(CURDIR)/$(FRESH_FIGURES_NARROW) DPBAYES_FRESH_NOTEBOOKS="$(NARROW_NOTEBOOKS)" \
	  $(BIN)/python -m pytest tests/test_stored_figures.py -q -p no:cacheprovider -rs

# Which notebooks differ on the narrow path (every notebook at its defaults on both paths, about
# 15-20 minutes): rewrites tests/narrow-survey.json; not part of `make test`.
narrow-survey: $(STAMP)
	$(BIN)/python tests/narrow_survey.py --jobs $(JOBS)

# Debian's chromium, driven by Playwright through executable_path (no browser download).
chromium:
	@test -x $(CHROMIUM) || { $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core; }

# The book rendered from the stored outputs into $(BROWSER_DIR)/_build/html (execute_notebooks: off).
browser-build: $(STAMP) $(BOOK_STAMP)
	rm -rf $(BROWSER_DIR) && mkdir -p $(BROWSER_DIR)
	$(BIN)/python -c "import yaml; c = yaml.safe_load(open('_config.yml')); \
	c.setdefault('execute', {})['execute_notebooks'] = 'off'; \
	yaml.safe_dump(c, open('$(BROWSER_DIR)/_config.yml', 'w'), sort_keys=False, allow_unicode=True)"
	$(BIN)/jupyter-book build . --config $(BROWSER_DIR)/_config.yml --path-output $(BROWSER_DIR) -W --keep-going -q

browser: browser-build chromium
	$(MAKE) --no-print-directory browser-check SCREENSHOTS=$(CURDIR)/$(BROWSER_DIR)/screenshots

# the browser and PDF tests on the book browser-build rendered; with SCREENSHOTS=DIR (`make browser`)
# also full-page screenshots of every page at both widths, for a person to look at (`make test` takes
# none: nobody looks at a CI machine's, and they cost about 100 s per width)
SCREENSHOTS ?=
browser-check:
	DPBAYES_BOOK_HTML=$(CURDIR)/$(BROWSER_DIR)/_build/html CHROMIUM=$(CHROMIUM) \
	  DPBAYES_SCREENSHOTS=$(SCREENSHOTS) \
	  $(BIN)/python -m pytest tests/test_browser.py tests/test_pdf.py -q -p no:cacheprovider -rs -n $(JOBS) --dist loadscope

# The whole book as one PDF (dpbayes.book.pdf: single-page HTML of the stored outputs, printed by Chromium);
# not part of `make test`, whose browser stage checks the same recipe on a small book (tests/test_pdf.py).
PDF_BOOK ?= .
PDF_OUT ?= _build/pdf
pdf: $(STAMP) $(BOOK_STAMP) chromium
	$(BIN)/python -m dpbayes.book.pdf $(PDF_BOOK) $(PDF_OUT) $(CHROMIUM)

# Re-execute every stored non-default run (figures/<chapter>/runs/<label>/) and compare; slow, not in CI.
verify-runs: $(STAMP)
	$(BIN)/python -m dpbayes verify-run $$(dirname $$(ls figures/*/runs/*/run.json))

clean:
	rm -rf _build runs
