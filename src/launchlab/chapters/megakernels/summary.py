"""Chapter 4's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing             {VariantId: {measurement: {metric: quantiles}}} (stats.summarize; measurements
                     warm_single and warm_batch for every variant, cold for every design's graph)
  speedup_vs_graph3  {VariantId: paired ratio} the three-kernel graph's event interval over the
                     variant's, within each round (>1: the variant is faster), for every variant but
                     the baseline `tiled3.<case>.graph` itself
  speedup_vs_graph3_cold  the same over the cold measurement (each variant's median of its cold
                     repeats in a round), for every design's graph
  pdl_saving_us_per_boundary(_cold)  {case: paired difference} (control graph `pdl3_off.<case>.graph`
                     - PDL graph `pdl3.<case>.graph`) / 2 boundaries, µs, within each round, whatever its sign
  best_one_launch(_cold)  {case: {"variant", paired ratio}} the one-launch design whose graph has the
                     largest median speed-up over the three-kernel graph (coop, queue with its memset,
                     depend, cluster where the case needs one launch, fused_row)
  graph_edges        {VariantId: {"default": n, "programmatic": n} or None} read back from the driver
  sanitizer          {tool: result} (gpu/sanitizer.read_results) of compute-sanitizer over every kernel
  speedup_vs_coop    {queue VariantId: paired ratio} the cooperative kernel's event interval over the
                     queue's with the same case, submission and blocks-per-SM setting (>1: the queue is faster)
  traces             {VariantId: its schedule's trace summary (TRACE_MODELS) + workers} of every traced variant
  graphs             {VariantId: node counts, edges, stream submissions} from each graph's DOT text
  graph_setup        capture costs of every graph (graphs/setup.json)

Headline keys, `<quantity>.<VariantId>` (a worker-sweep point's VariantId is `<design>_wps<k>.<case>.graph`; its
trace counts are published as `b_before_last_a.<design>_graph.<case>.wps<k>`):
  event_us.<v>                 median event interval per invocation in a warm batch (µs)
  speedup_vs_graph3.<v>        median of the three-kernel graph's time / v's time (>1: v is faster)
  speedup_vs_coop.<v>          (queue variants) median of the cooperative kernel's time / the queue's
  event_us.<v>.cold            median event interval of one invocation after an L2 flush (µs; graphs)
  speedup_vs_graph3.<v>.cold   the same ratio as above over the cold measurement
  pdl_saving_us_per_boundary.<case>[.cold]  median (control graph - PDL graph) / 2 (µs per boundary)
  speedup_vs_graph3.best_one_launch.<case>[.cold]  the largest one-launch design's graph speed-up
  speedup_vs_graph3.fused_row.<case>[.cold]  the fused row kernel's graph speed-up (= ...fused_row.<case>.graph)
  b_before_last_a.<v>          B tasks that started before the last A task ended, in v's trace
                               (sweep points: b_before_last_a.<design>_graph.<case>.wps<k>, k blocks per SM)
  model_b_before_last_a.<v>    the same count from the schedule model replaying v's trace (same key forms)
  speedup_vs_graph3.best_tiled_persistent.<case>[.cold]  the best persistent A/B/C design's graph speed-up
  handoff_us.<design>.<case>   median SM-idle µs per task in the design's main graph trace (persistent designs)
  handoff_p90_us.<design>.<case>, worker_gap_us.<design>.<case>, model_handoff_us.<design>.<case>  its p90, the
                               median per-worker gap, the schedule model's median SM-idle
  trace_cost_us.<design>.<case>  median traced minus untraced graph replay (µs)
  speedup_vs_graph_pdl.<contender>.<case>.k<k>[.cold]  the 3k-kernel PDL graph's time / the contender's
  speedup_vs_chain_fused.<contender>.<case>.k<k>[.cold]  the chained fused row kernel's time / the contender's
  megakernel_pays_at_k.<case>[.cold]  the smallest k where the whole-chain megakernel beats both (0: none)

The chain's variants have no three-kernel-graph ratio (another workload); findings.py computes the rest.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from launchlab.chapters.megakernels import (CHAPTER, PDL_BOUNDARIES, baseline, design_of, findings, is_one_launch,
                                            pdl_pair, schedules, stream_submissions)
from launchlab.chapters.megakernels.trace_models import TRACE_MODELS, trace_context
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl


def summarize(run_dir: Path, record) -> dict:
    from launchlab.gpu import sanitizer  # its reader is NumPy-free

    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    measured = measured_variants(record)
    chained = [v.id for v in measured if v.row.chain]
    timed = [v.id for v in measured if not v.row.chain]
    cold = [v.id for v in measured if "cold" in v.l2_states and v.id != baseline(v.id.case) and not v.row.chain]
    summaries = {"timing": stats.summarize(samples),
                 "speedup_vs_graph3": {str(v): stats.paired_ratio(samples, baseline(v.case), v)
                                       for v in timed if v != baseline(v.case)},
                 "speedup_vs_graph3_cold": {str(v): stats.paired_ratio(samples, baseline(v.case), v, "cold")
                                            for v in cold},
                 "speedup_vs_coop": {str(v): stats.paired_ratio(samples, _same_grid_coop(v), v)
                                     for v in timed if design_of(v)[0].name == "queue" and _same_grid_coop(v) in timed},
                 "traces": {path.name[:-len(".npz")]: trace_summary(path)
                            for path in sorted((run_dir / "traces").glob("*.npz"))},
                 "graphs": {path.name[:-len(".dot")]: graph_summary(path)
                            for path in sorted((run_dir / "graphs").glob("*.dot"))},
                 "graph_edges": {path.name[:-len(".edges.json")]: json.loads(path.read_text()).get("edge_types")
                                 for path in sorted((run_dir / "graphs").glob("*.edges.json"))},
                 "graph_setup": json.loads((run_dir / "graphs/setup.json").read_text()),
                 "sanitizer": sanitizer.read_results(run_dir)}
    cases = list(dict.fromkeys(v.case for v in timed))
    persistent = {v.row.name for v in measured if v.row.persistent and not v.row.chain}
    summaries["handoff"] = findings.handoffs(summaries["traces"], persistent)
    summaries["trace_cost"] = findings.trace_cost(run_dir)
    for suffix, measurement in (("", "warm_batch"), ("_cold", "cold")):
        ratios = summaries[f"speedup_vs_graph3{suffix}"]
        pdl_cases = [case for case in cases if all(v in timed for v in pdl_pair(case))]
        if pdl_cases:
            summaries[f"pdl_saving_us_per_boundary{suffix}"] = {
                case: stats.paired_difference(samples, *pdl_pair(case), measurement, divisor=PDL_BOUNDARIES)
                for case in pdl_cases}
        summaries[f"best_one_launch{suffix}"] = {case: best for case in cases
                                                 if (best := best_one_launch(ratios, measured, case)) is not None}
        summaries[f"best_tiled_persistent{suffix}"] = findings.best_of(ratios, timed)
        if chained:
            summaries[f"chain{suffix}"] = findings.chain_ratios(samples, chained, measurement)
            summaries[f"megakernel_pays_at_k{suffix}"] = findings.pays_at(summaries[f"chain{suffix}"])
    summaries["targets"] = findings.targets(summaries)
    return summaries


def measured_variants(record) -> list:
    """The run's declared variants, less those it skipped (with their reasons, in run.json)."""
    skipped = record.details.get("skipped_variants", {})
    return [v for v in CHAPTER.variants(CHAPTER.parameters_of(record)) if str(v.id) not in skipped]


