"""The executable chapters, one package each, keyed by notebook stem (see declaration.py)."""
from __future__ import annotations

import importlib

from launchlab.chapters.declaration import Chapter

STEMS = ("ordinary_launches", "graphs", "fusion", "megakernels", "example_a_pointwise", "example_b_jobs")


def available_stems() -> list[str]:
    """The stems whose package exists in this checkout."""
    import importlib.util

    return [stem for stem in STEMS if importlib.util.find_spec(f"launchlab.chapters.{stem}") is not None]


def chapter(stem: str) -> Chapter:
    if stem not in STEMS:
        raise ValueError(f"unknown chapter {stem!r}; known: {', '.join(STEMS)}")
    return importlib.import_module(f"launchlab.chapters.{stem}").CHAPTER
