"""Chapter 4's tables, figures and glued values, all read from the run."""
from __future__ import annotations

import math

import numpy as np

from launchlab.chapters.megakernels import (CHAPTER, DESIGN, DESIGNS, SUBMISSIONS, active_designs, baseline, design_of,
                                            is_one_launch, label, logical_bytes, parse_cases, parse_sweep,
                                            stream_submissions, sweep_variant)
from launchlab.measure.variant import VariantId
from launchlab.chapters.megakernels import schedules

KIND_COLOURS = {"A": "#0072B2", "B": "#D55E00", "C": "#009E73"}
OVERLAP_FORBIDDEN = ("three_kernel", "cooperative")  # schedules with a boundary between the phases


def cases(run) -> list[str]:
    return parse_cases(run.record.parameters["tiled_cases"])


def sweep(run) -> list[int]:
    return parse_sweep(run.record.parameters["sweep_workers_per_sm"])


QUEUE_STYLE = ("three_kernel", "cooperative", "queue")  # schedules.py's schedules (overlap counts, waits)
BUILD_LABELS = {"fused_softmax": "fused_softmax_packed"}  # run.build_modules' label where it is not the family


def designs_of(run) -> list:
    """The run's designs, in DESIGNS order."""
    return active_designs(CHAPTER.parse_parameters(run.record.parameters))


def main_variants_of(case: str, designs=None) -> list[VariantId]:
    """The main variants of a case, in table order (default: the three designs every run has)."""
    designs = [d for d in DESIGNS if d.group is None] if designs is None else designs
    return [VariantId(d.target, case, s) for d in designs for s in SUBMISSIONS]


def _cell(summary: dict) -> str:
    """A time: median [p10–p90] over the rounds, three significant figures."""
    from launchlab.present import tables

    return tables.median_with_band(summary)


def _interval(ratio: dict) -> str:
    """A paired ratio: median [95 % bootstrap interval of the median], two decimals."""
    from launchlab.present import tables

    return tables.median_with_band(ratio, tables.CI)


def _us(ns: float, digits: int = 2) -> str:
    return f"{ns / 1e3:.{digits}f}"


def _event(run, vid) -> dict:
    return run.summaries["timing"][str(vid)]["warm_batch"]["event_us"]


# --------------------------------------------------------------------------- tables
def resources_table(run):
    """Per kernel: registers and shared memory of the loaded binary, resident blocks per SM, blocks launched."""
    import pandas as pd

    details, rows = run.record.details, {}
    grids = details["persistent_grids"]
    first = cases(run)[0]
    designs = designs_of(run)
    for family in dict.fromkeys(d.family for d in designs):
        loaded = run.json(f"builds/{BUILD_LABELS.get(family, family)}/record.json")["resources_loaded"]
        for kernel, resources in loaded.items():
            if kernel in details["three_kernel_resident_blocks_per_sm"]:
                per_sm = details["three_kernel_resident_blocks_per_sm"][kernel]
                launched = "one per row" if kernel == "row_combiner" else "one per tile"
            elif str(VariantId(_design_of_kernel(kernel, designs).target, first, "stream")) in grids:
                grid = grids[str(VariantId(_design_of_kernel(kernel, designs).target, first, "stream"))]
                per_sm, launched = grid["resident_blocks_per_sm"], f"{grid['workers']} ({grid['blocks_per_sm']} per SM)"
            else:
                per_sm, launched = None, _launched(run, kernel, _design_of_kernel(kernel, designs), first)
            rows[kernel] = {"registers / thread": resources["registers"], "static shared (bytes)": resources["shared_bytes"],
                            "local (bytes)": resources["local_bytes"],
                            "resident blocks / SM": "—" if per_sm is None else per_sm,
                            "co-resident blocks": "—" if per_sm is None else per_sm * details["sm_count"],
                            "blocks launched": launched}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("kernel")


def _design_of_kernel(kernel: str, designs):
    return next(d for d in designs if kernel in d.kernels)


def _launched(run, kernel: str, design, case: str) -> str:
    """Blocks an added design's kernel launches, in words (first case)."""
    facts = run.record.details.get("design_launches", {}).get(str(VariantId(design.target, case, "stream")), {})
    if design.target == "depend":
        return f"{facts['workers']} workers (cooperative), {facts['cached_tiles']} of {facts['tiles']} tiles kept on chip"
    if design.target == "cluster":
        return "; ".join(f"{rows} clusters of {k}" for k, rows in facts["classes"]) + f" ({case})"
    if design.target == "fused_row":
        return f"one per row, {facts['block']} threads"
    return "one per row" if kernel == "pdl_row_combiner" else "one per tile"


