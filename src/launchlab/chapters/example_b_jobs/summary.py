"""Example B's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing      {VariantId: {measurement: {metric: quantiles}}} (stats.summarize)
  ratios      paired within each round, event interval per invocation in warm batches:
              stream_over_graph.<schedule>.<case> (>1: the graph replay is faster) and
              <schedule>_over_fused.<submission>.<case> for separate and queue (>1: the fused kernel is faster)
  graphs      {graph VariantId: {"kernel", "other", "memset"}} from graphs/<VariantId>.dot
  traces      {VariantId: model.jobs.check_trace of traces/<VariantId>.npz, with stage durations}
  layout      jobs, SMs, queue workers, the shared-memory reservation and occupancy (from run.json details)
  work        {case: stage-A iterations summed over the jobs, and heavy jobs}
  checks      output checks, trace checks and every check by phase, from validation.json
  sanitizer   {tool: outcome} from sanitizer/*.json (gpu/sanitizer.read_results)

Headline keys:
  event_us.<schedule>_<submission>.<case>  median event interval per invocation in a warm batch (µs), e.g.
                                           event_us.queue_graph.ragged
  early_b.<schedule>_<submission>.<case>   jobs whose stage B started before some other job's stage A ended,
                                           in the variant's trace
  jobs                                     jobs per invocation (4 S + floor(S / 2) + 3 at the run's SM count S)
  active_ctas_per_sm                       CTAs one SM holds at once with the reservation (occupancy API)
  exact_checks                             exact output comparisons with the oracle that passed
  trace_checks                             traces that met every rule of their schedule
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from launchlab.chapters.example_b_jobs import (CHAPTER, KERNELS, SCHEDULES, SUBMISSIONS, historical_name,
                                               parse_cases, variant)
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.chapters.example_b_jobs import model
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import checks_by_phase, read_jsonl


def summarize(run_dir: Path, record) -> dict:
    from launchlab.gpu.sanitizer import read_results

    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    cases = parse_cases(CHAPTER.parse_parameters(record.parameters).cases)
    jobs = int(record.details["jobs"])
    return {"timing": stats.summarize(samples),
            "ratios": paired_ratios(samples, cases),
            "graphs": {path.name[:-len(".dot")]: graph_summary(path)
                       for path in sorted((run_dir / "graphs").glob("*.dot"))},
            "traces": {path.name[:-len(".npz")]: trace_summary(path, jobs)
                       for path in sorted((run_dir / "traces").glob("*.npz"))},
            "layout": layout(record.details),
            "work": {case: work(case, jobs) for case in cases},
            "checks": check_counts(json.loads((run_dir / "validation.json").read_text())),
            "sanitizer": read_results(run_dir)}


def paired_ratios(samples: list[dict], cases) -> dict:
    ratios = {}
    for case in cases:
        for schedule in SCHEDULES:
            ratios[f"stream_over_graph.{schedule}.{case}"] = stats.paired_ratio(
                samples, variant(schedule, case, "stream"), variant(schedule, case, "graph"))
        for schedule in ("separate", "queue"):
            for submission in SUBMISSIONS:
                ratios[f"{schedule}_over_fused.{submission}.{case}"] = stats.paired_ratio(
                    samples, variant(schedule, case, submission), variant("fused", case, submission))
    return ratios


def graph_summary(path: Path) -> dict:
    parsed = dot.parse_dot(path.read_text())
    schedule = VariantId.parse(path.name[:-len(".dot")]).target
    memset = sum(1 for node in parsed["nodes"].values() if any("MEMSET" in line.upper() for line in node["label"]))
    return {**dot.node_counts(parsed, KERNELS[schedule]), "memset": memset}


def load_trace(path: Path) -> tuple[dict, int]:
    """(trace arrays as model.jobs.trace_arrays gives them, workers) of one saved trace."""
    with np.load(path) as arrays:
        trace = {name: arrays[name] for name in ("written",) + model.TRACE_FIELDS}
        return trace, int(arrays["workers"])


def trace_summary(path: Path, jobs: int) -> dict:
    """The schedule's rules, early B count and span of one trace, and its stage durations (ns)."""
    trace, workers = load_trace(path)
    schedule = VariantId.parse(path.name[:-len(".npz")]).target
    result = model.check_trace(trace, jobs, schedule, workers if schedule == "queue" else None)
    result["workers"] = workers
    if result["checks"]["every_record_written"]:
        for stage in ("a", "b"):
            durations = trace[f"{stage}_end_ns"] - trace[f"{stage}_start_ns"]
            result[f"{stage}_stage_ns"] = {"median": float(np.median(durations)), "max": int(durations.max())}
    return result


def layout(details: dict) -> dict:
    occupancy = details["occupancy"]
    active = {n for entry in occupancy.values() for n in entry["with_reservation"].values()}
    without = {n for entry in occupancy.values() for n in entry["without_reservation"].values()}
    return {"jobs": details["jobs"], "sm_count": details["sm_count"], "workers": details["workers"],
            "shared_memory": details["shared_memory"], "occupancy": occupancy,
            "active_ctas_per_sm": sorted(active), "active_without_reservation": sorted(without)}


def work(case: str, jobs: int) -> dict:
    """Stage-A iterations summed over the jobs (each of a job's 256 threads runs them) and heavy jobs."""
    iterations = model.a_iterations(case, jobs)
    return {"a_iterations": int(iterations.sum()), "heavy_jobs": int((iterations == model.A_ITERATIONS["heavy"]).sum()),
            "b_iterations_per_job": model.B_ITERATIONS}


def check_counts(checks: list[dict]) -> dict:
    outputs = [c for c in checks if c.get("what") == "output"]
    traces = [c for c in checks if c["phase"] == "trace"]
    return {"exact_outputs": len(outputs), "exact_outputs_passed": sum(bool(c["passed"]) for c in outputs),
            "traces": len(traces), "traces_passed": sum(bool(c["passed"]) for c in traces), "by_phase": checks_by_phase(checks)}


def headline(summaries: dict) -> dict:
    figures = {}
    for vid, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{historical_name(vid)}.{VariantId.parse(vid).case}"] = \
                measurements["warm_batch"]["event_us"]["median"]
    for vid, trace in summaries["traces"].items():
        if "early_b" in trace:
            figures[f"early_b.{historical_name(vid)}.{VariantId.parse(vid).case}"] = trace["early_b"]
    figures["jobs"] = summaries["layout"]["jobs"]
    active = summaries["layout"]["active_ctas_per_sm"]
    if len(active) != 1:
        raise ValueError(f"the kernels hold different numbers of active CTAs per SM: {active}")
    figures["active_ctas_per_sm"] = active[0]
    figures["exact_checks"] = summaries["checks"]["exact_outputs_passed"]
    figures["trace_checks"] = summaries["checks"]["traces_passed"]
    return figures
