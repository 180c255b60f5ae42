"""Example B's tables, figures and glued values: formatted from the run's summaries, headline and record."""
from __future__ import annotations

from launchlab.chapters.example_a_pointwise.page import (VERDICT_WORDS, article_table, sanitizer_sentence,
                                                       sanitizer_table,  # noqa: F401 (the notebook calls it)
                                                       timing_samples_text, verdict_sentence)
from launchlab.chapters.example_b_jobs import (BASELINE, CHAPTER, GRAPH_NODES, KERNELS, ROW, ROWS,
                                               STREAM_SUBMISSIONS, SUBMISSIONS, label)
from launchlab.chapters.example_b_jobs.page_answer import answer_values, cases

TIMING = {("warm_batch", "event_us"): "event interval per call, batch",
          ("warm_single", "complete_us"): "host completion, 1 call",
          ("warm_single", "enqueue_us"): "host enqueue, 1 call"}
FIGURE_METRICS = (("warm_batch", "event_us"), ("warm_single", "complete_us"))
STAGE_COLOURS = {"A": 0, "B": 3}   # indices into figures.COLOURS
# The article's figures as it reports them; its three ragged host medians are not tied to variants here.
ARTICLE_ROWS_B = (
    ("exact array checks", "272"),
    ("trace checks", "24"),
    ("timing samples", "588 (28 configurations × 21 rounds)"),
    ("early B starts in graph traces (two kernels; fused kernel)", "0 against 596, of 597 jobs"),
    ("host medians, ragged case", "three ragged host medians reported: 206.85, 212.52 and 205.79 µs"),
)


def timed(run, case: str | None = None, output: str = "timing") -> list:
    """The run's declared variants that enter `output` (on one case), in declared order."""
    return [v for v in CHAPTER.variants(CHAPTER.parameters_of(run.record))
            if output in v.enters and case in (None, v.id.case)]


def _timing(run, vid) -> dict:
    return run.summaries["timing"][str(vid)]


def comparison_order(key: str) -> tuple:
    """Ratio keys by case (in the run's order), then stream over graph per row, then each row over the baseline."""
    family, what, case = key.split(".")
    names = list(ROW)
    if family == "stream_over_graph":
        return case, 0, names.index(what), 0
    return case, 1, names.index(family.split("_over_")[0]), SUBMISSIONS.index(what)


def comparison_label(key: str) -> str:
    family, what, _ = key.split(".")
    if family == "stream_over_graph":
        return f"{ROW[what].label}: stream / graph"
    return f"{ROW[family.split('_over_')[0]].label} / {ROW[BASELINE].label.removesuffix(' kernel')}, {what}"


# --------------------------------------------------------------------------- tables
def timing_table(run):
    from launchlab.present import tables

    rows = []
    for variant in timed(run):
        m = _timing(run, variant.id)
        row = {"case": variant.id.case, "variant": label(variant.id)}
        row.update({f"{column} (µs)": m[measurement][metric] for (measurement, metric), column in TIMING.items()})
        rows.append(row)
    return tables.page_table(rows, index=["case", "variant"], rounds=run.record.protocol["rounds"],
                             caption="Warm timing of every variant (one synchronised call, and batches of calls "
                                     "between CUDA events).")


def ratio_table(run):
    """One row per comparison and case: the first variant's event interval per call over the second's."""
    from launchlab.present import tables

    ratios, verdicts, order = run.summaries["ratios"], run.summaries["verdicts"], cases(run)
    keys = sorted(ratios, key=lambda k: (order.index(k.split(".")[2]), *comparison_order(k)[1:]))
    rows = [{"case": key.split(".")[2], "comparison": comparison_label(key), "ratio": ratios[key],
             "verdict": VERDICT_WORDS[verdicts[key]]} for key in keys]
    return tables.page_table(rows, index=["case", "comparison"], units={"ratio": "×"}, formats={"verdict": "text"},
                             caption="Event interval per call, one variant over another within each round "
                                     "(>1: the second is faster; a tie where the 95 % interval includes 1).")