def best_one_launch(ratios: dict, measured, case: str) -> dict | None:
    """The one-launch design whose graph beats the three-kernel graph by the largest median ratio (None where no
    one-launch design ran on the case)."""
    candidates = [v.id for v in measured if v.id.case == case and v.id.submission == "graph" and "table" in v.enters
                  and is_one_launch(v.row, case)]
    if not candidates:
        return None
    best = max(candidates, key=lambda v: ratios[str(v)]["median"])
    return {"variant": str(best), **ratios[str(best)]}


def _same_grid_coop(queue: VariantId) -> VariantId:
    """The cooperative variant with the queue's case, submission and blocks-per-SM setting."""
    return VariantId(queue.target.replace("queue", "coop", 1), queue.case, queue.submission)


def trace_summary(path: Path) -> dict:
    """The schedule checks, overlap counts, waits and model replay of one saved trace."""
    with np.load(path) as arrays:
        trace = schedules.Trace.from_arrays(arrays)
        graph = schedules.TaskGraph.from_tile_row(arrays["tile_row"])
        workers = int(arrays["workers"])
        context = trace_context(arrays)
    design, _ = design_of(path.name[:-len(".npz")])
    return {**TRACE_MODELS[design.schedule].summary(trace, graph, workers, context), "workers": workers}


