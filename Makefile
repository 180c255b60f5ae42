# Two entry points: `make book` (HTML from the committed evidence, no GPU) and `make test`.
PYTHON ?= .venv/bin/python
JUPYTER_BOOK ?= .venv/bin/jupyter-book

.PHONY: book test verify clean
book:
	$(JUPYTER_BOOK) build -W -n --keep-going .

test:
	$(PYTHON) -m pytest -q

verify:
	$(PYTHON) -m launchlab verify

clean:
	rm -rf _build