def graph_table(run):
    """Node records of each captured graph, from CUDA's DOT text."""
    import pandas as pd

    rows = {}
    edges = run.summaries.get("graph_edges", {})
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            graph = run.summaries["graphs"].get(str(vid))
            if graph:
                typed = edges.get(str(vid))
                rows[(case, DESIGN[vid.target].label)] = {
                    "kernel nodes": graph["counts"]["kernel"], "other nodes": graph["counts"]["other"],
                    "edges": graph["edges"],
                    "programmatic edges (driver)": "not read" if typed is None else typed.get("programmatic", 0),
                    "host submissions from the stream": graph["stream_submissions"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "graph of"])


def timing_table(run):
    """Per case and variant: event interval per invocation in a batch, host enqueue and completion of one call."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            m = run.summaries["timing"][str(vid)]
            rows[(case, label(vid))] = {"event interval per call, batch (µs)": _cell(m["warm_batch"]["event_us"]),
                                        "host enqueue, 1 call (µs)": _cell(m["warm_single"]["enqueue_us"]),
                                        "host completion, 1 call (µs)": _cell(m["warm_single"]["complete_us"])}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant"])


def speedup_table(run):
    """The three-kernel graph's event interval over each variant's, within each round (>1: the variant is faster)."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            if vid != baseline(case):
                rows.setdefault(label(vid), {})[case] = _interval(run.summaries["speedup_vs_graph3"][str(vid)])
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("speed-up over 3 kernels, graph (×)")


def trace_table(run):
    """Per traced main variant: checks, B tasks started before the last A ended (trace and model), spans (trace and
    model), median handoffs A→B and B→C, the median wait of a B task for its inputs, workers."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case):
            t = run.summaries["traces"][str(vid)]
            rows[(case, label(vid))] = {
                "checks": "passed" if t["passed"] else "FAILED: " + ", ".join(k for k, v in t["checks"].items() if not v),
                "B before last A": f"{t['b_before_last_a']} of {t['b_tasks']}", "model": t["model"]["b_before_last_a"],
                "span (µs)": _us(t["makespan_ns"], 1), "model span (µs)": _us(t["model"]["makespan_ns"], 1),
                "A→B (µs)": _us(t["handoff_ns.B"]["median"]), "B→C (µs)": _us(t["handoff_ns.C"]["median"]),
                "B wait (µs)": _us(t["wait_ns.B"]["median"]), "workers": t["workers"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant"])


def sweep_rows(run) -> list[dict]:
    """One row per case, swept design and blocks per SM: time, speed-ups, overlap (trace and model), waits."""
    rows = []
    for case in cases(run):
        for design in (d for d in DESIGNS if d.swept):
            for per_sm in sweep(run):
                vid = sweep_variant(design.target, case, per_sm)
                trace = run.summaries["traces"][str(vid)]
                rows.append({"case": case, "design": design.target, "blocks_per_sm": per_sm, "variant": vid,
                             "workers": trace["workers"], "event_us": _event(run, vid),
                             "speedup_vs_graph3": run.summaries["speedup_vs_graph3"][str(vid)],
                             "speedup_vs_coop": run.summaries["speedup_vs_coop"].get(str(vid)),
                             "b_before_last_a": trace["b_before_last_a"], "b_tasks": trace["b_tasks"],
                             "model_b_before_last_a": trace["model"]["b_before_last_a"],
                             "b_wait_total_ns": trace["wait_ns.B"]["total"], "makespan_ns": trace["makespan_ns"],
                             "passed": trace["passed"]})
    return rows


def sweep_table(run):
    """The persistent kernels over worker blocks per SM, replayed as graphs: time, speed-up over the three-kernel
    graph, the queue's speed-up over the cooperative kernel, B tasks before the last A (trace, model), the total
    time B tasks waited for their inputs, the trace checks."""
    import pandas as pd

    rows = {}
    for r in sweep_rows(run):
        rows[(r["case"], DESIGN[r["design"]].label, r["blocks_per_sm"])] = {
            "workers": r["workers"], "time (µs)": _cell(r["event_us"]),
            "speed-up (×)": _interval(r["speedup_vs_graph3"]),
            "over coop (×)": _interval(r["speedup_vs_coop"]) if r["speedup_vs_coop"] else "—",
            "B before last A": f"{r['b_before_last_a']} of {r['b_tasks']}", "model": r["model_b_before_last_a"],
            "B wait, all (µs)": _us(r["b_wait_total_ns"], 1), "checks": "passed" if r["passed"] else "FAILED"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "design", "blocks / SM"])


def design_trace_table(run):
    """Per traced variant of an added design: its model's checks, the span of the trace and of the model
    replaying the trace's durations, median hand-offs A→B and B→C, B tasks started before the last A, places."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case, [d for d in designs_of(run) if d.schedule and d.schedule not in QUEUE_STYLE]):
            t = run.summaries["traces"].get(str(vid))
            if t is None:
                continue
            failed = ", ".join(k for k, v in t["checks"].items() if not v)
            row = {"checks": "passed" if t["passed"] else f"FAILED: {failed}"}
            if "span_ns" in t:
                row.update({"span (µs)": _us(t["span_ns"], 1), "model span (µs)": _us(t["model"]["model_span_ns"], 1),
                            "A→B (µs)": _us(t["handoff_ns.B"]["median"]), "B→C (µs)": _us(t["handoff_ns.C"]["median"]),
                            "B before last A": f"{t['b_before_last_a']} of {t['b_tasks']}",
                            "places": t["workers"]})
            rows[(case, label(vid))] = row
    return pd.DataFrame.from_dict(rows, orient="index").fillna("—").rename_axis(["case", "variant"])


