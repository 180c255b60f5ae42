"""Example A's summaries and headline, from the run's raw files alone (NumPy only).

Summaries:
  timing        {VariantId: {measurement: {metric: quantiles}}} (stats.summarize)
  ratios        paired within each round, event interval per invocation in warm batches:
                <row>_over_fused.<submission>.<N> for every row but the baseline (>1: the fused kernel is faster)
                and stream_over_graph.<row>.<N> (>1: the graph replay is faster), each with its bootstrap interval
  verdicts      {ratio key: "above" | "below" | "tie"}: where the ratio's 95 % interval lies against 1
  tallies       {ratio key without N: {"above", "below", "tie": sizes}}: ties are never counted as faster
  graphs        {graph VariantId: {"kernel", "other", "kernels_in_order"}} from graphs/<VariantId>.dot
  graph_nodes   {row: {"kernel", "other", "orders": the distinct values over the sizes, "as_declared"}}
  dram          from profiles/ncu_n<N>.{json,csv}: {"size", "error", "paths": {row: {"read_bytes",
                "write_bytes", "kernels", "logical_read_bytes", "logical_written_bytes", "dram_over_logical"}},
                "logical": {row: {"read_bytes", "write_bytes"}}}; a row is in "paths" only where ncu gave its
                counters, in "logical" wherever it is profiled; None where no profile was asked for
  checks        output checks (exact comparisons with the oracle) and every check by phase, from validation.json
  sanitizer     {tool: outcome} from sanitizer/*.json (gpu/sanitizer.read_results)
  sanitizer_problem  what the sanitizer's child ran, in words
  entry_points  the kernels of the timed build, from builds/pointwise/record.json
  samples       {"configurations", "rounds"} of the warm batches
  logical_gbps  {VariantId: logical bytes per invocation over the median event interval, GB/s}

Headline keys:
  event_us.<row>_<submission>.<N>    median event interval per invocation in a warm batch (µs), e.g.
                                     event_us.three_stream.16777216
  kernel_nodes.<row>                 kernel nodes in each row's captured graph (the same at every N)
  dram_over_logical.<row>_stream.<N> ncu's DRAM bytes read + written by the row's kernels over its logical
                                     bytes (24 N or 8 N), profiled from stream launches; present only where ncu
                                     gave counters
  exact_checks                       exact output comparisons with the oracle that passed
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from launchlab.chapters.example_a_pointwise import BASELINE, CHAPTER, historical_name, kernels_of, size_case, size_of
from launchlab.chapters.example_a_pointwise.sanitize import PROBLEM
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.runs import checks_by_phase, read_jsonl

BUILD_RECORD = "builds/pointwise/record.json"
READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"


def summarize(run_dir: Path, record) -> dict:
    from launchlab.gpu.sanitizer import read_results

    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    timing = stats.summarize(samples)
    declared = CHAPTER.variants(CHAPTER.parameters_of(record))
    ratios = paired_ratios(samples, declared, timing)
    graphs = {path.name[:-len(".dot")]: graph_summary(path) for path in sorted((run_dir / "graphs").glob("*.dot"))}
    sanitizer = read_results(run_dir)
    return {"timing": timing, "ratios": ratios,
            "verdicts": {key: stats.verdict(ratio) for key, ratio in ratios.items()},
            "tallies": tallies(ratios), "graphs": graphs, "graph_nodes": graph_nodes(graphs, declared),
            "dram": dram_summary(run_dir, declared),
            "checks": check_counts(json.loads(evidence.run_file(run_dir, "validation.json").read_text())),
            "sanitizer": sanitizer, "sanitizer_problem": sanitizer_problem(sanitizer, record, PROBLEM),
            "entry_points": sorted(json.loads((run_dir / BUILD_RECORD).read_text())["resources_loaded"]),
            "samples": warm_batch_samples(timing), "logical_gbps": logical_gbps(declared, timing)}


def paired_ratios(samples: list[dict], declared, timing: dict) -> dict:
    """Every row over the baseline per submission, and stream over graph per row, at every size measured."""
    pairs = {}
    for variant in declared:
        vid = variant.id
        if vid.target != BASELINE:
            pairs[f"{vid.target}_over_{BASELINE}.{vid.submission}.{size_of(vid)}"] = (vid, VariantId(BASELINE, vid.case, vid.submission))
        if vid.submission == "stream":
            pairs[f"stream_over_graph.{vid.target}.{size_of(vid)}"] = (vid, vid.with_submission("graph"))
    return {key: stats.paired_ratio(samples, top, bottom) for key, (top, bottom) in pairs.items()
            if str(top) in timing and str(bottom) in timing}


def logical_gbps(declared, timing: dict) -> dict:
    """{VariantId: logical bytes of one invocation over its median event interval, GB/s}."""
    return {str(v.id): stats.gigabytes_per_second(v.logical_bytes, timing[str(v.id)]["warm_batch"]["event_us"]["median"])
            for v in declared if "warm_batch" in timing.get(str(v.id), {})}


def tallies(ratios: dict) -> dict:
    """Per comparison (the ratio key without its size): at how many sizes it lies above 1, below 1, or ties."""
    families: dict[str, list] = {}
    for key, ratio in ratios.items():
        families.setdefault(key.rsplit(".", 1)[0], []).append(ratio)
    return {family: stats.tally(members) for family, members in families.items()}


def graph_summary(path: Path) -> dict:
    """Kernel and other nodes of one captured graph, and its kernels in dependency order."""
    parsed = dot.parse_dot(path.read_text())
    kernels = kernels_of(VariantId.parse(path.name[:-len(".dot")]).target)
    in_order = [line for node in dot.topological_order(parsed) for line in parsed["nodes"][node]["label"]
                if line in kernels]
    return {**dot.node_counts(parsed, kernels), "kernels_in_order": in_order}


def graph_nodes(graphs: dict, declared) -> dict:
    """Per declared row, what its graphs hold over all sizes, and whether that is exactly its declared kernels."""
    result = {}
    for row in dict.fromkeys(v.row for v in declared):
        held = [g for name, g in graphs.items() if VariantId.parse(name).target == row.name]
        if not held:
            continue
        entry = {"kernel": sorted({g["kernel"] for g in held}), "other": sorted({g["other"] for g in held}),
                 "orders": sorted({" → ".join(g["kernels_in_order"]) for g in held})}
        entry["as_declared"] = (entry["kernel"] == [len(kernels_of(row.name))] and entry["other"] == [0]
                                and entry["orders"] == [" → ".join(kernels_of(row.name))])
        result[row.name] = entry
    return result


def dram_summary(run_dir: Path, declared) -> dict | None:
    """ncu's DRAM bytes per profiled row beside its logical bytes, or the error (one profiled size per run)."""
    from launchlab.gpu.ncu import parse_ncu_csv

    metas = sorted((Path(run_dir) / "profiles").glob("ncu_n*.json"))
    if not metas:
        return None
    meta = json.loads(metas[0].read_text())
    n = int(metas[0].stem.removeprefix("ncu_n"))
    rows = parse_ncu_csv(metas[0].with_suffix(".csv").read_text())
    paths, logical = {}, {}
    for row in dict.fromkeys(v.row for v in declared if "dram" in v.enters):
        logical[row.name] = dict(zip(("read_bytes", "write_bytes"), row.bytes(size_case(n))))
        picked = [r for r in rows if r["kernel"] in kernels_of(row.name)]
        if {r["kernel"] for r in picked} != set(kernels_of(row.name)):
            continue  # ncu gave no counters for some kernel of this row: nothing to state
        read = math.fsum(r["bytes"] for r in picked if r["metric"] == READ)
        written = math.fsum(r["bytes"] for r in picked if r["metric"] == WRITE)
        logical_read, logical_written = row.bytes(size_case(n))
        paths[row.name] = {"read_bytes": read, "write_bytes": written, "kernels": len({r["id"] for r in picked}),
                           "logical_read_bytes": logical_read, "logical_written_bytes": logical_written,
                           "dram_over_logical": (read + written) / (logical_read + logical_written)}
    return {"size": n, "error": meta.get("error"), "returncode": meta.get("returncode"), "paths": paths,
            "logical": logical}


