"""Chapter 4's figures, from the run's summaries and its saved traces."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.megakernels import DESIGN, baseline, label, schedules
from launchlab.chapters.megakernels.page_tables import (_event, cases, designs_of, main_variants_of, swept_designs,
                                                        sweep_rows)
from launchlab.measure.variant import VariantId
KIND_COLOURS = {"A": "#0072B2", "B": "#D55E00", "C": "#009E73"}
OVERLAP_FORBIDDEN = ("three_kernel", "cooperative")  # schedules with a boundary between the phases


def timing_figure(run):
    """Event interval per invocation (median, p10–p90) for every main variant, the cases side by side."""
    from launchlab.present import figures

    variants = main_variants_of(cases(run)[0], designs_of(run))
    # One row per variant, its label on one line left of the dots: twenty labels never crowd an x axis.
    fig, axes = figures.figure(height=0.27 * len(variants) + 1.2, layout="constrained")
    ax, offsets = axes[0, 0], np.linspace(-0.15, 0.15, len(cases(run)))
    for index, case in enumerate(cases(run)):
        mine = [_event(run, VariantId(vid.target, case, vid.submission)) for vid in variants]
        median = np.array([m["median"] for m in mine])
        spread = [median - [m["p10"] for m in mine], np.array([m["p90"] for m in mine]) - median]
        ax.errorbar(median, np.arange(len(variants)) + offsets[index], xerr=spread, fmt=figures.MARKERS[index],
                    color=figures.COLOURS[index], label=f"{case} case")
    ax.set_yticks(np.arange(len(variants)), [label(vid) for vid in variants])
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("event interval per invocation (µs)")
    ax.grid(axis="x", alpha=0.3)
    figures.legend(ax, "below")
    return figures.describe(fig, (
        f"Dot plot with one row per variant ({len(variants)} rows, from {label(variants[0])} to {label(variants[-1])}): "
        f"the event interval per invocation in µs from zero for the {' and '.join(cases(run))} cases, medians with "
        "p10–p90 bars."))


def sweep_figure(run):
    """Per case: time per invocation (top) and B tasks started before the last A ended (bottom) against the
    swept designs' worker count, replayed as graphs; the three-kernel graph as a dashed reference. A design whose
    schedule allows overlap also shows its model's count (dotted, the design's colour)."""
    from launchlab.present import figures

    rows, swept = sweep_rows(run), swept_designs()
    fig, axes = figures.figure(2, len(cases(run)), height=2.8, sharex=True, layout="constrained")
    for column, case in enumerate(cases(run)):
        mine = {d.name: [r for r in rows if r["case"] == case and r["design"] == d.name] for d in swept}
        workers = [r["workers_per_sm"] for r in mine[swept[0].name]]  # blocks per SM, as the text counts them
        figures.sweep(axes[0, column], workers, {d.label: [r["event_us"] for r in mine[d.name]] for d in swept},
                      ceiling=_event(run, baseline(case))["median"], ceiling_label="3 kernels, graph",
                      ylabel="µs per invocation" if column == 0 else None)
        axes[0, column].set_title(case)
        axes[0, column].set_ylim(bottom=0)
        overlap, models = {}, []
        for index, design in enumerate(swept):
            overlap[f"{design.label}, trace"] = [r["b_before_last_a"] for r in mine[design.name]]
            if design.schedule not in OVERLAP_FORBIDDEN:
                models.append((len(overlap), index))
                overlap[f"{design.label}, model"] = [r["model_b_before_last_a"] for r in mine[design.name]]
        figures.sweep(axes[1, column], workers, overlap, xlabel="worker blocks per SM",
                      ylabel="B before last A" if column == 0 else None)
        for line, colour in models:  # the model of the line above it: its colour, dotted
            axes[1, column].get_lines()[line].set(color=figures.COLOURS[colour], linestyle=":", markerfacecolor="white")
        axes[1, column].set_ylim(-4, rows[0]["b_tasks"] + 4)
        for ax in axes[:, column]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(workers, [str(w) for w in workers])
            ax.minorticks_off()
    for row in axes:
        figures.legend(row[-1], "right")
    return figures.describe(fig, (
        f"Line charts per case ({', '.join(cases(run))}) against the worker blocks per SM of the persistent designs "
        f"({', '.join(d.label for d in swept)}) replayed as graphs: on top the time per invocation in µs with the "
        "three-kernel graph dashed; below, the B tasks that started before the last A ended, measured in the trace "
        "and, dotted, predicted by the schedule model."))


def gantt_figure(run, case: str, targets=("tiled3", "coop", "queue")):
    """Per-SM timelines of one case's graph variants: a line per SM (its resident blocks stacked inside the
    line), every task a bar from start to end coloured by kind; in grey, a queue worker holding a task whose
    inputs are not ready. The dashed line marks the end of the last A task."""
    from launchlab.present import figures

    fig, axes = figures.figure(len(targets), 1, height=3.0, sharex=True)
    for ax, target in zip(axes[:, 0], targets):
        vid = VariantId(target, case, "graph")
        trace, graph = schedules.load_trace(run.file(f"traces/{vid}.npz"))
        kind = graph.kinds()[trace.task]
        y = _stacked_sm_rows(trace.sm, trace.worker)
        waiting = trace.start_ns > trace.taken_ns
        if target == "queue" and waiting.any():  # only a queue worker takes a task before its inputs are ready
            ax.hlines(y[waiting], trace.taken_ns[waiting] / 1e3, trace.start_ns[waiting] / 1e3, colors="#bbbbbb",
                      linewidth=0.6, label="waiting")
        for index, name in enumerate(schedules.KINDS):
            mine = kind == index
            ax.hlines(y[mine], trace.start_ns[mine] / 1e3, trace.end_ns[mine] / 1e3, colors=KIND_COLOURS[name],
                      linewidth=0.8, label=name)
        ax.axvline(trace.end_ns[kind == 0].max() / 1e3, color="black", linewidth=0.6, linestyle="--")
        summary = run.summaries["traces"][str(vid)]
        ax.set_title(f"{label(vid)}: {summary['b_before_last_a']} of {graph.rows} B tasks start before the last A ends",
                     fontsize="medium")
        ax.set_ylabel("SM")
        figures.legend(ax, "right")
    axes[-1, 0].set_xlabel("time since the first task was taken (µs)")
    fig.tight_layout()
    counts = ", ".join(f"{label(VariantId(t, case, 'graph'))} {run.summaries['traces'][str(VariantId(t, case, 'graph'))]['b_before_last_a']}"
                       for t in targets)
    return figures.describe(fig, (
        f"Per-SM timelines of one traced graph replay on the {case} case for each of {len(targets)} designs: every "
        "task a short bar on its SM's line, blue for A, orange for B, green for C, grey where a queue worker held a "
        f"task whose inputs were not ready, a dashed line at the end of the last A. B tasks started before the last "
        f"A ended: {counts}."))


def _stacked_sm_rows(sm: np.ndarray, worker: np.ndarray) -> np.ndarray:
    """y = SM + (rank of the worker among the workers seen on that SM) / (their count + 1)."""
    y = sm.astype(np.float64).copy()
    for value in np.unique(sm):
        on_sm = sm == value
        workers = np.unique(worker[on_sm])
        y[on_sm] += np.searchsorted(workers, worker[on_sm]) / (workers.size + 1)
    return y


def speedup_figure(run):
    """Every design's graph against the three-kernel graph, per case: dots are medians of the within-round
    ratios, bars their 95 % bootstrap interval; the dashed line is 1 (as fast), the dotted one the target."""
    from launchlab.present import figures

    ratios = run.summaries["speedup_vs_graph3"]
    variants = [vid for vid in main_variants_of(cases(run)[0], designs_of(run))
                if vid.submission == "graph" and vid != baseline(vid.case)]
    fig, axes = figures.figure(1, 1, height=4.4, layout="constrained")
    ax, offsets = axes[0, 0], np.linspace(-0.15, 0.15, len(cases(run)))
    for index, case in enumerate(cases(run)):
        mine = [ratios[str(VariantId(v.target, case, "graph"))] for v in variants]
        median = np.array([r["median"] for r in mine])
        spread = [median - [r["ci_low"] for r in mine], np.array([r["ci_high"] for r in mine]) - median]
        ax.errorbar(median, np.arange(len(variants)) + offsets[index], xerr=spread, fmt=figures.MARKERS[index],
                    color=figures.COLOURS[index], label=f"{case} case")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=0.8, gid=figures.REFERENCE_GID, label="as fast (1×)")
    from launchlab.chapters.megakernels.findings import SPEEDUP_TARGETS

    targets = {case: SPEEDUP_TARGETS[f"best_one_launch.{case}"] for case in cases(run)
               if f"best_one_launch.{case}" in SPEEDUP_TARGETS}
    for index, case in enumerate(cases(run)):  # each case declared its own target for its best one-launch design
        if case in targets:
            ax.axvline(targets[case], color=figures.COLOURS[index], linestyle=":", linewidth=1.2,
                       gid=figures.REFERENCE_GID, label=f"{case} target ({targets[case]:g}×)")
    ax.set_yticks(np.arange(len(variants)), [DESIGN[v.target].label for v in variants])
    ax.invert_yaxis()
    ax.set_xlabel("speed-up over the three-kernel graph, warm L2 (×)")
    ax.grid(axis="x", alpha=0.3)
    figures.legend(ax, "below")
    return figures.describe(fig, (
        f"Dot plot with one row per design graph ({len(variants)} rows): its speed-up over the three-kernel graph "
        f"with a warm L2, for the {' and '.join(cases(run))} cases, medians with 95 % bootstrap intervals, a dashed "
        "line at 1× (as fast) and a dotted one at each case's declared one-launch target ("
        + ", ".join(f"{case} {target:g}×" for case, target in targets.items()) + ")."))