def layout_table(run):
    """What the device and the launch configuration give: jobs, workers, the shared reservation, occupancy."""
    from launchlab.present import tables

    layout = run.summaries["layout"]
    shared = layout["shared_memory"]
    rows = [("SMs", f"{layout['sm_count']}"),
            ("jobs per invocation (4 S + floor(S / 2) + 3)", f"{layout['jobs']}"),
            ("threads per job (one CTA)", "256"),
            ("queue workers (one per SM)", f"{layout['workers']}"),
            ("shared memory per SM (bytes)", f"{shared['shared_per_sm']:,}"),
            ("dynamic shared memory reserved per CTA, never touched (bytes)", f"{shared['dynamic_shared_bytes']:,}"),
            ("active CTAs per SM with the reservation (occupancy API, every kernel)",
             ", ".join(map(str, layout["active_ctas_per_sm"]))),
            ("active CTAs per SM without it", ", ".join(map(str, layout["active_without_reservation"])))]
    for case in cases(run):
        entry = run.summaries["work"][case]
        rows.append((f"stage-A iterations summed over the jobs, {case}", f"{entry['a_iterations']:,} "
                     f"({entry['heavy_jobs']} heavy jobs)"))
    return tables.page_table([{"quantity": q, "value": v} for q, v in rows], index="quantity",
                             formats={"value": "text"}, caption="The jobs and how they meet the SMs in this run.")


def graph_table(run):
    from launchlab.present import tables

    rows = []
    for row in ROWS:
        graphs = [g for name, g in run.summaries["graphs"].items() if name.startswith(f"{row.name}.")]
        rows.append({"schedule": row.label, "kernels launched": " → ".join(KERNELS[row.name]),
                     "host submissions per stream invocation": STREAM_SUBMISSIONS[row.name],
                     "kernel nodes": ", ".join(sorted({str(g["kernel"]) for g in graphs})),
                     "MEMSET nodes": ", ".join(sorted({str(g["memset"]) for g in graphs})),
                     "other nodes": ", ".join(sorted({str(g["other"]) for g in graphs})),
                     "expected (kernel, other)": f"{GRAPH_NODES[row.name][0]}, {GRAPH_NODES[row.name][1]}"})
    return tables.page_table(rows, index="schedule", formats={c: "text" for c in ("kernel nodes", "MEMSET nodes",
                                                                                   "other nodes")},
                             caption="Nodes of each captured graph, from CUDA's DOT, in every case.")


def _us(ns) -> float | None:
    return None if ns is None else ns / 1e3


def trace_table(run):
    from launchlab.present import tables

    rows = []
    for variant in timed(run, output="trace"):
        trace = run.summaries["traces"][str(variant.id)]
        rows.append({"case": variant.id.case, "variant": label(variant.id), "rules met": trace["passed"],
                     "early B starts": trace.get("early_b"), "span (µs)": _us(trace.get("span_ns")),
                     "median stage A (µs)": _us(trace.get("a_stage_ns", {}).get("median")),
                     "median stage B (µs)": _us(trace.get("b_stage_ns", {}).get("median")),
                     "SMs used": trace.get("sms_used"), "CTAs that ran jobs": trace.get("workers_used")})
    return tables.page_table(rows, index=["case", "variant"],
                             formats={c: "sig" for c in ("span (µs)", "median stage A (µs)", "median stage B (µs)")},
                             caption=f"One traced invocation of every variant (instrumented build) and the rules "
                                     f"of its schedule; {run.summaries['layout']['jobs']} jobs each.")


def comparison_table(run):
    summaries, headline = run.summaries, run.headline
    checks, jobs = summaries["checks"], headline["jobs"]
    early = "; ".join(f"{case}: {headline.get(f'early_b.separate_graph.{case}', '—')} against "
                      f"{headline.get(f'early_b.fused_graph.{case}', '—')}" for case in cases(run))
    medians = ", ".join(f"{label(v.id)} {_timing(run, v.id)['warm_single']['complete_us']['median']:.2f}"
                        for v in timed(run, "ragged")) if "ragged" in cases(run) else "no ragged case in this run"
    ours = (f"{checks['exact_outputs_passed']} passed of {checks['exact_outputs']} (bit for bit)",
            f"{checks['traces_passed']} of {checks['traces']} traces met every rule of their schedule",
            f"{timing_samples_text(run)}, each round also one single-call sample",
            f"{early}, of {jobs} jobs",
            f"host completion of one call (µs): {medians}")
    return article_table(run, [(q, a, o) for (q, a), o in zip(ARTICLE_ROWS_B, ours)])


# --------------------------------------------------------------------------- figures
def latency_figure(run):
    """One panel per case: event interval per call and host completion of one call, for every variant."""
    from launchlab.present import figures

    fig, axes = figures.figure(len(cases(run)), 1, height=2.7, layout="constrained")
    names = {f"{m}.{k}": TIMING[(m, k)] for m, k in FIGURE_METRICS}
    for ax, case in zip(axes[:, 0], cases(run)):
        groups = {label(v.id).replace(", ", "\n"): {f"{m}.{k}": _timing(run, v.id)[m][k] for m, k in FIGURE_METRICS}
                  for v in timed(run, case)}
        figures.quantile_dots(ax, groups, names, log=False, legend_where=None)
        ax.set_title(f"{case} case")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("µs per invocation")
    return figures.describe(figures.finish(fig), (
        f"Dot plots, one panel per case ({', '.join(cases(run))}): for every variant the event interval per call "
        "and the host completion of one call in µs from zero, medians with p10–p90 bars."))


