"""Chapter 4's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing             {VariantId: {measurement: {metric: quantiles}}} (stats.summarize)
  speedup_vs_graph3  {VariantId: paired ratio} the three-kernel graph's event interval over the
                     variant's, within each round (>1: the variant is faster), for every variant but
                     the baseline `tiled3.<case>.graph` itself
  speedup_vs_coop    {queue VariantId: paired ratio} the cooperative kernel's event interval over the
                     queue's with the same case, submission and blocks-per-SM setting (>1: the queue is faster)
  traces             {VariantId: its schedule's trace summary (TRACE_MODELS) + workers} of every traced variant
  graphs             {VariantId: node counts, edges, stream submissions} from each graph's DOT text
  graph_setup        capture costs of every graph (graphs/setup.json)

Headline keys, all `<quantity>.<VariantId>` (a sweep point's VariantId is `<design>_wps<k>.<case>.graph`):
  event_us.<v>                 median event interval per invocation in a warm batch (µs)
  speedup_vs_graph3.<v>        median of the three-kernel graph's time / v's time (>1: v is faster)
  speedup_vs_coop.<v>          (queue variants) median of the cooperative kernel's time / the queue's
  b_before_last_a.<v>          B tasks that started before the last A task ended, in v's trace
  model_b_before_last_a.<v>    the same count from the schedule model replaying v's trace
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from launchlab.chapters.megakernels import (CHAPTER, TRACE_MODELS, baseline, design_of, main_variants,
                                            sweep_variants)
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot, schedules
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl


def summarize(run_dir: Path, record) -> dict:
    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    timed = main_variants(CHAPTER.parse_parameters(record.parameters))
    timed += sweep_variants(CHAPTER.parse_parameters(record.parameters))
    return {"timing": stats.summarize(samples),
            "speedup_vs_graph3": {str(v): stats.paired_ratio(samples, baseline(v.case), v)
                                  for v in timed if v != baseline(v.case)},
            "speedup_vs_coop": {str(v): stats.paired_ratio(samples, _same_grid_coop(v), v)
                                for v in timed if design_of(v)[0].target == "queue" and _same_grid_coop(v) in timed},
            "traces": {path.name[:-len(".npz")]: trace_summary(path) for path in sorted((run_dir / "traces").glob("*.npz"))},
            "graphs": {path.name[:-len(".dot")]: graph_summary(path) for path in sorted((run_dir / "graphs").glob("*.dot"))},
            "graph_setup": json.loads((run_dir / "graphs/setup.json").read_text())}


def _same_grid_coop(queue: VariantId) -> VariantId:
    """The cooperative variant with the queue's case, submission and blocks-per-SM setting."""
    return VariantId(queue.target.replace("queue", "coop", 1), queue.case, queue.submission)


def trace_summary(path: Path) -> dict:
    """The schedule checks, overlap counts, waits and model replay of one saved trace."""
    with np.load(path) as arrays:
        trace = schedules.Trace.from_arrays(arrays)
        graph = schedules.TaskGraph.from_tile_row(arrays["tile_row"])
        workers = int(arrays["workers"])
    design, _ = design_of(path.name[:-len(".npz")])
    return {**TRACE_MODELS[design.schedule].summary(trace, graph, workers), "workers": workers}


def graph_summary(path: Path) -> dict:
    parsed = dot.parse_dot(path.read_text())
    design, _ = design_of(path.name[:-len(".dot")])
    return {"counts": dot.node_counts(parsed, design.kernels), "edges": len(parsed["edges"]),
            "stream_submissions": design.stream_submissions}


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{variant}"] = measurements["warm_batch"]["event_us"]["median"]
    for quantity in ("speedup_vs_graph3", "speedup_vs_coop"):
        for variant, ratio in summaries[quantity].items():
            figures[f"{quantity}.{variant}"] = ratio["median"]
    for variant, trace in summaries["traces"].items():
        if "b_before_last_a" in trace:  # absent when the trace lacks a task (it then fails its checks)
            figures[f"b_before_last_a.{variant}"] = trace["b_before_last_a"]
            figures[f"model_b_before_last_a.{variant}"] = trace["model"]["b_before_last_a"]
    return figures