def _launches(design, case: str) -> int:
    return stream_submissions(design, case)


def pays_rows(run) -> list[dict]:
    """Every main variant of every case: warm and cold time, speed-ups over the three-kernel graph (warm, cold),
    host submissions per invocation, grid-wide synchronisations, logical bytes."""
    s, rows = run.summaries, []
    for case in cases(run):
        lengths = _lengths(case)
        for vid in main_variants_of(case, designs_of(run)):
            design = DESIGN[vid.target]
            timing = s["timing"][str(vid)]
            read, written = logical_bytes(lengths, design.bytes_rule)
            rows.append({"case": case, "variant": vid, "design": design, "warm": timing["warm_batch"]["event_us"],
                         "cold": timing.get("cold", {}).get("event_us"),
                         "speedup": s["speedup_vs_graph3"].get(str(vid)),
                         "speedup_cold": s["speedup_vs_graph3_cold"].get(str(vid)),
                         "launches": _launches(design, case), "grid_syncs": design.grid_syncs,
                         "bytes": read + written, "one_launch": is_one_launch(design, case)})
    return rows


def _lengths(case: str):
    from launchlab.model import workloads

    return workloads.tiled_row_lengths(case)


def pays_table(run):
    """When a megakernel pays: every variant's time with a warm and a cold L2, its speed-up over the three-kernel
    graph (within-round ratio, warm and cold), host submissions per invocation, grid-wide synchronisations inside
    one invocation, logical bytes moved."""
    import pandas as pd

    table = {}
    for r in pays_rows(run):
        baseline_row = r["variant"] == baseline(r["case"])
        table[(r["case"], label(r["variant"]))] = {
            "warm (µs)": _cell(r["warm"]), "cold (µs)": _cell(r["cold"]) if r["cold"] else "—",
            "speed-up, warm (×)": "1 (baseline)" if baseline_row else _interval(r["speedup"]),
            "speed-up, cold (×)": "1 (baseline)" if baseline_row else (
                _interval(r["speedup_cold"]) if r["speedup_cold"] else "—"),
            "launches / invocation": str(r["launches"]), "grid-wide syncs": str(r["grid_syncs"]),
            "logical MB": f"{r['bytes'] / 1e6:.2f}"}
    return pd.DataFrame.from_dict(table, orient="index").rename_axis(["case", "variant"])


