"""Every figure of the book, drawn from the accepted runs as the built pages draw it: it says what it shows (alt
text), it carries at most six data series, and no two tick labels of an axis overlap. The figures are made by
running the code cells of each chapter notebook and data page in evidence mode, with `glue_figure` collecting the
figures instead of gluing them, so a figure a notebook adds is checked without a test edit."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from launchlab.present import figures  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK = REPO_ROOT / "book"
NOTEBOOKS = sorted(p for p in [*BOOK.glob("*.ipynb"), *BOOK.glob("data/*.ipynb")] if "glue_figure(" in p.read_text())


def drawn_figures(notebook: Path, monkeypatch) -> dict:
    """{glued name: (figure, alt text)} of every figure a notebook glues, its code cells run in its folder."""
    import matplotlib.pyplot as plt

    from launchlab.present import glue

    collected = {}

    def collect(name, fig, alt=None):
        collected[name] = (fig, alt or figures.alt_text(fig))

    monkeypatch.setattr(figures, "glue_figure", collect)
    monkeypatch.setattr(glue, "glue_values", lambda values: None)
    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    monkeypatch.chdir(notebook.parent)
    namespace: dict = {"__name__": "__notebook__"}
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(notebook), "exec"), namespace)
    return collected


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.relative_to(BOOK).as_posix())
def test_every_figure_has_alt_text_and_no_overlapping_tick_labels(notebook, monkeypatch):
    import matplotlib.pyplot as plt

    drawn = drawn_figures(notebook, monkeypatch)
    assert drawn, f"{notebook.name} glues no figure"
    problems = []
    for name, (fig, alt) in drawn.items():
        if not alt or len(alt.split()) < 5:
            problems.append(f"{name}: no alt text saying what it shows ({alt!r})")
        problems += [f"{name}: {p}" for p in figures.overlapping_tick_labels(fig)]
        for ax in fig.axes:
            figures.check_series(ax)
        plt.close(fig)
    assert not problems, "\n".join(problems)


def test_the_overlap_check_sees_overlapping_labels():
    fig, axes = figures.figure(1, 1, width=3, height=2)
    axes[0, 0].set_xticks(range(12), [f"a long label {i}" for i in range(12)])
    assert figures.overlapping_tick_labels(fig)
    fig, axes = figures.figure(1, 1, width=7, height=2)
    axes[0, 0].set_xticks(range(3), ["one", "two", "three"])
    assert figures.overlapping_tick_labels(fig) == []


def test_glue_figure_refuses_a_figure_without_alt_text():
    fig, _ = figures.figure()
    with pytest.raises(ValueError, match="no alt text"):
        figures.glue_figure("nameless", fig)
    with pytest.raises(ValueError):
        figures.describe(fig, "  ")


def test_bandwidth_references_draw_the_h200_peak_and_the_copy():
    fig, axes = figures.figure()
    ax = axes[0, 0]
    ax.plot([1, 2, 3], [1000, 2000, 3000], label="kernel")
    figures.bandwidth_references(ax, "NVIDIA H200", copy_gbs=[2500, 2600, 2700], x=[1, 2, 3])
    references = {line.get_label(): line for line in ax.get_lines() if line.get_gid() == figures.REFERENCE_GID}
    assert set(references) == {"peak DRAM (4.8 TB/s)", "measured copy"}
    assert references["peak DRAM (4.8 TB/s)"].get_ydata()[0] == 4800.0
    assert figures.data_series(ax) == ["kernel"]
    figures.bandwidth_references(ax, "some other GPU")            # no peak known: no line, no error
