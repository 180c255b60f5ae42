"""Chapter 4's glued values and sentences: formatted numbers and verdicts for the prose, from the run's
summaries, record and saved traces."""
from __future__ import annotations

import math

import numpy as np

from launchlab.chapters.megakernels import DESIGN, baseline, design_of, label, schedules, sweep_variant
from launchlab.chapters.megakernels.page_figures import TARGET_SPEEDUP
from launchlab.chapters.megakernels.page_tables import (_us, cases, designs_of, main_variants_of, pays_rows,
                                                        swept_designs, sweep)
from launchlab.chapters.megakernels.trace_models import QUEUE_STYLE
from launchlab.measure.variant import VariantId


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


TIE = 0.02   # a speed-up within 2 % of 1 is a tie, whatever its interval


def stream_beats_graph_sentence(run) -> str:
    """Designs that ran faster launched from the stream than replayed as their own graph (the two speed-up
    intervals over the three-kernel graph disjoint), named as open questions; or that none did."""
    s, found = run.summaries, []
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            if vid.submission != "stream":
                continue
            graph = VariantId(vid.target, case, "graph")
            a, b = s["speedup_vs_graph3"].get(str(vid)), s["speedup_vs_graph3"].get(str(graph))
            if a and b and a["ci_low"] > b["ci_high"]:
                found.append(f"{DESIGN[vid.target].label} on the {case} case "
                             f"({s['timing'][str(vid)]['warm_batch']['event_us']['median']:.2f} µs from the stream, "
                             f"{s['timing'][str(graph)]['warm_batch']['event_us']['median']:.2f} µs as a graph)")
    if not found:
        return "No design ran faster from the stream than replayed as its own graph."
    return ("Launched from the stream, " + "; ".join(found) + f" {'was' if len(found) == 1 else 'were'} faster than "
            "replayed as a graph. This run does not explain it: a graph replay and stream launches of the same "
            "kernels differ in how the driver submits them, and per-block start times of both submissions (a trace "
            "of each, or an Nsight Systems timeline) would show where the graph's extra time goes. It is left open.")


def _ratio_words(ratio: dict) -> str:
    return f"{ratio['median']:.2f}× [{ratio['ci_low']:.2f}–{ratio['ci_high']:.2f}]"


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
    # A speed-up whose interval lies above 1 but whose median is within TIE of it is a tie in practice: counted
    # apart, never as a win.
    ties = [r for r in rows if r not in slower and abs(ratios[str(r["variant"])]["median"] - 1.0) < TIE]
    faster = [r for r in faster if r not in ties]
    words = [f"On the {case} case with {state}, "]
    if faster:
        ranked = sorted(faster, key=lambda r: -ratios[str(r["variant"])]["median"])
        words.append(f"{len(faster)} of {len(rows)} variants beat the three kernels replayed as a graph by "
                     f"{TIE * 100:.0f} % or more: "
                     + "; ".join(f"{label(r['variant'])} {_ratio_words(ratios[str(r['variant'])])}" for r in ranked)
                     + ". ")
    else:
        words.append(f"none of the {len(rows)} variants beats the three kernels replayed as a graph by "
                     f"{TIE * 100:.0f} % or more. ")
    if ties:
        words.append(f"{len(ties)} {'is' if len(ties) == 1 else 'are'} within {TIE * 100:.0f} % of it, a tie: "
                     + "; ".join(f"{label(r['variant'])} {_ratio_words(ratios[str(r['variant'])])}" for r in ties)
                     + ". ")
    if slower:
        words.append(f"{len(slower)} {'is' if len(slower) == 1 else 'are'} slower than it (interval below 1). ")
    unresolved = len(rows) - len(faster) - len(ties) - len(slower)
    if unresolved:
        words.append(f"{unresolved} cannot be told apart from it (interval across 1). ")
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
    for end, workers_per_sm in (("min", points[0]), ("max", points[-1])):
        values[f"sweep_{end}_per_sm"] = str(workers_per_sm)
        values[f"sweep_{end}_blocks"] = f"{workers_per_sm} block{'s' if workers_per_sm != 1 else ''}"
        for case in cases(run):
            for design in swept_designs():
                key = _key(sweep_variant(design.name, case, workers_per_sm))
                for name in ("bla", "model_bla", "event", "speedup", "wait_b_total", "workers", "span"):
                    values[f"{name}_{design.name}_{end}_{case}"] = per_variant[f"{name}_{key}"]
            key = _key(sweep_variant("queue", case, workers_per_sm))
            values[f"queue_vs_coop_{end}_{case}"] = per_variant[f"queue_vs_coop_{key}"]
            values[f"queue_vs_coop_verdict_{end}_{case}"] = per_variant[f"queue_vs_coop_verdict_{key}"]
        trace = run.summaries["traces"][str(sweep_variant("queue", cases(run)[0], workers_per_sm))]
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
    values["best_one_launch_sentence"] = best_one_launch_sentence(run)
    values["stream_beats_graph"] = stream_beats_graph_sentence(run)
    tools = run.summaries.get("sanitizer", {})
    values["sanitizer_verdict"] = ("no compute-sanitizer tool ran in this run" if not tools else
                                   "; ".join(f"{tool}: {'clean' if r['clean'] else 'NOT clean'}" for tool, r in tools.items()))
    design_traces = {k: t for k, t in s["traces"].items() if design_of(k)[0].group}
    values["design_traces_passed"] = str(sum(t["passed"] for t in design_traces.values()))
    values["design_traces_total"] = str(len(design_traces))
    values["designs_run"] = ", ".join(f"`{d.name}`" for d in designs_of(run) if d.group) or "none"
    return values


