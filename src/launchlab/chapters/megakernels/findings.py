"""Chapter 4's findings from its timing samples and trace summaries (NumPy only; summary.py calls these, pages
only format what they return):

  best_tiled_persistent(_cold)  {case: {"variant", paired ratio}} the persistent design that runs A, B and C tasks in
                     one launch (coop, queue, depend, flow, flow_last) whose graph beats the three-kernel graph by the
                     largest median ratio
  handoff            {VariantId: {"sm": gaps, "worker": gaps, "model_sm", "model_worker"}} (ns quantiles: median, p90,
                     mean, count) of every persistent design's main graph trace, beside its schedule model's replay
  trace_cost         {VariantId: {"traced_us", "untraced_us", "cost_us", "cost_fraction"}} medians of the
                     interleaved replays of the traced and the timed build (traces/trace_cost.json)
  chain(_cold)       {case: {"k<k>": {contender: {"vs_pdl": paired ratio, "vs_graph3": ..., "vs_fused": ...}}}}
                     the chain's contenders against the 3k-kernel graph with PDL, the 3k-kernel graph and the fused
                     row kernel chained k times (>1: the contender is faster)
  megakernel_pays_at_k(_cold)  {case: k or 0} the smallest k where the flow kernel's whole-chain launch beats both
                     the PDL graph and the chained fused row kernel, each ratio's 95% interval above 1 (0: at no k)
  targets            {name: {"value", "target", "met"}} the chapter's benchmark targets (warm), a ratio counted as
                     met only where its interval's lower end reaches the target
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.measure import stats

TILED_PERSISTENT = ("coop", "queue", "depend", "flow", "flow_last")
CHAIN_PDL, CHAIN_GRAPH3, CHAIN_FUSED, CHAIN_MEGAKERNEL = "chain_pdl3", "chain_graph3", "chain_fused", "chain_flow"
# The benchmark targets, warm: (summary path, threshold); a speed-up is met when its interval's low end
# reaches the threshold, a hand-off when its median is at most the threshold (µs).
SPEEDUP_TARGETS = {"best_one_launch.balanced": 2.5, "best_one_launch.ragged": 1.5, "best_one_launch.loguniform": 1.2,
                   "best_one_launch.giant": 1.0, "best_tiled_persistent.balanced": 1.10,
                   "best_tiled_persistent.ragged": 1.10, "chain_k16_vs_pdl.balanced": 1.3,
                   "chain_k16_vs_pdl.ragged": 1.3}
HANDOFF_TARGET_US = 0.5
FLOW_DESIGNS = ("flow", "flow_last")


def best_of(ratios: dict, variants, designs=TILED_PERSISTENT) -> dict:
    """{case: {"variant", ratio}} the largest median among the main graph variants of `designs`."""
    best = {}
    for vid in variants:
        if vid.submission != "graph" or vid.target not in designs or str(vid) not in ratios:
            continue
        if vid.case not in best or ratios[str(vid)]["median"] > best[vid.case]["median"]:
            best[vid.case] = {"variant": str(vid), **ratios[str(vid)]}
    return best


def handoffs(traces: dict, persistent_targets) -> dict:
    """The SM-idle and per-worker gaps of each persistent design's main graph trace and of its model's replay."""
    found = {}
    for variant, summary in traces.items():
        target, _, submission = variant.split(".")
        if target in persistent_targets and submission == "graph" and "idle_ns" in summary:
            model = summary.get("model", {}).get("idle_ns", {})
            found[variant] = {"sm": summary["idle_ns"]["sm"], "worker": summary["idle_ns"]["worker"],
                              "model_sm": model.get("sm"), "model_worker": model.get("worker")}
    return found


def trace_cost(run_dir: Path) -> dict:
    path = Path(run_dir) / "traces" / "trace_cost.json"
    if not path.exists():
        return {}
    costs = {}
    for variant, pair in json.loads(path.read_text()).items():
        traced, untraced = stats.quantiles(pair["traced_us"])["median"], stats.quantiles(pair["untraced_us"])["median"]
        costs[variant] = {"traced_us": traced, "untraced_us": untraced, "cost_us": traced - untraced,
                          "cost_fraction": (traced - untraced) / untraced}
    return costs


def chain_ratios(samples, chain_variants, measurement: str) -> dict:
    """{case: {"k<k>": {contender: {"vs_pdl", "vs_graph3", "vs_fused"}}}} over the measured chain variants."""
    from launchlab.chapters.megakernels import chain_variant, design_of, stages_of

    present = {str(v) for v in chain_variants}
    table: dict = {}
    for vid in chain_variants:
        k, name = stages_of(vid), design_of(vid)[0].name
        row = table.setdefault(vid.case, {}).setdefault(f"k{k}", {})
        ratios = {}
        for key, other in (("vs_pdl", CHAIN_PDL), ("vs_graph3", CHAIN_GRAPH3), ("vs_fused", CHAIN_FUSED)):
            reference = chain_variant(other, vid.case, k)
            if other != name and str(reference) in present:
                ratios[key] = stats.paired_ratio(samples, reference, vid, measurement)
        row[name] = ratios
    return table


def pays_at(chain: dict) -> dict:
    """{case: the smallest k where the megakernel beats both the PDL graph and the chained fused row kernel, each
    interval above 1; 0 where it never does}."""
    result = {}
    for case, by_k in chain.items():
        paying = [int(k[1:]) for k, contenders in by_k.items()
                  if all(contenders.get(CHAIN_MEGAKERNEL, {}).get(key, {}).get("ci_low", 0.0) > 1.0
                         for key in ("vs_pdl", "vs_fused"))]
        result[case] = min(paying) if paying else 0
    return result


def targets(summaries: dict) -> dict:
    """Each benchmark target's value (median), its interval's low end, the threshold and whether it is met."""
    found = {}
    for name, threshold in SPEEDUP_TARGETS.items():
        kind, case = name.rsplit(".", 1)
        if kind == "chain_k16_vs_pdl":
            ratio = summaries.get("chain", {}).get(case, {}).get("k16", {}).get(CHAIN_MEGAKERNEL, {}).get("vs_pdl")
        else:
            ratio = summaries.get(kind, {}).get(case)
        if ratio:
            found[name] = {"value": ratio["median"], "ci_low": ratio["ci_low"], "target": threshold,
                           "met": ratio["ci_low"] >= threshold}
    for variant, gaps in summaries.get("handoff", {}).items():
        if variant.split(".")[0] not in FLOW_DESIGNS:  # the target is the new design's; the others are context
            continue
        median_us = gaps["sm"]["median"] / 1e3
        found[f"handoff.{variant}"] = {"value": median_us, "target": HANDOFF_TARGET_US,
                                       "met": median_us <= HANDOFF_TARGET_US}
    return found