def timeline_figure(run):
    """Every job's stage A and stage B as bars on the SM that ran them, one panel per variant that enters the
    timeline (the graph replays of one case)."""
    from launchlab.measure.variant import VariantId
    from launchlab.present import figures

    timelines = run.summaries["timelines"]
    drawn = [str(v.id) for v in CHAPTER.variants(CHAPTER.parameters_of(run.record)) if str(v.id) in timelines]
    fig, axes = figures.figure(len(drawn), 1, height=2.5, layout="constrained", sharex=True)
    for ax, name in zip(axes[:, 0], drawn):
        bars, vid = timelines[name], VariantId.parse(name)
        for stage, colour in STAGE_COLOURS.items():
            s = stage.lower()
            ax.hlines(bars[f"sm_{s}"], [t / 1e3 for t in bars[f"{s}_start_ns"]],
                      [t / 1e3 for t in bars[f"{s}_end_ns"]], colors=figures.COLOURS[colour], linewidth=1.4,
                      label=f"stage {stage}")
        early = run.summaries["traces"][name].get("early_b", "—")
        ax.set_title(f"{label(vid)}, {vid.case} case: early B starts {early}")
        ax.set_ylabel("SM (%smid)")
    axes[-1, 0].set_xlabel("time since the first stage A started (µs)")
    return figures.describe(figures.finish(fig), (
        f"Timelines of {len(drawn)} traced graph replays, one panel each: every job's stage A and stage B as a "
        "coloured bar on the row of the SM that ran it, against µs since the first stage A started; each panel's "
        "title counts the B stages that started early."))


# --------------------------------------------------------------------------- glued values
def _fmt(value: float) -> str:
    from launchlab.present.tables import fmt_sig

    return fmt_sig(value)


def page_values(run) -> dict:
    record, headline, summaries = run.record, run.headline, run.summaries
    protocol, layout, samples = record.protocol, summaries["layout"], summaries["samples"]
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(layout["sm_count"]),
              "rounds": str(protocol["rounds"]), "batch": str(protocol["batch"]), "warmups": str(protocol["warmups"]),
              "fixture_seed": str(CHAPTER.parameters_of(record).fixture_seed), "jobs": str(headline["jobs"]),
              "workers": str(layout["workers"]), "active_ctas_per_sm": str(headline["active_ctas_per_sm"]),
              "active_without_reservation": ", ".join(map(str, layout["active_without_reservation"])),
              "reserved_bytes": f"{layout['shared_memory']['dynamic_shared_bytes']:,}",
              "shared_per_sm": f"{layout['shared_memory']['shared_per_sm']:,}",
              "exact_checks": str(headline["exact_checks"]), "exact_outputs": str(summaries["checks"]["exact_outputs"]),
              "trace_checks": str(headline["trace_checks"]), "traces": str(summaries["checks"]["traces"]),
              "configurations": str(samples["configurations"]),
              "timing_samples": str(samples["configurations"] * samples["rounds"]),
              "sanitizer_sentence": sanitizer_sentence(run), "verdict_sentence": verdict_sentence(run, ROW, "cases")}
    for case in cases(run):
        values[f"{case}_a_iterations"] = f"{summaries['work'][case]['a_iterations']:,}"
        values[f"{case}_heavy_jobs"] = str(summaries["work"][case]["heavy_jobs"])
    for variant in timed(run):
        vid = variant.id
        key = f"{vid.case}_{vid.target}_{vid.submission}"
        values[f"{key}_event_us"] = _fmt(_timing(run, vid)["warm_batch"]["event_us"]["median"])
        values[f"{key}_complete_us"] = _fmt(_timing(run, vid)["warm_single"]["complete_us"]["median"])
        values[f"{key}_early_b"] = str(summaries["traces"].get(str(vid), {}).get("early_b", "not counted"))
    for key, ratio in summaries["ratios"].items():
        family, what, case = key.split(".")  # ragged_queue_stream_over_graph, ragged_queue_over_fused_graph
        name = f"{what}_{family}" if family == "stream_over_graph" else f"{family}_{what}"
        values[f"{case}_{name}"] = f"{ratio['median']:.2f}"

    values.update(answer_values(run))
    return values