def check_counts(checks: list[dict]) -> dict:
    """Output checks (exact comparisons with the oracle) and every check, by phase: how many, how many passed."""
    outputs = [c for c in checks if c.get("what") == "output"]
    return {"exact_outputs": len(outputs), "exact_outputs_passed": sum(bool(c["passed"]) for c in outputs),
            "all_exact": all(c.get("exact") for c in outputs), "by_phase": checks_by_phase(checks)}


def sanitizer_problem(outcomes: dict, record, child_problem: str) -> str:
    """What the sanitizer's child ran, in its own words; else as the run noted it; else what this code's child
    runs (`child_problem`)."""
    said = [o["problem"] for o in outcomes.values() if o.get("problem")]
    return said[0] if said else record.details.get("sanitizer", {}).get("problem") or child_problem


def warm_batch_samples(timing: dict) -> dict:
    """Configurations and rounds of the warm measurement: every timed variant gives one batch per round."""
    counts = [m["warm_batch"]["event_us"]["n"] for m in timing.values() if "warm_batch" in m]
    return {"configurations": len(counts), "rounds": max(counts, default=0)}


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{historical_name(variant)}.{size_of(variant)}"] = \
                measurements["warm_batch"]["event_us"]["median"]
    for name, entry in summaries["graph_nodes"].items():
        if len(entry["kernel"]) > 1:
            raise ValueError(f"the {name} graphs hold different numbers of kernel nodes across sizes: {entry['kernel']}")
        figures[f"kernel_nodes.{name}"] = entry["kernel"][0]
    dram = summaries["dram"]
    for name, values in (dram or {}).get("paths", {}).items():
        figures[f"dram_over_logical.{name}_stream.{dram['size']}"] = values["dram_over_logical"]
    figures["exact_checks"] = summaries["checks"]["exact_outputs_passed"]
    return figures
