"""Chapter 1's tables, figures and glued values, all read from the run."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.ordinary_launches import ROW_KERNELS, ROWS, page_answer
from launchlab.measure.variant import VariantId
from launchlab.present import figures, tables

# (measurement, metric) -> what the column holds; units are µs per invocation
TIMING_COLUMNS = {
    ("warm_single", "enqueue_us"): "host enqueue, 1 synchronised call",
    ("warm_single", "complete_us"): "host completion, 1 synchronised call",
    ("warm_batch", "enqueue_us"): "host enqueue per call, batch",
    ("warm_batch", "complete_us"): "host completion per call, batch",
    ("warm_batch", "event_us"): "event interval per call, batch",
}
FROM_WHERE = {"stream": "CuPy from Python", "native": "C++ loop (cuLaunchKernel)"}


def _row_variants(run) -> dict[str, dict]:
    """{shape: measurements} of the warm row-path variants."""
    return {VariantId.parse(v).case: m for v, m in run.summaries["timing"].items()
            if v.startswith("row4.") and "warm_batch" in m}


def _launches(vid: VariantId) -> int:
    """Kernel launches of one invocation of the variant's row."""
    return next(len(row.kernels) for row in ROWS if row.name == vid.target)


def _per_launch(summary: dict, vid: VariantId) -> dict:
    """A per-invocation summary divided by the invocation's launches (quantiles scale exactly)."""
    return {**summary, **{key: summary[key] / _launches(vid) for key in ("median", "p10", "p90")}}


def timing_table(run):
    rows = [{"shape": shape, **{label: m[measurement][metric] for (measurement, metric), label in TIMING_COLUMNS.items()}}
            for shape, m in _row_variants(run).items()]
    return tables.page_table(rows, index="shape", units={label: "µs" for label in TIMING_COLUMNS.values()},
                             headers={"shape": "Shape (rows×columns)"},
                             caption="The row path in one stream: three clocks (host enqueue, host completion, "
                                     "CUDA events) read five ways, per invocation.")


def _launch_label(vid: VariantId) -> str:
    what = "empty kernel" if vid.target == "empty" else f"row path {vid.case} (4 launches)"
    return f"{what}, {FROM_WHERE[vid.submission]}"


def launch_table(run):
    rows = []
    for variant, m in run.summaries["timing"].items():
        if "enqueue" in m:
            vid = VariantId.parse(variant)
            rows.append({"what is launched, from where": _launch_label(vid),
                         "host enqueue per launch": m["enqueue"]["enqueue_us_per_launch"],
                         "host completion per launch": _per_launch(m["enqueue"]["complete_us"], vid)})
    return tables.page_table(rows, index="what is launched, from where",
                             units={"host enqueue per launch": "µs", "host completion per launch": "µs"},
                             caption="Host cost of one launch: batches enqueued back to back, no events.")


def gap_table(run):
    """Per traced shape and kernel: span of its blocks and the idle gap before it (µs)."""
    rows = []
    for shape, timeline in run.summaries["timelines"].items():
        for span in timeline["kernels"]:
            gap = span["gap_before_ns"]
            rows.append({"shape": shape, "kernel": span["kernel"], "span of its blocks": span["span_ns"] / 1e3,
                         "idle gap before it": "first kernel" if gap is None else tables.fmt_sig(gap / 1e3)})
    return tables.page_table(rows, index=["shape", "kernel"], formats={"idle gap before it": "text"},
                             units={"span of its blocks": "µs", "idle gap before it": "µs"},
                             caption="One traced invocation per shape (instrumented build, never timed).")


def timing_figure(run):
    fig, axes = figures.figure(height=3.4)
    groups = {shape: {label: m[measurement][metric] for (measurement, metric), label in TIMING_COLUMNS.items()}
              for shape, m in _row_variants(run).items()}
    # A linear axis from zero: the readings span less than a factor of five, and plain ticks read at a glance.
    figures.quantile_dots(axes[0, 0], groups, {label: label for label in TIMING_COLUMNS.values()}, log=False,
                          legend_where=None)
    axes[0, 0].set_ylim(bottom=0)
    axes[0, 0].set_ylabel("µs per invocation")
    axes[0, 0].set_xlabel("shape (rows×columns)")
    return figures.describe(figures.finish(fig), (
        f"Dot plot, one cluster per shape ({', '.join(groups)}): the five readings of one row-path invocation in µs "
        "from zero (host enqueue and host completion of one synchronised call; host enqueue, host completion and "
        "event interval per call of a batch), each a median with a p10–p90 bar."))