def sanitizer_table(run):
    """compute-sanitizer's tools over every kernel of the chapter (child process, small cases)."""
    import pandas as pd

    rows = {}
    for tool, r in run.summaries.get("sanitizer", {}).items():
        rows[tool] = {"ran": "yes" if r["ran"] else f"no: {r['error']}",
                      "errors reported": "—" if r["errors"] is None else str(r["errors"]),
                      "outputs checked": str(r["child_checks"]),
                      "outputs correct": {True: "all", False: "NOT all", None: "—"}[r["child_passed"]],
                      "verdict": "clean" if r["clean"] else "NOT clean"}
    if not rows:
        rows["(none)"] = {"ran": "no: sanitizer_tools was empty", "errors reported": "—", "outputs checked": "—",
                          "outputs correct": "—", "verdict": "—"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("tool")


# --------------------------------------------------------------------------- figures
def timing_figure(run):
    """Event interval per invocation (median, p10–p90) for every main variant, the cases side by side."""
    from launchlab.present import figures

    fig, axes = figures.figure(height=4.2)
    groups = {label(vid): {case: _event(run, VariantId(vid.target, case, vid.submission)) for case in cases(run)}
              for vid in main_variants_of(cases(run)[0], designs_of(run))}
    figures.quantile_dots(axes[0, 0], groups, {case: case for case in cases(run)}, log=False)
    axes[0, 0].set_ylabel("event interval per invocation (µs)")
    axes[0, 0].set_ylim(bottom=0)
    axes[0, 0].tick_params(axis="x", labelsize="small", labelrotation=20)
    fig.tight_layout()
    return fig


def sweep_figure(run):
    """Per case: time per invocation (top) and B tasks started before the last A ended (bottom) against the
    swept designs' worker count, replayed as graphs; the three-kernel graph as a dashed reference. A design whose
    schedule allows overlap also shows its model's count (dotted, the design's colour)."""
    from launchlab.present import figures

    rows, swept = sweep_rows(run), [d for d in DESIGNS if d.swept]
    fig, axes = figures.figure(2, len(cases(run)), height=2.8, sharex=True, layout="constrained")
    for column, case in enumerate(cases(run)):
        mine = {d.target: [r for r in rows if r["case"] == case and r["design"] == d.target] for d in swept}
        workers = [r["workers"] for r in mine[swept[0].target]]
        figures.sweep(axes[0, column], workers, {d.label: [r["event_us"] for r in mine[d.target]] for d in swept},
                      ceiling=_event(run, baseline(case))["median"], ceiling_label="3 kernels, graph",
                      ylabel="µs per invocation" if column == 0 else None)
        axes[0, column].set_title(case)
        axes[0, column].set_ylim(bottom=0)
        overlap, models = {}, []
        for index, design in enumerate(swept):
            overlap[f"{design.label}, trace"] = [r["b_before_last_a"] for r in mine[design.target]]
            if design.schedule not in OVERLAP_FORBIDDEN:
                models.append((len(overlap), index))
                overlap[f"{design.label}, model"] = [r["model_b_before_last_a"] for r in mine[design.target]]
        figures.sweep(axes[1, column], workers, overlap, xlabel="worker blocks",
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
    return fig


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
        if waiting.any():
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
        ax.set_ylabel("SM (%smid)")
        figures.legend(ax, "right")
    axes[-1, 0].set_xlabel("time since the first task was taken (µs)")
    fig.tight_layout()
    return fig


def _stacked_sm_rows(sm: np.ndarray, worker: np.ndarray) -> np.ndarray:
    """y = SM + (rank of the worker among the workers seen on that SM) / (their count + 1)."""
    y = sm.astype(np.float64).copy()
    for value in np.unique(sm):
        on_sm = sm == value
        workers = np.unique(worker[on_sm])
        y[on_sm] += np.searchsorted(workers, worker[on_sm]) / (workers.size + 1)
    return y


# --------------------------------------------------------------------------- words
def verdict(ratio: dict) -> str:
    """How a variant compares with the baseline, from the bootstrap interval of baseline / variant."""
    if ratio["ci_low"] > 1:
        return "faster than"
    if ratio["ci_high"] < 1:
        return "slower than"
    return "not distinguishable from"


def compare(value: float, other: float, tolerance: float = 0.05) -> str:
    """'longer than', 'shorter than' or 'about as long as' (within `tolerance` relative)."""
    if abs(value - other) <= tolerance * max(abs(value), abs(other)):
        return "about as long as"
    return "longer than" if value > other else "shorter than"


def pays_sentence(summaries: dict, case_names) -> str:
    """Which persistent main variants beat the three-kernel graph (bootstrap interval above 1), in words."""
    faster = [f"the {label(vid)} variant on the {case} case" for case in case_names for vid in main_variants_of(case)
              if DESIGN[vid.target].persistent and verdict(summaries["speedup_vs_graph3"][str(vid)]) == "faster than"]
    if not faster:
        where = "in either case" if len(case_names) == 2 else "in any case measured"
        return (f"In this run no persistent kernel, launched from the stream or replayed as a graph, is faster than the "
                f"three kernels replayed as a graph, {where}.")
    return "In this run " + ", ".join(faster) + " beat the three kernels replayed as a graph."


def _ratio_words(ratio: dict) -> str:
    return f"{ratio['median']:.2f}× [{ratio['ci_low']:.2f}–{ratio['ci_high']:.2f}]"


def _us_words(summary: dict) -> str:
    return f"{summary['median']:.1f} µs"


def pays_findings(run, case: str, cold: bool = False) -> str:
    """The conditions under which each design wins on this case, in words, all from the run: which designs
    beat the three-kernel graph (bootstrap interval above 1), the best one-launch design, the fused row kernel
    against it, and, warm, what PDL saves per boundary."""
    s, suffix = run.summaries, "_cold" if cold else ""
    ratios, state = s[f"speedup_vs_graph3{suffix}"], "a cold L2" if cold else "a warm L2"
    rows = [r for r in pays_rows(run) if r["case"] == case and (not cold or r["variant"].submission == "graph")]
    rows = [r for r in rows if str(r["variant"]) in ratios]
    faster = [r for r in rows if verdict(ratios[str(r["variant"])]) == "faster than"]
    slower = [r for r in rows if verdict(ratios[str(r["variant"])]) == "slower than"]
    words = [f"On the {case} case with {state}, "]
    if faster:
        ranked = sorted(faster, key=lambda r: -ratios[str(r["variant"])]["median"])
        words.append(f"{len(faster)} of {len(rows)} variants beat the three kernels replayed as a graph: "
                     + "; ".join(f"{label(r['variant'])} {_ratio_words(ratios[str(r['variant'])])}" for r in ranked)
                     + ". ")
    else:
        words.append(f"none of the {len(rows)} variants beats the three kernels replayed as a graph. ")
    if slower:
        words.append(f"{len(slower)} {'is' if len(slower) == 1 else 'are'} slower than it. ")
    best = s[f"best_one_launch{suffix}"][case]
    words.append(f"The best one-launch design is the {label(best['variant'])} "
                 f"({_ratio_words(best)}, {verdict(best)} the three-kernel graph)")
    fused = VariantId("fused_row", case, "graph")
    if str(fused) in ratios and best["variant"] != str(fused):
        words.append(f"; the fused row kernel reaches {_ratio_words(ratios[str(fused)])}")
    words.append(". ")
    saving = s.get(f"pdl_saving_us_per_boundary{suffix}", {}).get(case)
    if saving is not None:
        sign = ("saves" if saving["ci_low"] > 0 else "costs" if saving["ci_high"] < 0 else
                "makes no difference we can distinguish, at")
        words.append(f"Programmatic dependent launch {sign} {abs(saving['median']):.2f} µs per kernel boundary "
                     f"[{saving['ci_low']:.2f} to {saving['ci_high']:.2f} µs] against the same kernels without it, "
                     "both replayed as graphs.")
    return "".join(words).strip()


def _key(vid) -> str:
    return str(vid).replace(".", "_").replace("-", "_")


def variant_values(run) -> dict:
    """Per variant: times, speed-ups and verdicts, trace figures, graph node counts."""
    s, values = run.summaries, {}
    for name, m in s["timing"].items():
        values[f"event_{_key(name)}"] = f"{m['warm_batch']['event_us']['median']:.1f}"
        values[f"complete_{_key(name)}"] = f"{m['warm_single']['complete_us']['median']:.1f}"
    for quantity, prefix in (("speedup_vs_graph3", "speedup"), ("speedup_vs_coop", "queue_vs_coop")):
        for name, ratio in s[quantity].items():
            values[f"{prefix}_{_key(name)}"] = f"{ratio['median']:.2f}"
            values[f"{prefix}_{_key(name)}_ci"] = f"{ratio['ci_low']:.2f}–{ratio['ci_high']:.2f}"
            values[f"{prefix}_verdict_{_key(name)}"] = verdict(ratio)
    for name, t in s["traces"].items():
        key = _key(name)
        if design_of(name)[0].schedule not in QUEUE_STYLE:  # an added design: its model's summary
            if "span_ns" in t:
                values.update({f"span_{key}": _us(t["span_ns"], 1), f"model_span_{key}": _us(t["model"]["model_span_ns"], 1),
                               f"handoff_b_{key}": _us(t["handoff_ns.B"]["median"]),
                               f"handoff_c_{key}": _us(t["handoff_ns.C"]["median"]), f"bla_{key}": str(t["b_before_last_a"])})
            values[f"checks_{key}"] = "passed" if t["passed"] else "failed"
            continue
        values.update({f"bla_{key}": str(t["b_before_last_a"]), f"model_bla_{key}": str(t["model"]["b_before_last_a"]),
                       f"span_{key}": _us(t["makespan_ns"], 1), f"model_span_{key}": _us(t["model"]["makespan_ns"], 1),
                       f"wait_b_{key}": _us(t["wait_ns.B"]["median"]), f"wait_b_total_{key}": _us(t["wait_ns.B"]["total"], 1),
                       f"handoff_b_{key}": _us(t["handoff_ns.B"]["median"]),
                       f"handoff_c_{key}": _us(t["handoff_ns.C"]["median"]),
                       f"gap_ab_{key}": _us(t["phase_gaps_ns"][0]), f"a_end_spread_{key}": _us(t["a_end_spread_ns"]),
                       f"workers_{key}": str(t["workers"]), f"checks_{key}": "passed" if t["passed"] else "failed"})
    for name, graph in s["graphs"].items():
        values[f"nodes_{_key(name)}_kernel"] = str(graph["counts"]["kernel"])
        values[f"nodes_{_key(name)}_other"] = str(graph["counts"]["other"])
    return values


def sweep_values(run, per_variant: dict) -> dict:
    """The sweep's ends (fewest and most blocks per SM), named by end rather than by count, so that the prose
    holds for any swept counts. `per_variant`: variant_values(run)."""
    points = sweep(run)
    if not points:
        return {}
    values = {}
    for end, per_sm in (("min", points[0]), ("max", points[-1])):
        values[f"sweep_{end}_per_sm"] = str(per_sm)
        values[f"sweep_{end}_blocks"] = f"{per_sm} block{'s' if per_sm != 1 else ''}"
        for case in cases(run):
            for design in (d for d in DESIGNS if d.swept):
                key = _key(sweep_variant(design.target, case, per_sm))
                for name in ("bla", "model_bla", "event", "speedup", "wait_b_total", "workers", "span"):
                    values[f"{name}_{design.target}_{end}_{case}"] = per_variant[f"{name}_{key}"]
            key = _key(sweep_variant("queue", case, per_sm))
            values[f"queue_vs_coop_{end}_{case}"] = per_variant[f"queue_vs_coop_{key}"]
            values[f"queue_vs_coop_verdict_{end}_{case}"] = per_variant[f"queue_vs_coop_verdict_{key}"]
        trace = run.summaries["traces"][str(sweep_variant("queue", cases(run)[0], per_sm))]
        a_tasks = (trace["tasks"] - trace["b_tasks"]) // 2  # as many A tasks as C tasks
        waves = math.ceil(a_tasks / trace["workers"])
        values[f"a_waves_{end}"] = str(waves)
        values[f"a_waves_{end}_phrase"] = "a single wave" if waves == 1 else f"{waves} waves"
    return values


def design_values(run) -> dict:
    """The added designs' glued values: PDL saving per boundary, best one-launch design, findings per case
    (warm and cold), sanitizer verdicts and trace counts."""
    s, values = run.summaries, {}
    for case in cases(run):
        for suffix in ("", "_cold"):
            best = s[f"best_one_launch{suffix}"][case]
            values[f"best_one_launch{suffix}_{case}"] = label(best["variant"])
            values[f"best_one_launch_speedup{suffix}_{case}"] = _ratio_words(best)
            saving = s.get(f"pdl_saving_us_per_boundary{suffix}", {}).get(case)
            values[f"pdl_saving{suffix}_{case}"] = ("not measured (pdl3 not in this run's designs)" if saving is None
                                                    else f"{saving['median']:.2f} µs [{saving['ci_low']:.2f} to "
                                                         f"{saving['ci_high']:.2f}]")
            values[f"findings{suffix}_{case}"] = pays_findings(run, case, cold=bool(suffix))
    tools = run.summaries.get("sanitizer", {})
    values["sanitizer_verdict"] = ("no compute-sanitizer tool ran in this run" if not tools else
                                   "; ".join(f"{tool}: {'clean' if r['clean'] else 'NOT clean'}" for tool, r in tools.items()))
    design_traces = {k: t for k, t in s["traces"].items() if design_of(k)[0].group}
    values["design_traces_passed"] = str(sum(t["passed"] for t in design_traces.values()))
    values["design_traces_total"] = str(len(design_traces))
    values["designs_run"] = ", ".join(f"`{d.target}`" for d in designs_of(run) if d.group) or "none"
    return values


def page_values(run) -> dict:
    """Formatted numbers and verdicts for the chapter's prose, all from the run's summaries and record."""
    s, record = run.summaries, run.record
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(record.details["sm_count"]),
              "rounds": str(record.protocol["rounds"]), "batch": str(record.protocol["batch"]),
              "warmups": str(record.protocol["warmups"]), "wait_limit_s": f"{record.details['wait_limit_ns'] / 1e9:g}"}
    first = cases(run)[0]
    for target in ("coop", "queue"):
        grid = record.details["persistent_grids"][str(VariantId(target, first, "stream"))]
        values[f"{target}_workers"] = str(grid["workers"])
        values[f"{target}_blocks_per_sm"] = str(grid["blocks_per_sm"])
    per_variant = variant_values(run)
    values.update(per_variant)
    values.update(sweep_values(run, per_variant))
    for case in cases(run):
        event = {vid.target + "_" + vid.submission: _event(run, vid)["median"] for vid in main_variants_of(case)}
        saved_by_graph = event["tiled3_stream"] - event["tiled3_graph"]
        for target in ("coop", "queue"):  # the share of the graph's saving that one launch from the stream recovers
            share = (event["tiled3_stream"] - event[f"{target}_stream"]) / saved_by_graph if saved_by_graph > 0 else float("nan")
            values[f"recovered_{target}_{case}"] = f"{100 * share:.0f} %"
        coop, graph3 = s["traces"][str(VariantId("coop", case, "graph"))], s["traces"][str(baseline(case))]
        values[f"barrier_vs_boundary_{case}"] = compare(coop["phase_gaps_ns"][0], graph3["phase_gaps_ns"][0])
    queue_trace = s["traces"][str(VariantId("queue", first, "graph"))]
    a_tasks = (queue_trace["tasks"] - queue_trace["b_tasks"]) // 2  # as many A tasks as C tasks
    values["a_tasks"] = str(a_tasks)
    values["a_wave_phrase"] = ("fit in a single wave of" if a_tasks <= queue_trace["workers"]
                               else "need more than one wave of")
    values["pays_sentence"] = pays_sentence(s, cases(run))
    values.update(design_values(run))
    values["traces_passed"] = str(sum(t["passed"] for t in s["traces"].values()))
    values["traces_total"] = str(len(s["traces"]))
    values["validation_checks"] = str(record.validation["checks"])
    values.update(target_values(run))
    values.update(model_gap_values(run))
    return values


# --------------------------------------------------------------------------- tables as the page shows them
TARGET_SPEEDUP = 1.5  # the chapter's target for a one-launch design: this many times the three-kernel graph, both cases
TIME_NOTE = "Times: median over the rounds [p10–p90]."
RATIO_NOTE = ("Speed-ups: the three-kernel graph's event interval over the variant's within each round, median "
              "[95 % bootstrap interval of the median]; above 1 the variant is faster.")
PAGE_TABLES = {  # name -> (table function, caption, note, CSV name for a long table)
    "resources": (resources_table, "Per kernel: resources of the loaded binary and the blocks it runs.", None, None),
    "graphs": (graph_table, "Node records of each captured graph, read from CUDA's DOT text and the driver.", None,
               None),
    "speedup": (speedup_table, "Speed-up over the three kernels replayed as a graph, warm L2 (×).", RATIO_NOTE,
                None),
    "timing": (timing_table, "Event interval per call in a warm batch, host enqueue and completion of one call.",
               TIME_NOTE, "megakernels-timing"),
    "traces": (trace_table, "One traced invocation of each main variant, trace beside the model replaying it.",
               "Counts are of 128 B tasks; times are of the one traced invocation (µs).", None),
    "sweep": (sweep_table, "The persistent kernels over worker blocks per SM, replayed as graphs.",
              TIME_NOTE + " " + RATIO_NOTE + " Over coop: the cooperative kernel's time over the queue's, same "
              "bracket.", "megakernels-sweep"),
    "design_traces": (design_trace_table, "One traced invocation of each added design with a schedule model.",
                      "Times are of the one traced invocation (µs).", None),
    "pays": (pays_table, "Every variant, warm and cold L2: time, speed-up over the three-kernel graph, costs.",
             TIME_NOTE + " " + RATIO_NOTE, "megakernels-pays"),
    "sanitizer": (sanitizer_table, "compute-sanitizer over every kernel of the chapter.", None, None),
}


def page_table(run, name: str):
    """One of the chapter's tables as the page shows it: every cell whole (never elided), headers as written,
    a note saying what brackets hold, a long table folded and written as CSV too."""
    from launchlab.present import tables

    function, caption, note, csv = PAGE_TABLES[name]
    frame = function(run)
    if name == "sweep" and (frame["checks"] == "passed").all():  # one note instead of a column of "passed"
        frame, note = frame.drop(columns="checks"), note + " Every traced run passed its checks."
    if name == "sweep":  # counts of the 128 B tasks as integers, so the column stays narrow
        frame["B before last A"] = frame["B before last A"].map(lambda text: int(text.split(" of ")[0]))
        sms = run.record.device["sm_count"]
        frame = frame.drop(columns="workers")  # blocks per SM x SMs, said in the note instead
        note += (" B early: B tasks, of 128, that started before the last A task ended (trace, and the model)."
                 f" Workers: blocks per SM × {sms} SMs.")
    if name == "pays":  # one narrow column for the two counts
        frame = frame.assign(**{"launches / grid syncs": frame["launches / invocation"] + " / " + frame["grid-wide syncs"]})
        frame = frame.drop(columns=["launches / invocation", "grid-wide syncs"])
    names = [*(n for n in frame.index.names if n is not None), *frame.columns]
    headers = {n: SHORT_HEADERS.get(n, str(n)) for n in names}
    return tables.page_table(frame, headers=headers, caption=caption, note=note, csv=csv)


SHORT_HEADERS = {"launches / invocation": "launches", "grid-wide syncs": "grid syncs", "logical MB": "logical (MB)",
                 "speed-up, warm (×)": "warm speed-up (×)", "speed-up, cold (×)": "cold speed-up (×)",
                 "B wait, all (µs)": "B wait (µs)", "B before last A": "B early", "model": "model"}


# --------------------------------------------------------------------------- the target, and why it is missed
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
    ax.axvline(TARGET_SPEEDUP, color="black", linestyle=":", linewidth=1.0, gid=figures.REFERENCE_GID,
               label=f"target ({TARGET_SPEEDUP:g}×)")
    ax.set_yticks(np.arange(len(variants)), [DESIGN[v.target].label for v in variants])
    ax.invert_yaxis()
    ax.set_xlabel("speed-up over the three-kernel graph, warm L2 (×)")
    ax.grid(axis="x", alpha=0.3)
    figures.legend(ax, "below")
    return fig


def target_values(run) -> dict:
    """The one-launch target against the best one-launch design per case, and the ragged case's geometry that
    explains the fused row kernel's result there."""
    from launchlab.model import workloads

    s, values = run.summaries, {"target_speedup": f"{TARGET_SPEEDUP:g}×"}
    for case in cases(run):
        best = s["best_one_launch"][case]
        values[f"target_{case}"] = "met" if best["ci_low"] >= TARGET_SPEEDUP else "missed"
        values[f"best_median_{case}"] = f"{best['median']:.2f}×"
        lengths = np.asarray(workloads.tiled_row_lengths(case))
        values[f"rows_{case}"] = f"{lengths.size:,}"
        values[f"longest_row_{case}"] = f"{int(lengths.max()):,}"
        values[f"long_rows_{case}"] = str(int((lengths == lengths.max()).sum()))
        values[f"shortest_row_{case}"] = f"{int(lengths.min()):,}"
        values[f"long_row_share_{case}"] = f"{100 * lengths[lengths == lengths.max()].sum() / lengths.sum():.0f} %"
    return values


def take_gap_ns(run, vid) -> np.ndarray:
    """Per worker of a traced queue run: the time from the end of one task to the take of its next. The queue
    model charges nothing here (`schedules.replay`); the trace holds the fetch, the publish and the record."""
    trace, _ = schedules.load_trace(run.file(f"traces/{vid}.npz"))
    gaps = []
    for worker in np.unique(trace.worker):
        mine = trace.worker == worker
        order = np.argsort(trace.taken_ns[mine])
        gaps.append(trace.taken_ns[mine][order][1:] - trace.end_ns[mine][order][:-1])
    return np.concatenate(gaps)


def model_gap_values(run) -> dict:
    """Where the queue model and the traces disagree (fewest blocks per SM of the sweep): the gap between tasks
    that the model leaves out, beside the median A task's run time, and the share of the span workers ran tasks."""
    points = sweep(run)
    if not points:
        return {}
    values = {}
    for case in cases(run):
        vid = sweep_variant("queue", case, points[0])
        trace, gaps = run.summaries["traces"][str(vid)], take_gap_ns(run, vid)
        busy = sum(trace[f"run_ns.{k}"]["total"] for k in schedules.KINDS) / (trace["workers"] * trace["makespan_ns"])
        values.update({f"take_gap_min_{case}": _us(float(np.median(gaps))),
                       f"run_a_min_{case}": _us(trace["run_ns.A"]["median"]),
                       f"busy_min_{case}": f"{100 * busy:.0f} %"})
    return values
