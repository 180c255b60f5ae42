# Two entry points: `make book` (HTML from the committed evidence, no GPU) and `make test`.
PYTHON ?= .venv/bin/python
JUPYTER_BOOK ?= .venv/bin/jupyter-book

.PHONY: book test verify clean
book:
	$(JUPYTER_BOOK) build --all -W -n --keep-going .  # --all: chapters read src/, which Sphinx does not track

test:
	$(PYTHON) -m pytest -q

verify:
	$(PYTHON) -m launchlab verify

clean:
	rm -rf _build
