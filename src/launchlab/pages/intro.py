"""The book's answer at a glance (book/intro.ipynb, and Figure 1 of the conclusion): CUDA Graph, fused kernel, or
megakernel? A short list and one figure, read from the very ratios of the conclusion's decision table
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
    pointwise, jobs, chain = rows["pointwise"], rows["jobs"], rows["dependent_chain"]
    cooperative, queue, best_ragged, _, flow_ragged, _ = tiles.ratios
    chain_ragged = next(r for r in chain.ratios if r.where.startswith("ragged") and "PDL" in r.numerator)
    return [
        Bar("graph", "short_kernels", "Short launches from Python:\nrow path, 128×8192", short.ratios[0]),
        Bar("graph", "short_kernels", "Short launches from Python:\n1,024 empty kernels", short.ratios[1]),
        Bar("fused", "memory_bound", "Memory-bound row operation:\nsoftmax, 4096×4096, warm L2", memory.ratios[0]),
        Bar("fused", "pointwise", "Element-wise chain:\n3 kernels, 16,777,216 elements", pointwise.ratios[1]),
        Bar("megakernel", "dependent_tiles", "Dependent tiles, ragged rows:\ncooperative (grid barriers)",
            cooperative),
        Bar("megakernel", "dependent_tiles", "Dependent tiles, ragged rows:\ntask queue", queue),
        Bar("megakernel", "dependent_tiles", f"Dependent tiles, ragged rows:\n{flow_ragged.denominator}", flow_ragged),
        Bar("fused", "dependent_tiles", f"Dependent tiles, ragged rows:\n{best_ragged.denominator}", best_ragged),
        Bar("megakernel", "dependent_chain", f"Chain of {chain_ragged.where.split(', ')[1]}, ragged:\n"
            "one persistent kernel over the PDL graph", chain_ragged),
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


def design_name(bar: Bar) -> str:
    """The megakernel chapter's name in sentences for the design a bar measures ('the flow kernel with B in C')."""
    from launchlab.chapters.megakernels import DESIGN
    from launchlab.chapters.megakernels.page_words import name

    return next((name(key) for key, design in DESIGN.items() if design.label == bar.ratio.denominator),
                bar.ratio.denominator)


def _above_all(bar: Bar, others) -> bool:
    """The bar's interval lies wholly above every other bar's."""
    return all(bar.ratio.summary["ci_low"] > other.ratio.summary["ci_high"] for other in others)


def _against(bar: Bar) -> str:
    """'lost to', 'beat' or 'tied with' the usual path, from the bar's interval."""
    return {True: "beat", False: "lost to", None: "tied with"}[bar.pays]


def _chained_fused_clause(chain) -> str:
    """How the whole-chain persistent kernel stood against the fused row kernel chained as many times, on ragged
    rows: within conclusion.NARROW of it is 'level with' (chapter 4's tie), else 'ahead of' or 'behind'."""
    fused = next((r for r in chain.ratios if r.where.startswith("ragged") and "fused" in r.numerator), None)
    if fused is None:
        return ""
    median = fused.summary["median"]
    stood = ("level with" if abs(median - 1) < conclusion.NARROW else
             "ahead of" if fused.faster == fused.denominator else "behind")
    return f", and ran {stood} the fused row kernel chained as many times ({times(fused)})"


def answer_markdown(rows: dict, device: str, graph_note: str = "") -> str:
    """The answer as a short list, the definition of a speed-up first: each regime, the technique that paid there
    (or did not), its measured speed-up, and a link to the chapter section that measured it. Where a run does not
    find the technique faster, the advice gives way to the bare figures."""
    (row_graph, empty_graph, softmax, chain, cooperative, queue, flow, one_launch, jobs, stages) = (
        bars(rows)[i] for i in (0, 1, 2, 3, 4, 5, 6, 7, 9, 8))
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
    if cooperative.pays == queue.pays:
        first = (f"the grid-barrier and task-queue **megakernels** {_against(cooperative)} the three kernels replayed "
                 f"as a graph ({times(cooperative.ratio)} and {times(queue.ratio)} as fast on ragged rows)")
    else:
        first = (f"the grid-barrier **megakernel** {_against(cooperative)} the three kernels replayed as a graph "
                 f"({times(cooperative.ratio)} as fast on ragged rows) and the task queue {_against(queue)} it "
                 f"({times(queue.ratio)})")
    above = _above_all(one_launch, (cooperative, queue, flow))
    tiles = (f"*Tiles that wait for other blocks:* {first}; a dataflow persistent kernel, the {design_name(flow)}, "
             f"{_against(flow)} it ({times(flow.ratio)}); "
             + (f"one fused launch, the {design_name(one_launch)}, beat them all ({times(one_launch.ratio)})"
                if above else f"the fastest single launch was the {design_name(one_launch)} "
                              f"({times(one_launch.ratio)})")
             + f" ({link('dependent_tiles', 'Chapter 4')}). Over a chain of {stages.ratio.where.split(', ')[1].split()[0]} "
             f"such steps on ragged rows, one persistent kernel {_against(stages)} the graph with programmatic "
             f"dependent launch ({times(stages.ratio)}; {link('dependent_chain', 'the chain')})"
             + _chained_fused_clause(rows["dependent_chain"]) + ".")
    jobs_text = (f"*Ragged two-stage jobs:* one fused kernel ran {times(jobs.ratio)} as fast as two "
                 f"({link('jobs', 'Appendix B')})"
                 + (": two kernels were faster, and the traces there show why." if jobs.pays is False else "."))
    return "\n".join([
        f"**CUDA Graph, fused kernel, or megakernel?** On the {device} measured here, it depends on which boundary "
        f"costs most ({{numref}}`fig-decision`). A speed-up is the usual path's time over the technique's, the median "
        "of paired rounds with its 95 % interval in brackets; below 1× the technique was slower.",
        "", f"* {graph}", f"* {fusion}", f"* {tiles}", f"* {jobs_text}", "",
        "{doc}`The conclusion <conclusion>` gives every ratio and what each technique costs to build."])


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


def short_verdict(rows: dict) -> str:
    """The conclusion's opening, three short sentences from the same bars: which technique paid where."""
    (row_graph, empty_graph, softmax, chain, cooperative, queue, flow, one_launch, stages, jobs) = bars(rows)
    graph = ("Replaying many short launches as a **CUDA graph** paid" if row_graph.pays and empty_graph.pays else
             "Replaying short launches as a **CUDA graph** did not pay in every case")
    fused = ("**fusing** memory-bound kernels paid" if softmax.pays and chain.pays else
             "**fusing** memory-bound kernels did not pay in every case")
    tiles = (f"of the persistent **megakernels**, the grid-barrier one {_against(cooperative)} the graph of separate "
             f"kernels, the task queue {_against(queue)} it and a dataflow one {_against(flow)} it, while "
             + ("one fused launch was faster than all of them" if _above_all(one_launch, (cooperative, queue, flow))
                else "the fastest single launch was")
             + f" ({times(one_launch.ratio)} on ragged rows); over a chain of "
             f"{stages.ratio.where.split(', ')[1].split()[0]} dependent steps a persistent kernel "
             f"{_against(stages)} the graph with programmatic dependent launch ({times(stages.ratio)})")
    return f"{graph}; {fused}; {tiles}."
