"""Chapter 4's glued values and sentences: formatted numbers and verdicts for the prose, from the run's
summaries, record and saved traces."""
from __future__ import annotations

import math

import numpy as np

from launchlab.chapters.megakernels import (DESIGN, baseline, design_of, label, schedules, stream_submissions,
                                            sweep_variant)
from launchlab.chapters.megakernels.page_tables import (_us, cases, designs_of, main_variants_of, pays_rows, sweep_rows,
                                                        swept_designs, sweep)
from launchlab.chapters.megakernels.trace_models import QUEUE_STYLE
from launchlab.measure.variant import VariantId
from launchlab.present.replicas import joined


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


NAMES = {"fused_row": "fused row kernel", "varlen": "varlen pieces kernel", "coop": "cooperative kernel",
         "queue": "task queue", "depend": "dependency-driven kernel", "flow": "flow kernel with B in C",
         "flow_last": "flow kernel with B on the last A's worker", "cluster": "cluster per row"}


def name(design: str) -> str:
    """A design as a sentence names it ('the cooperative kernel'), where its table label is terser."""
    return NAMES.get(design, DESIGN[design].label)


def pays_sentence(s: dict, shown, designs=None) -> str:
    """The chapter's answer in two sentences, from the summaries `s` of the cases `shown`: the fastest one-launch
    design of each case against the three kernels replayed as a graph, then which persistent kernels (replayed as
    graphs; default: every persistent design) lost to that graph and which beat it, by the page's one rule
    (`standing`)."""
    best = {case: s["best_one_launch"][case] for case in shown if case in s.get("best_one_launch", {})}
    which = {case: VariantId.parse(b["variant"]).target for case, b in best.items()}
    persistent = any(DESIGN[target].persistent for target in which.values())
    first = ""
    if best:
        first = (f"The fastest one-launch design{'s' if len(best) > 1 else ''}"
                 + ("" if persistent else ", not a persistent kernel,")
                 + f" {'run' if len(best) > 1 else 'runs'} "
                 + joined([f"{ratio_words(b)} as fast as the three kernels replayed as a graph on the {case} case "
                           f"(the {name(which[case])})" if k == 0 else
                           f"{ratio_words(b)} on the {case} case (the {name(which[case])})"
                           for k, (case, b) in enumerate(best.items())]) + ".")
    groups: dict = {}
    for design in DESIGN.values() if designs is None else designs:
        if not design.persistent or design.chain:
            continue
        found = {case: s["speedup_vs_graph3"].get(str(VariantId(design.name, case, "graph"))) for case in shown}
        if not all(found.values()):
            continue
        kinds = {standing(r) for r in found.values()}
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        groups.setdefault(kind, []).append((design, found))
    where = "on both cases" if len(shown) == 2 else "on every case"
    verbs = {"slower": ("lose to", "loses to"), "faster": ("beat", "beats"), "tie": ("tie with", "ties with"),
             "unresolved": ("cannot be told apart from", "cannot be told apart from")}
    parts = []
    for kind in ("slower", "faster", "tie", "unresolved"):
        if kind in groups:
            named = [f"the {name(d.name)} ({_medians(found)})" for d, found in groups[kind]]
            parts.append(f"{joined(named)} {verbs[kind][len(named) == 1]} it {where}")
    for design, found in groups.get("mixed", []):
        parts.append(f"the {name(design.name)} " + " and ".join(
            f"{verbs[standing(r)][1]} it on the {case} case ({r['median']:.2f}×)" for case, r in found.items()))
    second = ("Of the persistent kernels, replayed as graphs, " + "; ".join(parts).replace(" it ", " that graph ", 1)
              + "." if parts else "")
    return f"{first} {second}".strip()


def _medians(found: dict) -> str:
    """'0.82× balanced, 0.81× ragged'"""
    return ", ".join(f"{r['median']:.2f}× {case}" for case, r in found.items())


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
        higher = [f"the {name(vid.target)} on the {vid.case} case"
                  for case in cases(run) for vid in main_variants_of(case, designs_of(run))
                  if vid.submission == "stream" and str(vid) in s["speedup_vs_graph3"]
                  and str(VariantId(vid.target, case, "graph")) in s["speedup_vs_graph3"]
                  and s["speedup_vs_graph3"][str(vid)]["median"] > s["speedup_vs_graph3"][str(VariantId(vid.target, case, "graph"))]["median"]]
        if not higher:
            return "No design ran faster from the stream than replayed as its own graph."
        return ("No design ran measurably faster from the stream than replayed as its own graph: where the stream's "
                f"median speed-up is the larger ({joined(higher)}), the two intervals overlap.")
    return ("Launched from the stream, " + "; ".join(found) + f" {'was' if len(found) == 1 else 'were'} faster than "
            "replayed as a graph. This run does not explain it: a graph replay and stream launches of the same "
            "kernels differ in how the driver submits them, and per-block start times of both submissions (a trace "
            "of each, or an Nsight Systems timeline) would show where the graph's extra time goes. It is left open.")