def launch_figure(run):
    fig, axes = figures.figure(height=3.0)
    groups = {}
    for variant, m in run.summaries["timing"].items():
        if "enqueue" in m:
            vid = VariantId.parse(variant)
            groups[f"{'empty' if vid.target == 'empty' else 'row path'}\n{FROM_WHERE[vid.submission]}"] = {
                "enqueue": m["enqueue"]["enqueue_us_per_launch"], "completion": _per_launch(m["enqueue"]["complete_us"], vid)}
    figures.quantile_dots(axes[0, 0], groups, {"enqueue": "host enqueue per launch",
                                               "completion": "host completion per launch"}, log=False, legend_where=None)
    axes[0, 0].set_ylabel("µs per launch")
    axes[0, 0].set_ylim(bottom=0)
    return figures.describe(figures.finish(fig), (
        "Dot plot of the host time per launch (enqueue and completion, medians with p10–p90 bars) for "
        + ", ".join(g.replace(chr(10), " from ") for g in groups) + "."))


def timeline_figure(run):
    """Each SM's span of each kernel in one traced invocation per shape (the summaries' sm_spans)."""
    shapes = list(run.summaries["timelines"])
    fig, axes = figures.figure(len(shapes), 1, height=2.4 * len(shapes))
    for ax, shape in zip(axes[:, 0], shapes):
        spans = run.summaries["timelines"][shape]["sm_spans"]
        sm = [np.array([s[0] for s in spans[name]]) for name in ROW_KERNELS]
        start = [np.array([s[1] for s in spans[name]]) for name in ROW_KERNELS]
        end = [np.array([s[2] for s in spans[name]]) for name in ROW_KERNELS]
        figures.block_timeline(ax, start, end, sm, [f"K{k} {name}" for k, name in enumerate(ROW_KERNELS, 1)],
                               f"{shape.replace('x', '×')}: each SM's span of K1–K4", legend_where=None)
    return figures.describe(figures.finish(fig), (
        f"Timelines of one traced invocation at each of {', '.join(shapes)}: for every SM a row of coloured bars, "
        "one colour per kernel K1 to K4, from its first block's start to its last block's end; white space is "
        "time when no block of the path ran."))


def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record."""
    record, headline = run.record, run.headline
    protocol = record.protocol
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(record.device["sm_count"]),
              "l2_mib": f"{record.device['l2_bytes'] / 2**20:.0f}", "rounds": str(protocol["rounds"]),
              "batch": str(protocol["batch"]), "large_batch": str(protocol["large_batch"]),
              "warmups": str(protocol["warmups"])}
    for shape, m in _row_variants(run).items():
        for (measurement, metric), _ in TIMING_COLUMNS.items():
            values[f"row4_{shape}_{measurement}_{metric}"] = tables.fmt_sig(m[measurement][metric]["median"])
    for variant, m in run.summaries["timing"].items():
        if "enqueue" in m:
            vid = VariantId.parse(variant)
            key = f"launch_{vid.submission}_{vid.target}"
            values[f"{key}_enqueue"] = tables.fmt_sig(m["enqueue"]["enqueue_us_per_launch"]["median"])
            values[f"{key}_complete"] = tables.fmt_sig(m["enqueue"]["complete_us"]["median"] / _launches(vid))
    if "cupy_over_native.empty" in headline:
        values["cupy_over_native_empty"] = tables.fmt_fixed(headline["cupy_over_native.empty"], 2)
    values.update(pace_values(run))
    values.update(page_answer.answer_values(run))
    for shape, timeline in run.summaries["timelines"].items():
        values[f"trace_{shape}_gaps_us"] = tables.fmt_sig(headline[f"trace_gaps_us.{shape}"])
        values[f"trace_{shape}_total_us"] = tables.fmt_sig(timeline["kernels"][-1]["last_end_ns"] / 1e3)
        values[f"trace_{shape}_timer_step_ns"] = str(timeline["timer_step_ns"])
    return values


def pace_values(run) -> dict:
    """The summaries' pace findings, formatted for the prose."""
    values = {}
    for variant, pace in run.summaries["pace"].items():
        shape = VariantId.parse(variant).case
        values[f"pace_{shape}"] = pace["paced_by"]
        values[f"event_over_enqueue_{shape}"] = f"{pace['event_over_enqueue']:.2f}"
        values[f"single_vs_batch_enqueue_{shape}"] = pace["single_vs_batch_enqueue"]
        values[f"single_over_batch_enqueue_{shape}"] = f"{pace['single_over_batch_enqueue']:.2f}"
    from launchlab.present.glue import pace_sentence

    row_batches = {}
    for variant, pace in run.summaries["launch_pace"].items():
        vid = VariantId.parse(variant)
        values[f"launch_{vid.submission}_{vid.target}_pace"] = pace["paced_by"]
        if vid.target != "empty":
            row_batches[f"the {'Python' if vid.submission == 'stream' else 'C++ loop'} batch"] = pace["paced_by"]
    values["launch_row4_pace_sentence"] = pace_sentence(row_batches)
    return values
