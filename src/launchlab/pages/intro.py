"""The book's answer at a glance (book/intro.ipynb, and Figure 1 of the conclusion): CUDA Graph, fused kernel, or
megakernel? One paragraph and one figure, read from the very ratios of the conclusion's decision table
(`conclusion.decision_rows`), so that the intro and the conclusion state the same numbers.

Every ratio here is a speed-up as its chapter measured it: the usual path's time over the technique's, paired
within each round (stream launches over graph replay; separate kernels replayed as a graph over one kernel). A
qualitative word ("paid", "did not pay") follows where the whole 95 % interval lies (`Ratio.faster`).
"""
from __future__ import annotations

import dataclasses

from launchlab.pages import conclusion
from launchlab.pages.conclusion import Ratio
from launchlab.present import figures

TECHNIQUES = {"graph": ("CUDA graph", figures.COLOURS[0]), "fused": ("fused kernel", figures.COLOURS[2]),
              "megakernel": ("persistent megakernel", figures.COLOURS[3])}


@dataclasses.dataclass(frozen=True)
class Bar:
    """One measured speed-up of the figure: which technique, in which regime, against what."""
    technique: str          # a key of TECHNIQUES
    regime: str             # the decision table's row
    label: str              # the bar's label (two short lines)
    ratio: Ratio            # the usual path's time over the technique's

    @property
    def pays(self) -> bool | None:
        """True when the technique is faster (the whole interval above 1), False when slower, None when the
        interval holds 1."""
        faster = self.ratio.faster
        return None if faster == conclusion.NEITHER else faster == self.ratio.denominator


def bars(rows: dict) -> list[Bar]:
    """The speed-ups the answer quotes, from the decision table's rows, top to bottom."""
    short, memory, tiles = rows["short_kernels"], rows["memory_bound"], rows["dependent_tiles"]
    pointwise, jobs = rows["pointwise"], rows["jobs"]
    cooperative, queue, best_ragged = tiles.ratios[:3]
    return [
        Bar("graph", "short_kernels", "Short launches from Python:\nrow path, 128×8192", short.ratios[0]),
        Bar("graph", "short_kernels", "Short launches from Python:\n1,024 empty kernels", short.ratios[1]),
        Bar("fused", "memory_bound", "Memory-bound row operation:\nsoftmax, 4096×4096, warm L2", memory.ratios[0]),
        Bar("fused", "pointwise", "Element-wise chain:\n3 kernels, 16,777,216 elements", pointwise.ratios[1]),
        Bar("megakernel", "dependent_tiles", "Dependent tiles, ragged rows:\ncooperative (grid barriers)",
            cooperative),
        Bar("megakernel", "dependent_tiles", "Dependent tiles, ragged rows:\ntask queue", queue),
        Bar("fused", "dependent_tiles", f"Dependent tiles, ragged rows:\n{best_ragged.denominator}", best_ragged),
        Bar("fused", "jobs", "Two-stage jobs, ragged:\none fused kernel per job", jobs.ratios[0]),
    ]


def times(ratio: Ratio) -> str:
    """'2.42× [2.30–2.50]': the ratio as the conclusion's table writes it, with its sign of a speed-up."""
    median, _, band = ratio.text.partition(" ")
    return f"**{median}×** {band}".rstrip()


def replicate_note(graphs_run) -> str:
    """How the row path's graph speed-up came out in chapter 2's replicate runs ("" where it has none)."""
    from launchlab.present.replicas import counted, joined, replicates_of

    key = "row4.128x8192.graph"
    others = [r.summaries["stream_over_graph"][key]["event"]["median"] for r in replicates_of(graphs_run)
              if key in r.summaries["stream_over_graph"]]
    if not others:
        return ""
    here = graphs_run.summaries["stream_over_graph"][key]["event"]["median"]
    spread = "the same within 5 %" if max(others + [here]) <= 1.05 * min(others + [here]) else \
        "that gain varies between runs, with the host's speed of submission"
    return (f" Chapter 2's {counted(len(others), 'replicate run')} measured the row path's speed-up at "
            f"{joined([f'{v:.2f}×' for v in others])}: {spread}.")