def ratio_words(ratio: dict, threshold: float = 1.0) -> str:
    """'1.13× [1.11–1.13]': median and 95 % interval with two decimals, or more where two would hide what the
    interval says (`tables.ci_places`, against `threshold`: 1.0976 is not 1.10 against a target of 1.10)."""
    from launchlab.present import tables

    places = tables.ci_places(ratio, threshold)
    median, _, band = tables.median_with_band(ratio, tables.CI, digits=places).partition(" ")
    return f"{median}× {band}"


def standing(ratio: dict) -> str:
    """'faster', 'slower', 'tie' or 'unresolved' against the three-kernel graph, by one rule everywhere on the
    page: a median within TIE of 1 is a tie whatever its interval; otherwise the interval decides."""
    if abs(ratio["median"] - 1.0) < TIE:
        return "tie"
    if ratio["ci_low"] > 1:
        return "faster"
    if ratio["ci_high"] < 1:
        return "slower"
    return "unresolved"


def pays_findings(run, case: str, cold: bool = False) -> str:
    """One case's variants against the three-kernel graph, counted by the page's rule (`standing`), and the
    fastest of them; every variant's figure is in Figure 18 and the data page's table, not in this sentence."""
    s, suffix = run.summaries, "_cold" if cold else ""
    ratios = s[f"speedup_vs_graph3{suffix}"]
    rows = [r for r in pays_rows(run) if r["case"] == case and (not cold or r["variant"].submission == "graph")]
    found = [ratios[str(r["variant"])] for r in rows if str(r["variant"]) in ratios]
    count = {kind: sum(standing(r) == kind for r in found) for kind in ("faster", "tie", "slower", "unresolved")}
    words = {"faster": "beat the three-kernel graph by 2 % or more", "tie": "tie with it", "slower": "are slower",
             "unresolved": "cannot be told apart from it"}
    counted = [f"{count[kind]} {words[kind] if count[kind] != 1 else _one(words[kind])}" for kind in count if count[kind]]
    fastest = max(found, key=lambda r: r["median"])
    vid = next(r["variant"] for r in rows if ratios.get(str(r["variant"])) is fastest)
    how = "replayed as a graph" if vid.submission == "graph" else "launched from the stream"
    state = "cold L2, replayed as graphs" if cold else "warm L2"
    return (f"{case.capitalize()} case, {state}: of {len(found)} variants, {joined(counted)}; the fastest is the "
            f"{name(vid.target)} {how}, {ratio_words(fastest)}.")


def _one(words: str) -> str:
    return {"beat the three-kernel graph by 2 % or more": "beats the three-kernel graph by 2 % or more", "tie with it": "ties with it", "are slower": "is slower"}.get(
        words, words)


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
    """The added designs' glued values: PDL saving per boundary, findings per case (warm and cold), sanitizer
    verdicts and trace counts."""
    s, values = run.summaries, {}
    for case in cases(run):
        for suffix in ("", "_cold"):
            saving = s.get(f"pdl_saving_us_per_boundary{suffix}", {}).get(case)
            values[f"pdl_saving{suffix}_{case}"] = ("not measured (pdl3 not in this run's designs)" if saving is None
                                                    else f"{saving['median']:.2f} µs [{saving['ci_low']:.2f}–"
                                                         f"{saving['ci_high']:.2f}]")
            values[f"findings{suffix}_{case}"] = pays_findings(run, case, cold=bool(suffix))
    values["stream_beats_graph"] = stream_beats_graph_sentence(run)
    tools = run.summaries.get("sanitizer", {})
    clean = [tool for tool, r in tools.items() if r["clean"]]
    dirty = [tool for tool, r in tools.items() if not r["clean"]]
    values["sanitizer_verdict"] = (
        "no compute-sanitizer tool ran in this run" if not tools else
        "; ".join(part for part in (f"{joined(clean)} found no errors" if clean else "",
                                    f"{joined(dirty)} reported errors" if dirty else "") if part))
    design_traces = {k: t for k, t in s["traces"].items() if design_of(k)[0].group}
    values["design_traces_passed"] = str(sum(t["passed"] for t in design_traces.values()))
    values["design_traces_total"] = str(len(design_traces))
    return values


def target_values(run) -> dict:
    """The one-launch targets declared per case (findings.SPEEDUP_TARGETS) against each case's best one-launch
    design, in one sentence; and the ragged case's geometry that explains the fused row kernel's result there."""
    from launchlab.model import workloads

    s, values = run.summaries, {}
    for case in cases(run):
        lengths = np.asarray(workloads.tiled_row_lengths(case))
        values[f"rows_{case}"] = f"{lengths.size:,}"
        values[f"longest_row_{case}"] = f"{int(lengths.max()):,}"
        values[f"long_rows_{case}"] = str(int((lengths == lengths.max()).sum()))
        values[f"shortest_row_{case}"] = f"{int(lengths.min()):,}"
        values[f"long_row_share_{case}"] = f"{100 * lengths[lengths == lengths.max()].sum() / lengths.sum():.0f} %"
    values["target_sentence"] = target_sentence(s.get("targets", {}))
    return values