def best_one_launch_sentence(run) -> str:
    """The fastest one-launch design of the balanced and the ragged case by name, with its graph speed-up, and
    whether it is a tiled persistent kernel (the run's own finding, whichever design it is)."""
    from launchlab.chapters.megakernels.findings import TILED_PERSISTENT

    s = run.summaries
    shown = [case for case in ("balanced", "ragged") if case in s.get("best_one_launch", {})]
    if not shown:
        return "This run timed no one-launch design on the balanced or the ragged case."
    best = {case: s["best_one_launch"][case] for case in shown}
    design = {case: design_of(best[case]["variant"])[0] for case in shown}
    parts = [f"on the {case} case the {design[case].label}, at {_ratio_words(best[case])}"
             + (" the speed of the three kernels replayed as a graph" if k == 0 else "") for k, case in enumerate(shown)]
    tiled = [case for case in shown if design[case].name in TILED_PERSISTENT]
    verdict = ("Neither is a tiled persistent kernel." if not tiled and len(shown) > 1 else
               "It is not a tiled persistent kernel." if not tiled else
               f"On the {' and '.join(tiled)} case{'s' if len(tiled) > 1 else ''} it is a tiled persistent kernel.")
    return (f"The fastest one-launch design, replayed as a graph, was {'; '.join(parts)} (median [95 % interval]). "
            f"{verdict}")


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
    values["target_sentence"] = target_sentence({case: values[f"target_{case}"] for case in cases(run)})
    return values


def target_sentence(verdicts: dict) -> str:
    """'The target of 1.5× is met on the balanced case and missed on the ragged one.', from each case's verdict."""
    met = [case for case, verdict in verdicts.items() if verdict == "met"]
    missed = [case for case, verdict in verdicts.items() if verdict != "met"]
    target = f"The one-launch target of {TARGET_SPEEDUP:g}× (the whole 95 % interval at or above it)"
    if not missed:
        return f"{target} is met on every case."
    if not met:
        return f"{target} is missed on every case."
    return f"{target} is met on the {' and '.join(met)} case and missed on the {' and '.join(missed)} one."


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
