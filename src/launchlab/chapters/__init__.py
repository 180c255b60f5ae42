"""One module per executable chapter, keyed by its notebook stem."""
from launchlab.chapters import fusion, graphs, megakernels, ordinary_launches

CHAPTERS = {module.STEM: module for module in (ordinary_launches, graphs, fusion, megakernels)}


def chapter_module(stem: str):
    if stem not in CHAPTERS:
        raise KeyError(f"unknown chapter {stem!r}; known: {', '.join(sorted(CHAPTERS))}")
    return CHAPTERS[stem]