def target_sentence(targets: dict) -> str:
    """Each case's declared one-launch target against its best one-launch design: 'The one-launch target each case
    declared ... is met on every case: ≥ 2.5× on the balanced case (3.04× [2.98–3.07]), ...'."""
    from launchlab.model.workloads import TILED_CASES

    mine = {name.split(".", 1)[1]: target for name, target in targets.items() if name.startswith("best_one_launch.")}
    mine = dict(sorted(mine.items(), key=lambda item: TILED_CASES.index(item[0]) if item[0] in TILED_CASES else 99))
    if not mine:
        return ""
    words = [f"≥ {t['target']:g}× on the {case} case ({t['value']:.2f}×, low end {t['ci_low']:.2f})" for case, t in mine.items()]
    missed = [case for case, t in mine.items() if not t["met"]]
    verdict = ("met on every case" if not missed else "missed on every case" if len(missed) == len(mine) else
               f"met except on the {joined(missed)} case")
    return (f"The best one-launch design's target, declared per case before the run (the whole 95 % interval at or "
            f"above it), is {verdict}: {joined(words)}.")


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


def paid_values(run) -> dict:
    """Values of the answer and of 'When a design paid': every main graph variant's speed-up with its interval,
    the cluster design against the fused row kernel, the sweep's verdict for the persistent kernels, the logical
    bytes per design kind, the trace and validation counts in words."""
    s, values, shown = run.summaries, {}, cases(run)
    for name, ratio in s["speedup_vs_graph3"].items():
        values[f"ratio_{_key(name)}"] = ratio_words(ratio)
    for case in shown:
        cluster = s["speedup_vs_graph3"].get(str(VariantId("cluster", case, "graph")))
        fused = s["speedup_vs_graph3"].get(str(VariantId("fused_row", case, "graph")))
        if cluster and fused:  # two intervals over the same baseline: overlapping ones tell no winner
            values[f"cluster_vs_fused_{case}"] = ("as fast as" if cluster["ci_low"] <= fused["ci_high"]
                                                  and fused["ci_low"] <= cluster["ci_high"] else
                                                  "faster than" if cluster["median"] > fused["median"] else "slower than")
        values[f"cluster_launches_{case}"] = str(stream_submissions(DESIGN["cluster"], case))
    idle = [gaps["sm"]["median"] for gaps in s.get("handoff", {}).values()]
    if idle:
        values["sm_idle_words"] = ("zero for every one of them" if max(idle) == 0 else
                                   f"at most {_us(max(idle))} µs for every one of them")
    points = sweep_rows(run)
    slower = [r for r in points if standing(r["speedup_vs_graph3"]) == "slower"]
    values["sweep_persistent_words"] = ("at every worker count of the sweep" if len(slower) == len(points) else
                                        f"at {len(slower)} of the sweep's {len(points)} points")
    first = shown[0]
    for name, design in (("task", "tiled3"), ("b_in_c", "tiled2"), ("on_chip", "depend"), ("once", "fused_row")):
        values[f"mb_{name}"] = f"{sum(DESIGN[design].bytes(first)) / 1e6:.2f}"
    values["traffic_case"] = first
    groups = {"main": 0, "sweep": 0, "added": 0}
    for key in s["traces"]:
        design, swept = design_of(key)
        groups["sweep" if swept is not None else "added" if design.group else "main"] += 1
    passed, total = sum(t["passed"] for t in s["traces"].values()), len(s["traces"])
    verdict = f"All {total}" if passed == total else f"{passed} of {total}"
    values["traces_sentence"] = (
        f"{verdict} traced invocations passed their schedule's checks: {groups['main']} of the three kernels, the "
        f"cooperative kernel and the queue, {groups['sweep']} of the worker sweep and {groups['added']} of the designs "
        "added after them (the data page's count)")
    checks = run.json("validation.json")
    traced = [c for c in checks if c["phase"] == "trace"]
    values["trace_checks"] = str(len(traced))
    values["trace_word_checks"] = str(sum("error words" in c.get("what", "") for c in traced))
    values["traces_total"] = str(total)
    ok = sum(bool(c["passed"]) for c in checks)
    values["validation_sentence"] = (
        (f"All {len(checks)} validation checks passed" if ok == len(checks) else
         f"{len(checks) - ok} of {len(checks)} validation checks FAILED")
        + ": every variant's outputs against the float64 oracle before and after timing, the traced builds' outputs, "
        "every trace against its schedule's rules and error words, and the PDL graphs' programmatic edges")
    return values
