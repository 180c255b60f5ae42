"""How chapter 2's pages name and order its workloads: shared by the page, its answer and the conclusion."""
from __future__ import annotations

from launchlab.chapters.graphs import CHAPTER
from launchlab.measure.variant import VariantId


def label(vid: VariantId) -> str:
    """A readable name of a workload (without its submission)."""
    count = vid.case[1:]
    return {"row4": f"row path {vid.case.replace('x', '×')}", "tiled3": f"tiled path, {vid.case}",
            "empty": f"{count} empty kernel{'s' if count != '1' else ''}", "row4copies": f"row path ×{count}"
            }.get(vid.target, str(vid))


def size_of_case(case: str) -> int:
    """What a case's size reads as: elements of a shape (128x8192), the count of a series (n64, k16), else 0."""
    if "x" in case and case.replace("x", "").isdigit():
        rows, cols = (int(v) for v in case.split("x"))
        return rows * cols
    return int(case[1:]) if case[1:].isdigit() else 0


def ordered(variants) -> list[str]:
    """Rows in declared order (the two paths first, then the graph-length series); within a row by size."""
    rows = list(dict.fromkeys(v.row.name for v in CHAPTER.variants()))

    def key(variant):
        vid = VariantId.parse(variant)
        position = rows.index(vid.target) if vid.target in rows else len(rows)
        return position, size_of_case(vid.case), vid.case, vid.submission
    return sorted(variants, key=key)


def _paths(run) -> list[VariantId]:
    """The graph variants that enter the `paths` output (not the graph-length series), in the page's order."""
    declared = {str(v.id) for v in CHAPTER.variants(CHAPTER.parameters_of(run.record)) if "paths" in v.enters}
    return [VariantId.parse(g) for g in ordered(run.summaries["stream_over_graph"]) if g in declared]


def replays_text(value) -> str:
    """Replays to pay back a graph's set-up, as every page writes it (chapter 2, its data page, the conclusion)."""
    return "never" if value is None else f"{value:.1f}"
