# `make book` (HTML from the committed evidence, no GPU), `make test` (what CI runs) and `make test-fast`.
# Set up first (README): python3 -m venv .venv && .venv/bin/pip install -r requirements.lock -e .
PYTHON ?= .venv/bin/python
JUPYTER_BOOK ?= .venv/bin/jupyter-book
CH ?=

.PHONY: book test test-fast execute claims verify status lock clean

book:
	$(JUPYTER_BOOK) build --all -W -n --keep-going .  # --all: chapters read src/, which Sphinx does not track

# The whole suite: CPU tests, the book built once more with warnings as errors, every page in headless Chromium
# (skipped, with the reason, where Chromium is absent: bash tools/install_browser.sh). GPU tests skip without a GPU.
test:
	$(PYTHON) -m pytest -q

# CPU unit tests only (a few minutes on two cores): no GPU, and none of the tests marked `slow` (pyproject.toml):
# nvcc/ptxas compilations, notebook executions (papermill), the simulated megakernel run, the book build and the
# browser.
test-fast:
	$(PYTHON) -m pytest -q -m "not slow and not gpu"

# Re-execute one chapter on a GPU into a new sealed run: make execute CH=ordinary_launches
execute:
	@test -n "$(CH)" || { echo "make execute CH=<stem>: ordinary_launches, graphs, fusion, megakernels, example_a_pointwise or example_b_jobs" >&2; exit 2; }
	$(PYTHON) -m launchlab execute $(CH)

claims:
	$(PYTHON) -m launchlab claims

verify:
	$(PYTHON) -m launchlab verify

status:
	$(PYTHON) -m launchlab status

# Regenerate requirements.lock from requirements.txt in a fresh venv (CuPy included: it imports without a GPU).
lock:
	rm -rf .lock-venv && python3 -m venv .lock-venv
	.lock-venv/bin/pip install -q -r requirements.txt
	{ sed -n '/^#/p' requirements.lock; .lock-venv/bin/pip freeze; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

clean:
	rm -rf _build
