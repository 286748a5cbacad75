# The course's commands. Each one installs what it needs first (idempotently) into a
# project-local virtual environment, .venv/, so `make lab` and `make test` work on a fresh clone.
#
#   make lab     the learner's set (numpy, matplotlib, ipywidgets) plus JupyterLab, then opens lesson 00
#   make test    everything: the instructor tools (nbformat, nbclient, ipykernel) and the test tools
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LAB_STAMP  := $(VENV)/.installed-lab
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install install-lab lab test test-generic notebooks release check-solutions bench screenshots site clean

define make_venv
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "The course needs Python 3.10 or newer; found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
endef

# Re-install whenever pyproject.toml changes; otherwise these are no-ops. Both also write the
# course's JupyterLab settings (postBuild: no news pop-up on the first start), as Binder does.
$(LAB_STAMP): pyproject.toml postBuild
	$(make_venv)
	$(BIN)/python -m pip install --quiet -e '.[lab]'
	PATH="$(CURDIR)/$(BIN):$$PATH" sh postBuild
	touch $(LAB_STAMP)

$(TEST_STAMP): pyproject.toml postBuild
	$(make_venv)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	PATH="$(CURDIR)/$(BIN):$$PATH" sh postBuild
	touch $(TEST_STAMP) $(LAB_STAMP)

install-lab: $(LAB_STAMP)
install: $(TEST_STAMP)

# JupyterLab refuses to start as root unless told to (containers, some cloud machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

## Open the first lesson in JupyterLab. The server's default URL is lesson 00, so the URL it
## prints (where no browser opens, copy it into one) and the page a browser opens are lesson 00.
lab: install-lab
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

## Run every test: unit tests, the browser tests, the wheel, ruff, and every notebook through nbval.
test: install
	$(BIN)/python -m pytest

## The drift checks and every lesson and solution again, on the generic kernels every processor
## has (NumPy's dispatched SIMD features off, OpenBLAS's most basic kernel), as a machine without
## AVX-512 or AVX2 would compute them: the stored numbers must hold there too.
GENERIC_CORETYPE := $(if $(filter aarch64 arm64,$(shell uname -m)),ARMV8,Prescott)
test-generic: install
	@features="$$($(BIN)/python -c 'import numpy._core._multiarray_umath as m; print(" ".join(f for f in m.__cpu_dispatch__ if m.__cpu_features__.get(f)))')"; \
	echo "generic kernels: OPENBLAS_CORETYPE=$(GENERIC_CORETYPE) NPY_DISABLE_CPU_FEATURES=\"$$features\""; \
	OPENBLAS_CORETYPE=$(GENERIC_CORETYPE) NPY_DISABLE_CPU_FEATURES="$$features" \
		$(BIN)/python -m pytest -p no:cacheprovider tests/test_release.py notebooks solutions \
		-k "not fresh_exercise"

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

## Re-take the README's pictures (docs/images/) in JupyterLab in headless Chromium; JupyterLab
## at 1366 x 768 with each explorer, light and dark; and website pages (home, lessons 02 and 05,
## exercise 06) at 1280 and 375 px in the light and dark themes (all in build/screenshots/);
## and the instructor guide's review page and class report (docs/demo_class.py).
screenshots: install
	MHA_SCREENSHOTS_DIR="$(CURDIR)/docs/images" MHA_LAB_SCREENSHOTS_DIR="$(CURDIR)/build/screenshots" \
		$(BIN)/python -m pytest -n0 -p no:cacheprovider tests/test_browser.py \
		-k "shape_explorer_in_jupyterlab or laptop_screen"
	$(BIN)/python site_src/build_site.py --quiet --local-preview \
		--screenshot docs/images/site_lesson.png --screenshots build/screenshots
	MHA_SCREENSHOTS_DIR="$(CURDIR)/docs/images" $(BIN)/python docs/demo_class.py > /dev/null

## Build the course website into site/ from the stored notebook outputs (offline, no re-execution).
## It stops while pyproject.toml names the placeholder repository; `make site PREVIEW=1` builds a
## local preview anyway (its Binder, Colab and licence links lead nowhere).
site: install
	$(BIN)/python site_src/build_site.py --quiet $(if $(PREVIEW),--local-preview)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache test-artifacts dist build site