def graph_summary(path: Path) -> dict:
    parsed = dot.parse_dot(path.read_text())
    vid = VariantId.parse(path.name[:-len(".dot")])
    design, _ = design_of(vid)
    return {"counts": dot.node_counts(parsed, design.kernels), "edges": len(parsed["edges"]),
            "stream_submissions": stream_submissions(design, vid.case)}


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{variant}"] = measurements["warm_batch"]["event_us"]["median"]
        if "cold" in measurements:
            figures[f"event_us.{variant}.cold"] = measurements["cold"]["event_us"]["median"]
    for quantity in ("speedup_vs_graph3", "speedup_vs_coop"):
        for variant, ratio in summaries[quantity].items():
            figures[f"{quantity}.{variant}"] = ratio["median"]
    for variant, ratio in summaries["speedup_vs_graph3_cold"].items():
        figures[f"speedup_vs_graph3.{variant}.cold"] = ratio["median"]
    for suffix, dot_suffix in (("", ""), ("_cold", ".cold")):
        for case, saving in summaries.get(f"pdl_saving_us_per_boundary{suffix}", {}).items():
            figures[f"pdl_saving_us_per_boundary.{case}{dot_suffix}"] = saving["median"]
        for case, best in summaries[f"best_one_launch{suffix}"].items():
            figures[f"speedup_vs_graph3.best_one_launch.{case}{dot_suffix}"] = best["median"]
        for case, best in summaries.get(f"best_tiled_persistent{suffix}", {}).items():
            figures[f"speedup_vs_graph3.best_tiled_persistent.{case}{dot_suffix}"] = best["median"]
        for case, by_k in summaries.get(f"chain{suffix}", {}).items():
            for k, contenders in by_k.items():
                for name, ratios in contenders.items():
                    for key, quantity in (("vs_pdl", "speedup_vs_graph_pdl"), ("vs_fused", "speedup_vs_chain_fused")):
                        if key in ratios:
                            figures[f"{quantity}.{name}.{case}.{k}{dot_suffix}"] = ratios[key]["median"]
        for case, k in summaries.get(f"megakernel_pays_at_k{suffix}", {}).items():
            figures[f"megakernel_pays_at_k.{case}{dot_suffix}"] = k
        ratios = summaries[f"speedup_vs_graph3{suffix}"]
        for variant, ratio in ratios.items():
            vid = VariantId.parse(variant)
            if vid.target == "fused_row" and vid.submission == "graph":
                figures[f"speedup_vs_graph3.fused_row.{vid.case}{dot_suffix}"] = ratio["median"]
    for variant, gaps in summaries.get("handoff", {}).items():
        design, case, _ = variant.split(".")
        figures[f"handoff_us.{design}.{case}"] = gaps["sm"]["median"] / 1e3
        figures[f"handoff_p90_us.{design}.{case}"] = gaps["sm"]["p90"] / 1e3
        figures[f"worker_gap_us.{design}.{case}"] = gaps["worker"]["median"] / 1e3
        if gaps["model_sm"]:
            figures[f"model_handoff_us.{design}.{case}"] = gaps["model_sm"]["median"] / 1e3
    for variant, cost in summaries.get("trace_cost", {}).items():
        design, case, _ = variant.split(".")
        figures[f"trace_cost_us.{design}.{case}"] = cost["cost_us"]
    for variant, trace in summaries["traces"].items():
        if "b_before_last_a" in trace:  # absent when the trace lacks a task (it then fails its checks)
            key = overlap_key(variant)
            figures[f"b_before_last_a.{key}"] = trace["b_before_last_a"]
            if "b_before_last_a" in trace["model"]:  # the queue-style models count it; the design models do not
                figures[f"model_b_before_last_a.{key}"] = trace["model"]["b_before_last_a"]
    return figures


def overlap_key(variant: str) -> str:
    """A trace's key in the headline: its VariantId, or for a worker-sweep point `<design>_graph.<case>.wps<k>`
    (the sweep's published form: design and submission, case, blocks per SM)."""
    design, per_sm = design_of(variant)
    if per_sm is None:
        return variant
    return f"{design.name}_{VariantId.parse(variant).submission}.{VariantId.parse(variant).case}.wps{per_sm}"
