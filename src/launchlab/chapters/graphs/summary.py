"""Chapter 2's summaries and headline, from the run's raw files alone (NumPy only).

Set-up and break-even: a graph costs its set-up steps once. The first replay computes a result like any
later one, so only what it takes beyond a warm replay (one synchronised call, `warm_single` completion) is
charged to set-up; capture, end of capture (where CuPy also instantiates), a separate instantiation where
there was one, and upload are charged whole. The break-even count is that set-up over the saving per
invocation, stream minus graph, paired within rounds.

Findings kept beside the numbers: each stream-over-graph ratio's verdict and their tallies over the two paths
(a ratio whose 95 % interval includes 1 is a tie, never "faster"), who set the pace of each path's stream
batches, how many graphs CuPy instantiated inside end_capture, and the two graphs the page draws node by node
(the row path at its fastest shape, the first tiled case).
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from launchlab.chapters.graphs import CHAPTER, launches_of, stream_twin
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import dot
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl

STEPS = ("capture_us", "end_capture_us", "instantiate_us", "upload_us", "first_replay_us", "instantiate_again_us")
CHARGED_WHOLE = ("capture_us", "end_capture_us", "instantiate_us", "upload_us")  # never instantiate_again_us
# (name, measurement, metric) of the stream-against-graph comparisons
COMPARISONS = (("event", "warm_batch", "event_us"), ("complete", "warm_single", "complete_us"))
PER_NODE_METRICS = (("warm_batch", "event_us"), ("warm_single", "enqueue_us"), ("warm_batch", "enqueue_us"),
                    ("warm_single", "complete_us"))
PACE_TOLERANCE = 0.05   # an event interval within 5 % of the host's enqueue time per call: the host set the pace


def summarize(run_dir: Path, record) -> dict:
    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    timing = stats.summarize(samples)
    declared = CHAPTER.variants(CHAPTER.parameters_of(record))
    twins = {g: str(stream_twin(VariantId.parse(g))) for g in timing if VariantId.parse(g).submission == "graph"}
    paired = [g for g, stream in twins.items() if stream in timing]
    ratios = {g: {name: stats.paired_ratio(samples, twins[g], g, measurement, metric)
                  for name, measurement, metric in COMPARISONS} for g in paired}
    savings = {g: {name: stats.paired_difference(samples, twins[g], g, measurement, metric)
                   for name, measurement, metric in COMPARISONS} for g in paired}
    setups = json.loads((run_dir / "graphs/setup.json").read_text())
    index = json.loads((run_dir / "graphs/index.json").read_text())
    setup = {g: setup_summary(setups[g], timing[g], savings[g]) for g in paired if g in setups}
    paths = [str(v.id) for v in declared if "paths" in v.enters and v.id.submission == "graph" and str(v.id) in ratios]
    return {"timing": timing, "stream_over_graph": ratios, "saving_us": savings, "setup": setup,
            "nodes": {g: node_summary(run_dir, entry) for g, entry in index.items()},
            "per_node": per_node(timing, [str(v.id) for v in declared if "per_node" in v.enters]),
            "verdicts": {g: {name: stats.verdict(ratio) for name, ratio in ratios[g].items()} for g in paired},
            "tallies": {name: stats.tally(ratios[g][name] for g in paths) for name, _, _ in COMPARISONS},
            "pace": {twins[g]: pace(timing[twins[g]]) for g in paths},
            "instantiation": {"in_end_capture": sum(1 for s in setup.values() if s["instantiated_in_end_capture"]),
                              "graphs": len(setup)},
            "drawn": [drawn(run_dir, index[g], g) for g in drawn_graphs(paths, timing) if g in index]}


def pace(stream_timing: dict) -> dict:
    """Who set the pace of a stream batch: the host when the GPU finished each call about as fast as the host
    enqueued it (event interval per call at most PACE_TOLERANCE above the enqueue time per call), else the GPU."""
    event, enqueue = (stream_timing["warm_batch"][metric]["median"] for metric in ("event_us", "enqueue_us"))
    return {"event_over_enqueue": event / enqueue,
            "paced_by": "the host" if event <= (1 + PACE_TOLERANCE) * enqueue else "the GPU"}


def drawn_graphs(paths: list[str], timing: dict) -> list[str]:
    """The graphs drawn node by node: the row path's at its fastest shape (graph event median), the first tiled."""
    event_us = {g: timing[g]["warm_batch"]["event_us"]["median"] for g in paths}
    rows = sorted((g for g in paths if g.startswith("row4.")), key=event_us.get)
    tiled = [g for g in paths if g.startswith("tiled3.")]
    return rows[:1] + tiled[:1]


