"""Chapter 3's page: the formatting its tables, figures and glued values share (labels, ratios, intervals)."""
from __future__ import annotations

import re

from launchlab.chapters.fusion import label  # noqa: F401  (how tables and figures name a row)


def page_table(rows, index, **kwargs):
    from launchlab.present import tables

    return tables.page_table(rows, index=index, **kwargs)


def summaries_of(run) -> dict:
    return run.summaries


# ---------------------------------------------------------------- numbers shared by tables and prose
def shape_label(shape: str) -> str:
    """4096x128 -> 4096×128, as the prose writes a shape."""
    return shape.replace("x", "×")


def build_label(module: str) -> str:
    """fused_softmax_b256_r4_u4_m5 -> b256 r4 u4 m5 (block, register chunks, unroll, min blocks per SM);
    softmax_designs_narrow_block128_design1_lanes32_row_chunks1 -> narrow b128 l32 r1 (block, lanes, row chunks;
    a cluster's c<blocks> s<slice chunks in registers> u<unroll>); a scalar narrow build ends in "scalar"."""
    short = module.removeprefix("fused_softmax_").removeprefix("softmax_designs_")
    short = re.sub(r"_design\d", "", short)
    for word, letter in (("row_chunks", "r"), ("slice_regs", "s"), ("block", "b"), ("lanes", "l"), ("unroll", "u")):
        short = short.replace(word, letter)
    short = re.sub(r"_cluster(\d)", r"_c\1", short).replace("_scalar1", "_scalar")
    return short.replace("_", " ")   # a table breaks it between its parts only, never inside one


def ratio_cell(ratio) -> str:
    """A table cell: median [95 % interval] with enough decimals that the interval shows."""
    from launchlab.present import tables

    if not ratio:
        return tables.MISSING
    if f"{ratio['ci_low']:.3f}" == f"{ratio['ci_high']:.3f}":   # the interval is narrower than 3 decimals show
        return f"{ratio['median']:.3f} [±0.0005]"
    return tables.median_with_band(ratio, tables.CI, digits=tables.ci_places(ratio, most=3))


def percent(fraction: float, digits: int = 0) -> str:
    """A fraction as a percentage, its sign held to the number by a no-break space: 0.079 -> "8 %"."""
    return f"{100 * fraction:.{digits}f}\u00a0%"


def ratio_number(value: float) -> str:
    """A ratio at 2 decimals, or 3 where 2 would print a ratio off 1 as "1.00" (a side of 1 must show)."""
    return f"{value:.3f}" if f"{value:.2f}" == "1.00" and value != 1.0 else f"{value:.2f}"


def ratio_span(values) -> str:
    """The range of some ratios, "1.05–1.63" (one number where both ends print alike)."""
    low, high = min(values), max(values)
    return ratio_number(low) if ratio_number(low) == ratio_number(high) else f"{ratio_number(low)}–{ratio_number(high)}"


def interval_text(ratio: dict) -> str:
    """The 95 % interval of a ratio for the prose: its ends, at the decimals that tell them apart (and each other
    from 1), or how narrow it is where even 3 decimals do not."""
    low, high = ratio["ci_low"], ratio["ci_high"]
    for places in (2, 3):
        ends = [f"{v:.{places}f}" for v in (low, high)]
        if ends[0] != ends[1] and (places == 3 or "1.00" not in ends or low == 1.0 or high == 1.0):
            return f"95 % interval {ends[0]}–{ends[1]}"
    return "95 % interval within ±0.0005"



# ---------------------------------------------------------------- build configurations and resources
DESIGN_LABELS = {"narrow": "narrow rows (part of a warp per row)", "row": "one block per row",
                 "cluster": "a cluster of blocks per row", "split": "split rows over resident blocks"}


def design_label(design: str) -> str:
    """A design in words; a design this page does not describe yet by its own name."""
    return DESIGN_LABELS.get(design, design)


def plan_place(plan: dict) -> str:
    """Where a design keeps a row, in words (the plan's own, from plans.place)."""
    return plan.get("place") or plan.get("tier") or "shared memory or streamed"



def verdict_text(met) -> str:
    return {True: "met", False: "missed", None: "not measured (library absent)"}[met]



def fmt(value, digits: int = 3) -> str:
    from launchlab.present.tables import fmt_sig

    return fmt_sig(value, digits)


def columns_of(shape: str) -> int:
    return int(shape.split("x")[1])


def listing(items: list[str]) -> str:
    return "none" if not items else items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def graph_ratio(s: dict, name: str, shape: str, l2: str) -> dict | None:
    return s["ratios"]["graph"].get(name, {}).get(shape, {}).get(l2)