def answer_markdown(rows: dict, device: str, graph_note: str = "") -> str:
    """The answer in one paragraph: each regime, the technique that paid there (or did not), its measured
    speed-up, and a link to the chapter section that measured it. Where a run does not find the technique faster,
    the advice gives way to the bare figures."""
    (row_graph, empty_graph, softmax, chain, cooperative, queue, one_launch, jobs) = bars(rows)
    link = conclusion.section_link
    advice = "replay them as a **CUDA graph**: " if row_graph.pays and empty_graph.pays else ""
    graph = (f"*Many short kernels launched from the host:* {advice}graph replay ran the four-kernel row path at "
             f"128×8192 {times(row_graph.ratio)} as fast as launching it from Python, and 1,024 empty kernels "
             f"{times(empty_graph.ratio)} as fast ({link('short_kernels', 'Chapter 2')}).{graph_note}")
    advice = "**fuse** them: " if softmax.pays and chain.pays else ""
    fusion = (f"*Memory-bound chains of row or element-wise kernels:* {advice}one kernel per row ran the 4096×4096 "
              f"softmax {times(softmax.ratio)} as fast as four kernels ({link('memory_bound', 'Chapter 3')}), and one "
              f"pointwise kernel ran 16,777,216 elements {times(chain.ratio)} as fast as three "
              f"({link('pointwise', 'Appendix A')}).")
    outcome = {frozenset({False}): "the persistent **megakernels** did not pay",
               frozenset({True}): "the persistent **megakernels** paid"}.get(
        frozenset({cooperative.pays, queue.pays}), "the persistent **megakernels** gave mixed results")
    tiles = (f"*Tiles that wait for other blocks, and ragged work:* {outcome}. Against the three kernels replayed "
             f"as a graph, the cooperative kernel with grid barriers ran {times(cooperative.ratio)} as fast and the "
             f"task queue {times(queue.ratio)} on ragged rows; the fastest single launch was the "
             f"{one_launch.ratio.denominator}, {times(one_launch.ratio)} ({link('dependent_tiles', 'Chapter 4')}). For ragged two-stage jobs, one "
             f"fused kernel ran {times(jobs.ratio)} as fast as two ({link('jobs', 'Appendix B')})"
             + (": two kernels were faster, and the traces there show why." if jobs.pays is False else "."))
    return (f"**CUDA Graph, fused kernel, or megakernel?** On the {device} measured here, it depends on which "
            f"boundary costs most ({{numref}}`fig-decision`). {graph} {fusion} {tiles} A speed-up is the usual "
            "path's time over the technique's, the median of paired rounds with its 95 % interval in brackets; "
            "below 1× the technique was slower. {doc}`The conclusion <conclusion>` gives every ratio and what each "
            "technique costs to build.")


def decision_figure(rows: dict):
    """Figure 1: the measured speed-up of each technique per regime, with its 95 % interval, on a log axis with a
    line at 1× (right of it the technique was faster)."""
    import numpy as np

    chosen = bars(rows)
    fig, axes = figures.figure(1, 1, height=4.6, layout="constrained")
    ax = axes[0, 0]
    y = np.arange(len(chosen))[::-1]
    seen = set()
    for position, bar in zip(y, chosen):
        name, colour = TECHNIQUES[bar.technique]
        summary = bar.ratio.summary
        median = summary["median"]
        # Each bar starts at 1× (no change): to the right the technique was faster, to the left slower.
        ax.barh(position, median - 1.0, left=1.0, color=colour, height=0.62, label=None if name in seen else name)
        seen.add(name)
        ax.errorbar(median, position, xerr=[[median - summary["ci_low"]], [summary["ci_high"] - median]],
                    fmt="none", ecolor="black", elinewidth=1.2, capsize=3)
        right = median >= 1.0
        ax.annotate(f"{bar.ratio.text.split(' ')[0]}×", (summary["ci_high"] if right else summary["ci_low"], position),
                    xytext=(4 if right else -4, 0), textcoords="offset points", va="center",
                    ha="left" if right else "right", fontsize=figures.SMALL_PT)
    ax.axvline(1.0, color="black", linewidth=1.0, linestyle="--", gid=figures.REFERENCE_GID)
    ax.set_xscale("log")
    ax.set_xlim(0.4, 16)
    ticks = [0.5, 1, 2, 4, 8, 16]
    ax.set_xticks(ticks, [f"{t:g}×" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(y, [bar.label for bar in chosen])
    ax.set_xlabel("Speed-up: the usual path's time ÷ the technique's (log scale)")
    figures.finish(fig)
    measured = "; ".join(f"{bar.label}: {bar.ratio.text.split(' ')[0]}×" for bar in chosen)
    return figures.describe(fig, "Horizontal bars of the measured speed-up of each technique over the usual path, "
                                 f"with 95 % intervals, on a log axis with a line at 1× (no change): {measured}.")


def page_values(runs) -> dict:
    """The intro's glued values: the answer paragraph."""
    rows = conclusion.decision_rows(runs)
    devices = " and ".join(sorted({run.record.device_name for run in runs.values()}))
    graphs = runs.get("graphs")
    return {"answer": answer_markdown(rows, devices, replicate_note(graphs) if hasattr(graphs, "path") else "")}
