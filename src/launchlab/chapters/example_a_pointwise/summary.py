"""Example A's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing        {VariantId: {measurement: {metric: quantiles}}} (stats.summarize)
  ratios        paired within each round, event interval per invocation in warm batches:
                three_over_fused.<submission>.<N> (>1: the fused kernel is faster) and
                stream_over_graph.<path>.<N> (>1: the graph replay is faster), each with its bootstrap interval
  graphs        {graph VariantId: {"kernel", "other", "kernels_in_order"}} from graphs/<VariantId>.dot
  dram          from profiles/ncu_n<N>.{json,csv}: {"size", "error", "paths": {path: {"read_bytes",
                "write_bytes", "kernels", "logical_read_bytes", "logical_written_bytes", "dram_over_logical"}}};
                a path is listed only where ncu gave its counters; None where no profile was asked for
  checks        output checks (exact comparisons with the oracle) and every check by phase, from validation.json
  sanitizer     {tool: outcome} from sanitizer/*.json (gpu/sanitizer.read_results)
  entry_points  the kernels of the timed build, from builds/pointwise/record.json

Headline keys:
  event_us.<path>_<submission>.<N>   median event interval per invocation in a warm batch (µs), e.g.
                                     event_us.three_stream.16777216
  kernel_nodes.three, kernel_nodes.fused
                                     kernel nodes in each path's captured graph (the same at every N)
  dram_over_logical.<path>_stream.<N>  ncu's DRAM bytes read + written by the path's kernels over its logical
                                     bytes (24 N or 8 N), profiled from stream launches (a graph replays the same
                                     kernels on the same buffers); present only where ncu gave counters
  exact_checks                       exact output comparisons with the oracle that passed
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from launchlab.chapters.example_a_pointwise import (CHAPTER, KERNELS, PATHS, SUBMISSIONS, historical_name, logical_bytes,
                                                    parse_sizes, size_of, variant)
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import checks_by_phase, read_jsonl

BUILD_RECORD = "builds/pointwise/record.json"
READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"


def summarize(run_dir: Path, record) -> dict:
    from launchlab.gpu.sanitizer import read_results

    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    return {"timing": stats.summarize(samples),
            "ratios": paired_ratios(samples, CHAPTER.parse_parameters(record.parameters)),
            "graphs": {path.name[:-len(".dot")]: graph_summary(path)
                       for path in sorted((run_dir / "graphs").glob("*.dot"))},
            "dram": dram_summary(run_dir),
            "checks": check_counts(json.loads((run_dir / "validation.json").read_text())),
            "sanitizer": read_results(run_dir),
            "entry_points": sorted(json.loads((run_dir / BUILD_RECORD).read_text())["resources_loaded"])}


def paired_ratios(samples: list[dict], parameters) -> dict:
    """Three kernels over fused per submission, stream over graph per path, at every size."""
    ratios = {}
    for n in parse_sizes(parameters.sizes):
        for submission in SUBMISSIONS:
            ratios[f"three_over_fused.{submission}.{n}"] = stats.paired_ratio(
                samples, variant("three", n, submission), variant("fused", n, submission))
        for path in PATHS:
            ratios[f"stream_over_graph.{path}.{n}"] = stats.paired_ratio(
                samples, variant(path, n, "stream"), variant(path, n, "graph"))
    return ratios


def graph_summary(path: Path) -> dict:
    """Kernel and other nodes of one captured graph, and its kernels in dependency order."""
    parsed = dot.parse_dot(path.read_text())
    kernels = KERNELS[VariantId.parse(path.name[:-len(".dot")]).target]
    in_order = [line for node in dot.topological_order(parsed) for line in parsed["nodes"][node]["label"]
                if line in kernels]
    return {**dot.node_counts(parsed, kernels), "kernels_in_order": in_order}


def dram_summary(run_dir: Path) -> dict | None:
    """ncu's DRAM bytes per path beside its logical bytes, or the error (one profiled size per run)."""
    from launchlab.gpu.ncu import parse_ncu_csv

    metas = sorted((Path(run_dir) / "profiles").glob("ncu_n*.json"))
    if not metas:
        return None
    meta = json.loads(metas[0].read_text())
    n = int(metas[0].stem.removeprefix("ncu_n"))
    rows = parse_ncu_csv(metas[0].with_suffix(".csv").read_text())
    paths = {}
    for path in PATHS:
        picked = [r for r in rows if r["kernel"] in KERNELS[path]]
        if {r["kernel"] for r in picked} != set(KERNELS[path]):
            continue  # ncu gave no counters for some kernel of this path: nothing to state
        read = math.fsum(r["bytes"] for r in picked if r["metric"] == READ)
        written = math.fsum(r["bytes"] for r in picked if r["metric"] == WRITE)
        logical_read, logical_written = logical_bytes(path, n)
        paths[path] = {"read_bytes": read, "write_bytes": written, "kernels": len({r["id"] for r in picked}),
                       "logical_read_bytes": logical_read, "logical_written_bytes": logical_written,
                       "dram_over_logical": (read + written) / (logical_read + logical_written)}
    return {"size": n, "error": meta.get("error"), "returncode": meta.get("returncode"), "paths": paths}


def check_counts(checks: list[dict]) -> dict:
    """Output checks (exact comparisons with the oracle) and every check, by phase: how many, how many passed."""
    outputs = [c for c in checks if c.get("what") == "output"]
    return {"exact_outputs": len(outputs), "exact_outputs_passed": sum(bool(c["passed"]) for c in outputs),
            "all_exact": all(c.get("exact") for c in outputs), "by_phase": checks_by_phase(checks)}


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{historical_name(variant)}.{size_of(variant)}"] = \
                measurements["warm_batch"]["event_us"]["median"]
    for path in PATHS:
        counts = {g["kernel"] for v, g in summaries["graphs"].items() if VariantId.parse(v).target == path}
        if len(counts) > 1:
            raise ValueError(f"the {path} graphs hold different numbers of kernel nodes across sizes: {sorted(counts)}")
        if counts:
            figures[f"kernel_nodes.{path}"] = counts.pop()
    dram = summaries["dram"]
    for path, values in (dram or {}).get("paths", {}).items():
        figures[f"dram_over_logical.{path}_stream.{dram['size']}"] = values["dram_over_logical"]
    figures["exact_checks"] = summaries["checks"]["exact_outputs_passed"]
    return figures
