# The two commands of README.md: `make book` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CACHE := _build/.jupyter_cache
FRESH_FIGURES := _build/test-figures
NBVAL_FLAGS := --nbval --nbval-sanitize-with tests/nbval-sanitize.cfg -p no:cacheprovider
JOBS ?= 2

.PHONY: book test unit notebooks figures setup clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# jupyter-cache keys a notebook on its code cells only: drop the cache when the library changes.
book: $(STAMP)
	@mkdir -p _build
	@hash=$$(find src -name '*.py' -o -name '*.mplstyle' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); \
	if [ "$$(cat _build/.src-hash 2>/dev/null)" != "$$hash" ]; then \
	  echo "library changed: clearing the execution cache"; rm -rf $(CACHE); echo $$hash > _build/.src-hash; fi
	$(BIN)/jupyter-book build . --path-output . -W --keep-going

test: unit notebooks figures

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -p no:cacheprovider -n $(JOBS)

notebooks: $(STAMP)
	rm -rf $(FRESH_FIGURES)
	DPBAYES_FIGURES_DIR=$(CURDIR)/$(FRESH_FIGURES) $(BIN)/python -m pytest $(NBVAL_FLAGS) -n $(JOBS) --dist loadfile chapters -q

figures: $(STAMP)
	DPBAYES_FRESH_FIGURES=$(CURDIR)/$(FRESH_FIGURES) $(BIN)/python -m pytest tests/test_stored_figures.py -q -p no:cacheprovider -rs

clean:
	rm -rf _build runs
