"""Chapter 4's page: its tables as the page shows them, its figures and its glued values, all read from the
run (tables in page_tables, figures in page_figures, values and sentences in page_words)."""
from __future__ import annotations

from launchlab.chapters.megakernels import baseline
from launchlab.chapters.megakernels.page_figures import (gantt_figure, speedup_figure, sweep_figure,  # noqa: F401
                                                         timing_figure)
from launchlab.chapters.megakernels.page_flow import (chain_figure, chain_table, flow_values, handoff_figure,  # noqa: F401
                                                      handoff_table, targets_table)
from launchlab.chapters.megakernels.page_tables import (_event, cases, design_trace_table, designs_of,  # noqa: F401
                                                        graph_table,
                                                        main_variants_of, pays_table, resources_table, sanitizer_table,
                                                        sweep_rows, sweep_table, timing_table,
                                                        trace_table)
from launchlab.chapters.megakernels.page_words import (compare, design_values, model_gap_values,  # noqa: F401
                                                       paid_values, pays_findings, pays_sentence, sweep_values,
                                                       target_values, variant_values, verdict)
from launchlab.measure.variant import VariantId


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
    values["pays_sentence"] = pays_sentence(s, cases(run), designs_of(run))
    values.update(design_values(run))
    values["validation_checks"] = str(record.validation["checks"])
    values.update(target_values(run))
    values.update(model_gap_values(run))
    values.update(flow_values(run))
    values.update(paid_values(run))
    return values


TIME_NOTE = "Times: median over the rounds [p10–p90]."
RATIO_NOTE = ("Speed-ups: the three-kernel graph's event interval over the variant's within each round, median "
              "[95 % bootstrap interval of the median]; above 1 the variant is faster.")


PAGE_TABLES = {  # name -> (table function, caption, note, CSV name for a long table)
    "resources": (resources_table, "Per kernel: resources of the loaded binary and the blocks it runs.", None, None),
    "graphs": (graph_table, "Node records of each captured graph, read from CUDA's DOT text and the driver.", None,
               None),
    "timing": (timing_table, "Host enqueue and completion of one synchronised call (the event interval of a warm "
               "batch is the warm time of the table of every variant below).", TIME_NOTE, "megakernels-timing"),
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
    "handoff": (handoff_table, "Hand-offs of every persistent design's main graph trace, beside its schedule model.",
                "SM idle: per SM, the time between two consecutive tasks during which it runs none (one value per "
                "task after an SM's first); worker gap: the same per worker, waiting for inputs included; model: the "
                "design's schedule model replaying the trace's task durations, each task on its measured SM; trace "
                "cost: median traced minus untraced graph replay.", None),
    "chain": (chain_table, "The chain: k dependent stages of the tiled step, every stage's output in global memory.",
              "Times: median over the rounds (µs). Speed-ups: the PDL graph's (or the chained fused row kernel's) "
              "event interval over the contender's within each round, median [95 % bootstrap interval], with the "
              "same decimals down a column.", "megakernels-chain"),
    "targets": (targets_table, "The chapter's benchmark targets, declared before the run, warm L2.",
                "A speed-up target is met only where the low end of its 95 % interval reaches it; a hand-off target "
                "where the median SM-idle time is at most it. Every persistent design's median SM-idle time is zero, "
                "so the hand-off targets are met by all of them; the worker gap of the hand-off table is what tells "
                "them apart.", None),
}


def page_table(run, name: str):
    """One of the chapter's tables as the page shows it: every cell whole (never elided), headers as written,
    a note saying what brackets hold, a long table folded and written as CSV too."""
    from launchlab.present import tables

    function, caption, note, csv = PAGE_TABLES[name]
    frame = function(run)
    if name in ("sweep", "traces") and (frame["checks"] == "passed").all():  # a note, not a column of "passed"
        frame, note = frame.drop(columns="checks"), note + " Every traced run passed its checks."
    if name == "traces" and frame["workers"].nunique() == 1:  # one worker count: said once, so the table fits
        note += f" Every traced run had {frame['workers'].iloc[0]} worker blocks."
        frame = frame.drop(columns="workers")
    if name == "sweep":  # counts of the 128 B tasks as integers, so the column stays narrow
        early = frame["B before last A"].map(lambda text: text.split(" of ")[0])  # one narrow column for both counts
        frame["B before last A"] = early + " (" + frame["model"].astype(str) + ")"
        frame = frame.drop(columns="model")
        sms = run.record.device["sm_count"]
        frame = frame.drop(columns="workers")  # blocks per SM x SMs, said in the note instead
        note += (" B early: B tasks, of 128, that started before the last A task ended in the trace (in brackets: "
                 "the model's count)."
                 f" Workers: blocks per SM × {sms} SMs.")
    if name == "pays":  # one narrow column for the two counts
        frame = frame.assign(**{"launches / syncs": frame["launches / invocation"] + " / " + frame["grid-wide syncs"]})
        frame = frame.drop(columns=["launches / invocation", "grid-wide syncs"])
        note += (" Launches / syncs: host submissions of one invocation from the stream / grid-wide synchronisations "
                 "inside it. MB: the logical megabytes one invocation moves through global memory.")
    names = [*(n for n in frame.index.names if n is not None), *frame.columns]
    headers = {n: SHORT_HEADERS.get(n, str(n)) for n in names}
    return tables.page_table(frame, headers=headers, caption=caption, note=note, csv=csv)


SHORT_HEADERS = {"launches / invocation": "launches", "grid-wide syncs": "grid syncs", "logical MB": "MB",
                 "speed-up, warm (×)": "warm speed-up (×)", "speed-up, cold (×)": "cold speed-up (×)",
                 "B wait, all (µs)": "B wait (µs)", "B before last A": "B early", "model": "model"}
