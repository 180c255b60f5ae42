"""Example B's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing      {VariantId: {measurement: {metric: quantiles}}} (stats.summarize)
  ratios      paired within each round, event interval per invocation in warm batches:
              stream_over_graph.<row>.<case> (>1: the graph replay is faster) and
              <row>_over_fused.<submission>.<case> for every row but the baseline (>1: the fused kernel is faster)
  verdicts    {ratio key: "above" | "below" | "tie"}: where the ratio's 95 % interval lies against 1
  tallies     {ratio key without the case: {"above", "below", "tie": cases}}: ties are never counted as faster
  graphs      {graph VariantId: {"kernel", "other", "memset"}} from graphs/<VariantId>.dot
  traces      {VariantId: model.check_trace of traces/<VariantId>.npz, with stage durations}
  timelines   {VariantId: per job "sm_a", "a_start_ns", "a_end_ns", "sm_b", "b_start_ns", "b_end_ns"} of the
              variants that enter the `timeline` output
  layout      jobs, SMs, queue workers, the shared-memory reservation and occupancy (from run.json details)
  work        {case: stage-A iterations summed over the jobs, and heavy jobs}
  checks      output checks, trace checks and every check by phase, from validation.json
  sanitizer   {tool: outcome} from sanitizer/*.json (gpu/sanitizer.read_results)
  sanitizer_problem  what the sanitizer's child ran, in words
  samples     {"configurations", "rounds"} of the warm batches

Headline keys:
  event_us.<row>_<submission>.<case>       median event interval per invocation in a warm batch (µs), e.g.
                                           event_us.queue_graph.ragged
  early_b.<row>_<submission>.<case>        jobs whose stage B started before some other job's stage A ended,
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

from launchlab.chapters.example_a_pointwise.summary import sanitizer_problem, tallies, warm_batch_samples
from launchlab.chapters.example_b_jobs import BASELINE, CHAPTER, KERNELS, historical_name, model
from launchlab.chapters.example_b_jobs.sanitize import PROBLEM
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.runs import checks_by_phase, read_jsonl

TIMELINE_FIELDS = ("sm_a", "a_start_ns", "a_end_ns", "sm_b", "b_start_ns", "b_end_ns")


def summarize(run_dir: Path, record) -> dict:
    from launchlab.gpu.sanitizer import read_results

    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    timing = stats.summarize(samples)
    parameters = CHAPTER.parameters_of(record)
    declared = CHAPTER.variants(parameters)
    jobs = int(record.details["jobs"])
    ratios = paired_ratios(samples, declared, timing)
    sanitizer = read_results(run_dir)
    traces = {path.name[:-len(".npz")]: path for path in sorted((run_dir / "traces").glob("*.npz"))}
    return {"timing": timing, "ratios": ratios,
            "verdicts": {key: stats.verdict(ratio) for key, ratio in ratios.items()}, "tallies": tallies(ratios),
            "graphs": {path.name[:-len(".dot")]: graph_summary(path)
                       for path in sorted((run_dir / "graphs").glob("*.dot"))},
            "traces": {name: trace_summary(path, jobs) for name, path in traces.items()},
            "timelines": {str(v.id): timeline(traces[str(v.id)]) for v in declared
                          if "timeline" in v.enters and str(v.id) in traces},
            "layout": layout(record.details),
            "work": {case: work(case, jobs) for case in parameters.cases},
            "checks": check_counts(json.loads(evidence.run_file(run_dir, "validation.json").read_text())),
            "sanitizer": sanitizer, "sanitizer_problem": sanitizer_problem(sanitizer, record, PROBLEM),
            "samples": warm_batch_samples(timing)}


def paired_ratios(samples: list[dict], declared, timing: dict) -> dict:
    """Every row over the baseline per submission, and stream over graph per row, on every case measured."""
    pairs = {}
    for variant in declared:
        vid = variant.id
        if vid.target != BASELINE:
            pairs[f"{vid.target}_over_{BASELINE}.{vid.submission}.{vid.case}"] = (vid, VariantId(BASELINE, vid.case, vid.submission))
        if vid.submission == "stream":
            pairs[f"stream_over_graph.{vid.target}.{vid.case}"] = (vid, vid.with_submission("graph"))
    return {key: stats.paired_ratio(samples, top, bottom) for key, (top, bottom) in pairs.items()
            if str(top) in timing and str(bottom) in timing}


def graph_summary(path: Path) -> dict:
    parsed = dot.parse_dot(path.read_text())
    schedule = VariantId.parse(path.name[:-len(".dot")]).target
    memset = sum(1 for node in parsed["nodes"].values() if any("MEMSET" in line.upper() for line in node["label"]))
    return {**dot.node_counts(parsed, KERNELS[schedule]), "memset": memset}


def load_trace(path: Path) -> tuple[dict, int]:
    """(trace arrays as model.trace_arrays gives them, workers) of one saved trace."""
    with np.load(path) as arrays:
        trace = {name: arrays[name] for name in ("written",) + model.TRACE_FIELDS}
        return trace, int(arrays["workers"])


def timeline(path: Path) -> dict:
    """Each job's SM, stage A and stage B (start, end; ns from the first A start), for the figure."""
    trace, _ = load_trace(path)
    return {field: [int(v) for v in trace[field]] for field in TIMELINE_FIELDS}


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
