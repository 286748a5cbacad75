# The course's commands. Each one installs what it needs first (idempotently) into a
# project-local virtual environment, .venv/, so `make lab` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install lab test notebooks release check-solutions bench clean

# Re-install whenever pyproject.toml changes; otherwise this is a no-op.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "The course needs Python 3.10 or newer; found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# JupyterLab refuses to start as root unless told to (containers, some cloud machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

## Open the first lesson in JupyterLab.
lab: install
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" notebooks/00_start_here.ipynb

## Run every test: unit tests, the browser test, and every notebook through nbval.
test: install
	$(BIN)/python -m pytest

## Re-execute lessons and solutions in fresh kernels and store them (the only way outputs change).
notebooks: install
	$(BIN)/mha-course execute notebooks solutions

## Regenerate the student notebooks in exercises/ from solutions/.
release: install
	$(BIN)/mha-course release

check-solutions: install
	$(BIN)/mha-course check-solutions

## Measure the course's speed; prints a table and writes benchmarks/results/latest.json.
bench: install
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache test-artifacts