def drawn(run_dir: Path, entry: dict, graph: str) -> dict:
    """A graph's nodes in dependency order, each named by the last line of its label, and its edge count."""
    parsed = dot.parse_dot(read_dot(run_dir, entry["dot"]))
    return {"graph": graph, "labels": [parsed["nodes"][n]["label"][-1] for n in dot.topological_order(parsed)],
            "nodes": len(parsed["nodes"]), "edges": len(parsed["edges"])}


def setup_summary(repeats: list[dict], graph_timing: dict, saving: dict) -> dict:
    """Each step's quantiles over the repeated captures, the set-up charged to the graph, and break-even."""
    warm_replay_us = graph_timing["warm_single"]["complete_us"]["median"]
    beyond = [max(0.0, r["first_replay_us"] - warm_replay_us) for r in repeats]
    # math.fsum, not sum: Python 3.12 changed sum() of floats, and analyze must agree across hosts
    charged = [math.fsum([*(r.get(step, 0.0) for step in CHARGED_WHOLE), extra]) for r, extra in zip(repeats, beyond)]
    setup_us = stats.quantiles(charged)
    return {"steps": {step: stats.quantiles([r[step] for r in repeats]) for step in STEPS
                      if all(r.get(step) is not None for r in repeats)},
            "repeats": len(repeats),
            "instantiated_in_end_capture": all(r["instantiated_in_end_capture"] for r in repeats),
            "warm_replay_us": warm_replay_us,
            "first_replay_beyond_warm_us": stats.quantiles(beyond),
            "setup_us": setup_us, "setup_us_first_capture": charged[0],
            "break_even_replays": {name: break_even(setup_us["median"], saving[name]) for name in saving}}


def break_even(setup_us: float, saving: dict) -> dict:
    """Replays after which the set-up is paid back: set-up over the median saving per invocation, and over
    the ends of the saving's 95 % interval. None: never (a saving that is not positive)."""
    def replays(per_invocation: float):
        return setup_us / per_invocation if per_invocation > 0 else None

    return {"median": replays(saving["median"]), "low": replays(saving["ci_high"]), "high": replays(saving["ci_low"])}


def read_dot(run_dir: Path, relative: str) -> str:
    data = (Path(run_dir) / relative).read_bytes()
    return (gzip.decompress(data) if relative.endswith(".gz") else data).decode()


def node_summary(run_dir: Path, entry: dict) -> dict:
    """Nodes and edges read from the graph's DOT text; kernel nodes are those naming a kernel it launches."""
    parsed = dot.parse_dot(read_dot(run_dir, entry["dot"]))
    node_counts = dot.node_counts(parsed, entry["kernel_names"])
    return {"kernel": node_counts["kernel"], "other": node_counts["other"], "edges": len(parsed["edges"]),
            "stream_launches": entry["stream_launches"]}


def per_node(timing: dict, series: list[str]) -> dict:
    """The graph-length series (the declared variants that enter it) per launch (stream, native) or per kernel
    node (graph): quantiles over the rounds divided by the launch count (division scales every quantile exactly)."""
    result = {}
    for variant in sorted(series):
        if variant not in timing:
            continue  # skipped: the C++ loop did not build
        measurements, launches = timing[variant], launches_of(VariantId.parse(variant))
        entry = {"launches": launches}
        for measurement, metric in PER_NODE_METRICS:
            summary = measurements[measurement][metric]
            entry[f"{measurement}.{metric}"] = {**{k: summary[k] / launches for k in ("median", "p10", "p90")},
                                                "n": summary["n"]}
        result[variant] = entry
    return result


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        figures[f"event_us.{variant}"] = measurements["warm_batch"]["event_us"]["median"]
    for graph, ratio in summaries["stream_over_graph"].items():
        figures[f"stream_over_graph_event.{graph}"] = ratio["event"]["median"]
        figures[f"stream_over_graph_complete.{graph}"] = ratio["complete"]["median"]
    for graph, nodes in summaries["nodes"].items():
        figures[f"kernel_nodes.{graph}"] = nodes["kernel"]
        figures[f"other_nodes.{graph}"] = nodes["other"]
    for graph, setup in summaries["setup"].items():
        figures[f"setup_us.{graph}"] = setup["setup_us"]["median"]
        replays = setup["break_even_replays"]["event"]["median"]
        if replays is not None:  # absent: the graph never pays its set-up back by this measure
            figures[f"break_even_replays_event.{graph}"] = replays
    for variant, entry in summaries["per_node"].items():
        figures[f"node_event_us.{variant}"] = entry["warm_batch.event_us"]["median"]
    return figures
